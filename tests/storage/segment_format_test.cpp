// The log segment's bytes (storage/segment_format.hpp): what recovery reads
// back, and where it stops.
#include "ebb/storage/segment_format.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ebb::storage {
namespace {

std::string segment(std::uint64_t first, const std::vector<std::string>& payloads) {
  std::string s;
  append_segment_header(s, first);
  for (std::size_t i = 0; i < payloads.size(); ++i) append_segment_record(s, first + i, payloads[i]);
  return s;
}

struct Scanned {
  SegmentScan scan;
  std::vector<std::pair<std::uint64_t, std::string>> records;
};

Scanned scan(std::string_view data, std::uint64_t first) {
  Scanned out;
  out.scan = scan_segment(data, first, [&](std::uint64_t lsn, std::string_view p) { out.records.emplace_back(lsn, std::string(p)); });
  return out;
}

TEST(SegmentFormat, ReadsBackWhatWasWritten) {
  const std::string s = segment(7, {"one", "", "three"});
  EXPECT_EQ(s.size(), 16u + 3 * 20 + 3 + 0 + 5);
  EXPECT_EQ(s.substr(0, 8), "EBBWAL01");
  const auto r = scan(s, 7);
  EXPECT_EQ(r.scan.valid_bytes, s.size());
  EXPECT_EQ(r.scan.next_lsn, 10u);
  EXPECT_EQ(r.scan.error, "");
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0], std::make_pair(std::uint64_t{7}, std::string("one")));
  EXPECT_EQ(r.records[1], std::make_pair(std::uint64_t{8}, std::string()));
  EXPECT_EQ(r.records[2], std::make_pair(std::uint64_t{9}, std::string("three")));
}

TEST(SegmentFormat, StopsAtTheFirstInvalidRecordAndSaysWhy) {
  const std::string s = segment(1, {"aaaa", "bbbb"});
  const std::size_t second = 16 + 20 + 4;

  auto r = scan(s.substr(0, s.size() - 1), 1);
  EXPECT_EQ(r.scan.valid_bytes, second);
  EXPECT_EQ(r.scan.next_lsn, 2u);
  EXPECT_EQ(r.scan.error, "torn record (length past the end of the segment)");
  EXPECT_EQ(r.records.size(), 1u);

  r = scan(s.substr(0, second + 19), 1);
  EXPECT_EQ(r.scan.valid_bytes, second);
  EXPECT_EQ(r.scan.error, "torn record header");

  std::string flipped = s;
  flipped.back() ^= 1;
  r = scan(flipped, 1);
  EXPECT_EQ(r.scan.valid_bytes, second);
  EXPECT_EQ(r.scan.error, "checksum mismatch in record 2");

  r = scan(segment(1, {"aaaa"}) + segment(5, {"x"}).substr(16), 1);
  EXPECT_EQ(r.scan.valid_bytes, second);
  EXPECT_EQ(r.scan.error, "record number 5 where 2 was expected");

  r = scan(s, 2);  // the header names another first record
  EXPECT_EQ(r.scan.valid_bytes, 0u);
  EXPECT_EQ(r.scan.next_lsn, 2u);
  EXPECT_EQ(r.scan.error, "bad segment header");
  EXPECT_TRUE(r.records.empty());

  r = scan(s.substr(0, 15), 1);
  EXPECT_EQ(r.scan.valid_bytes, 0u);
  EXPECT_EQ(r.scan.error, "torn segment header");
  r = scan("", 1);
  EXPECT_EQ(r.scan.error, "torn segment header");
}

}  // namespace
}  // namespace ebb::storage
