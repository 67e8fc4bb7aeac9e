// storage/segment_log.hpp: records appended across segment rolls come back
// in order, whole, under every fsync policy. A roll creates the next segment
// without syncing it on the appending thread; what makes it durable (the
// sync thread's pass, sync()) runs before a record in it is answered as
// durable, and --fsync off's background writeback leaves the bytes as they
// were written.
#include "ebb/storage/segment_log.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ebb::storage {
namespace {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("ebb_segment_log_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// Record i's payload: its number and a filler of a length that varies, so
// records straddle the segment size differently.
std::string payload(int i) { return "record " + std::to_string(i) + " " + std::string(40 + (i * 37) % 200, static_cast<char>('a' + i % 26)); }

std::vector<std::pair<std::uint64_t, std::string>> replay_all(const std::filesystem::path& dir, SegmentLogOptions options) {
  std::vector<std::pair<std::uint64_t, std::string>> seen;
  SegmentLog log(dir, options, 0, 1, [&](std::uint64_t lsn, std::string_view p) { seen.emplace_back(lsn, std::string(p)); });
  return seen;
}

std::size_t segments_in(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".log";
  return n;
}

class SegmentLogRolls : public ::testing::TestWithParam<FsyncPolicy> {};

TEST_P(SegmentLogRolls, EveryRecordComesBackInOrder) {
  TempDir dir(fsync_policy_name(GetParam()));
  SegmentLogOptions options;
  options.policy = GetParam();
  options.fsync_interval = 0.01;
  options.segment_bytes = 4096;  // a roll every 20 or so records
  constexpr int kRecords = 600;
  {
    SegmentLog log(dir.path, options, 0, 1, [](std::uint64_t, std::string_view) { ADD_FAILURE() << "an empty log replayed a record"; });
    for (int i = 1; i <= kRecords; ++i) {
      ASSERT_EQ(log.append(payload(i)), static_cast<std::uint64_t>(i));
      // Every 50th record waits until it is durable: under --fsync batch
      // that is the sync thread's pass over a segment a roll just created.
      if (i % 50 == 0) log.wait_durable(static_cast<std::uint64_t>(i));
      // Off: the background writeback runs between appends now and then.
      if (i % 150 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    EXPECT_EQ(log.last_lsn(), static_cast<std::uint64_t>(kRecords));
    log.sync();
    EXPECT_EQ(log.failure(), "");
  }
  EXPECT_GT(segments_in(dir.path), 20u);
  const auto seen = replay_all(dir.path, options);
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kRecords));
  for (int i = 1; i <= kRecords; ++i) {
    EXPECT_EQ(seen[i - 1].first, static_cast<std::uint64_t>(i));
    EXPECT_EQ(seen[i - 1].second, payload(i)) << "record " << i;
  }
  // A reopened log goes on numbering after the last record, and a roll
  // after reopening keeps every record too.
  {
    SegmentLog log(dir.path, options, static_cast<std::uint64_t>(kRecords), 1, [](std::uint64_t, std::string_view) {});
    for (int i = kRecords + 1; i <= kRecords + 40; ++i) ASSERT_EQ(log.append(payload(i)), static_cast<std::uint64_t>(i));
    log.wait_durable(kRecords + 40);
  }
  const auto again = replay_all(dir.path, options);
  ASSERT_EQ(again.size(), static_cast<std::size_t>(kRecords + 40));
  EXPECT_EQ(again.back().second, payload(kRecords + 40));
}

// A record in a segment a roll created is answered as durable only after a
// directory fsync (its name); --fsync off makes one only when asked to sync.
TEST(SegmentLog, ARollsNewNameIsSyncedBeforeItsRecordsAreDurable) {
  for (const FsyncPolicy policy : {FsyncPolicy::batch, FsyncPolicy::off}) {
    TempDir dir(std::string("names_") + fsync_policy_name(policy));
    SegmentLogOptions options;
    options.policy = policy;
    options.segment_bytes = 4096;
    SegmentLog log(dir.path, options, 0, 1, [](std::uint64_t, std::string_view) {});
    int n = 0;
    while (segments_in(dir.path) < 3) log.append(payload(++n));
    EXPECT_EQ(log.stats().directory_syncs, 0u);  // the rolls themselves sync nothing
    log.wait_durable(static_cast<std::uint64_t>(n));
    EXPECT_EQ(log.stats().directory_syncs, policy == FsyncPolicy::batch ? 1u : 0u) << fsync_policy_name(policy);
    log.sync();
    EXPECT_EQ(log.stats().directory_syncs, 1u) << fsync_policy_name(policy);  // batch: its pass already covered both names
    log.append(payload(++n));  // no roll: no new name to sync
    log.sync();
    EXPECT_EQ(log.stats().directory_syncs, 1u) << fsync_policy_name(policy);
  }
}

// After a power loss a roll's new segment may be left with a torn header.
// When the segment before it lies wholly before the checkpoint's start
// (skipped, not read), recovery opens a new segment after the cut instead of
// appending to that unread one: appends need the true size of their file to
// cut a failed write back.
TEST(SegmentLog, ATornNewSegmentAfterAnUnreadOneGetsAFreshSegment) {
  TempDir dir("torn_new");
  SegmentLogOptions options;
  options.policy = FsyncPolicy::batch;
  options.segment_bytes = 4096;
  int n = 0;
  {
    SegmentLog log(dir.path, options, 0, 1, [](std::uint64_t, std::string_view) {});
    while (segments_in(dir.path) < 4) log.append(payload(++n));
    log.sync();
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 4u);
  const auto newest = files.back(), before = files[files.size() - 2];
  const std::uint64_t first_of_newest = std::stoull(newest.filename().string());
  // The newest segment: its header torn (8 of 16 bytes), its records gone.
  std::filesystem::resize_file(newest, 8);
  const auto before_size = std::filesystem::file_size(before);
  {
    // The checkpoint holds every record before the newest segment.
    SegmentLog log(dir.path, options, first_of_newest - 1, 1, [](std::uint64_t, std::string_view) {});
    EXPECT_EQ(log.append("after the cut"), first_of_newest);
    log.wait_durable(first_of_newest);
  }
  EXPECT_EQ(std::filesystem::file_size(before), before_size);  // not appended to
  ASSERT_TRUE(std::filesystem::exists(newest));                // made again, from the record after the cut
  std::vector<std::pair<std::uint64_t, std::string>> seen;
  {
    SegmentLog log(dir.path, options, 0, 1, [&](std::uint64_t lsn, std::string_view p) { seen.emplace_back(lsn, std::string(p)); });
  }
  ASSERT_EQ(seen.size(), first_of_newest);
  for (std::uint64_t i = 1; i < first_of_newest; ++i) EXPECT_EQ(seen[i - 1].second, payload(static_cast<int>(i)));
  EXPECT_EQ(seen.back(), std::make_pair(first_of_newest, std::string("after the cut")));
}

INSTANTIATE_TEST_SUITE_P(Policies, SegmentLogRolls, ::testing::Values(FsyncPolicy::batch, FsyncPolicy::interval, FsyncPolicy::off),
                         [](const auto& info) { return std::string(fsync_policy_name(info.param)); });

}  // namespace
}  // namespace ebb::storage
