// What a cluster keeps in its <stream>_checkpoints stream: a head and a
// checkpoint blob read back field for field, and this build writes the
// checked-in bytes exactly (a change that breaks the checkpoints of a
// running cluster fails here); damaged or forged ones are refused. And
// a data directory's checkpoint, copied out and into another directory,
// is what a service there recovers.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "ebb/cluster/shared_checkpoints.hpp"
#include "ebb/core/error.hpp"
#include "ebb/service/log_records.hpp"
#include "ebb/service/namespace_spec.hpp"
#include "ebb/service/service.hpp"
#include "ebb/storage/file_io.hpp"
#include "support/ebb_server.hpp"

namespace ebb::cluster {
namespace {

const std::filesystem::path kGolden = std::filesystem::path(EBB_TEST_DATA) / "golden";

SharedCheckpointHead sample_head() {
  SharedCheckpointHead h;
  h.stream_created_ns = 1700000000123456789;
  h.partitions = 8;
  h.partition = 3;
  h.position = 4242;
  h.node_id = "node-a";
  h.written_at = 1700000000.5;
  h.bytes = 2500000;
  h.chunks = {17, 19, 23};
  h.previous = 11;
  return h;
}

storage::CheckpointCopy sample_copy() {
  storage::Manifest m;
  m.start_lsn = 12;
  m.written_at = 1700000000.5;
  m.namespaces.push_back({"tags", R"({"name":"tags","k":7})", 11, "tags.11.state", 5});
  storage::CheckpointCopy c;
  c.start_lsn = 12;
  c.manifest = m.serialize();
  c.states = {{"tags.11.state", std::string("state\0bytes", 11)}};
  return c;
}

// EBB_UPDATE_GOLDEN=1 writes the files anew: only with a new version, the
// old files kept as that version's.
std::string golden(const std::string& name, const std::string& bytes) {
  if (std::getenv("EBB_UPDATE_GOLDEN")) storage::write_file_atomically(kGolden / name, bytes);
  return storage::read_whole_file(kGolden / name);
}

TEST(SharedCheckpoints, AHeadReadsAndWritesItsGoldenBytes) {
  const std::string bytes = golden("shared-checkpoint-head-v1.bin", encode_head(sample_head()));
  EXPECT_EQ(encode_head(sample_head()), bytes) << "the head's bytes changed: a running cluster's checkpoints would not load";
  EXPECT_EQ(decode_head(bytes), sample_head());
  // Damaged, truncated, another kind, a forged chunk count, a partition past the count.
  std::string damaged = bytes;
  damaged[30] ^= 1;
  EXPECT_THROW(decode_head(damaged), FormatError);
  EXPECT_THROW(decode_head(bytes.substr(0, bytes.size() - 1)), FormatError);
  EXPECT_THROW(decode_head(encode_checkpoint(sample_copy())), FormatError);
  SharedCheckpointHead bad = sample_head();
  bad.partition = 8;
  EXPECT_THROW(decode_head(encode_head(bad)), FormatError);
  bad = sample_head();
  bad.chunks.assign((1 << 16) + 1, 5);
  EXPECT_THROW(decode_head(encode_head(bad)), FormatError);
}

TEST(SharedCheckpoints, ACheckpointReadsAndWritesItsGoldenBytes) {
  const std::string bytes = golden("shared-checkpoint-v1.bin", encode_checkpoint(sample_copy()));
  EXPECT_EQ(encode_checkpoint(sample_copy()), bytes) << "the checkpoint blob's bytes changed";
  const auto back = decode_checkpoint(bytes);
  EXPECT_EQ(back.start_lsn, 12u);
  EXPECT_EQ(back.manifest, sample_copy().manifest);
  EXPECT_EQ(back.states, sample_copy().states);
  EXPECT_THROW(decode_checkpoint(bytes.substr(0, bytes.size() - 9)), FormatError);
}

service::ServiceOptions external(const std::filesystem::path& dir) {
  service::ServiceOptions o;
  o.data_dir = dir;
  o.external_log = true;
  o.history_interval = 0;
  return o;
}

// A data directory's newest checkpoint, copied into an empty one, is what
// a service there recovers; copies that name files outside their folder
// or lack a state they name are refused before anything is written.
TEST(SharedCheckpoints, ACopiedCheckpointRecoversTheSameState) {
  const auto from = testing::make_temp_dir("ebb-ckpt-from"), to = testing::make_temp_dir("ebb-ckpt-to");
  const auto log = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  {
    service::Service s(external(from), log);
    s.recover();
    service::AdminRecord create;
    const std::string config = service::write_namespace_spec(service::parse_namespace_spec(R"({"name":"tags","k":5})", {}), true);
    create.config_json = config;
    ASSERT_TRUE(s.apply_record(3, service::encode_admin(create)));
    EXPECT_EQ(storage::read_newest_checkpoint(from), std::nullopt);  // (none written yet)
    service::BatchRecord batch;
    batch.received_at = 1700000000;
    batch.groups.push_back({"tags", {{"x", 1700000000, 3}, {"y", 1700000000, 1}}});
    std::string record;
    service::encode_batch(record, batch);
    ASSERT_TRUE(s.apply_record(7, record));
    s.checkpoint_at(7);
  }
  const auto copy = storage::read_newest_checkpoint(from);
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->start_lsn, 7u);
  ASSERT_FALSE(copy->states.empty());

  auto outside = *copy;
  outside.states.front().first = "../escape.state";
  EXPECT_THROW(storage::write_checkpoint(to, outside), FormatError);
  auto lacking = *copy;
  lacking.states.clear();
  EXPECT_THROW(storage::write_checkpoint(to, lacking), FormatError);
  EXPECT_FALSE(std::filesystem::exists(to / "checkpoints"));

  storage::write_checkpoint(to, decode_checkpoint(encode_checkpoint(*copy)));
  service::Service s(external(to), log);
  EXPECT_EQ(s.recover().log_position, 7u);
  EXPECT_EQ(s.count("tags", "x", std::nullopt).item.estimate, 3);
  EXPECT_EQ(s.count("tags", "y", std::nullopt).item.estimate, 1);
  std::filesystem::remove_all(from);
  std::filesystem::remove_all(to);
}

}  // namespace
}  // namespace ebb::cluster
