// What a cluster keeps in its <stream>_checkpoints stream: a head and a
// checkpoint blob read back field for field, and this build writes the
// checked-in bytes exactly (a change that breaks the checkpoints of a
// running cluster fails here); damaged or forged ones are refused. And
// a data directory's checkpoint, copied out and into another directory,
// is what a service there recovers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "ebb/cluster/catalog_snapshot.hpp"
#include "ebb/cluster/shared_checkpoints.hpp"
#include "ebb/core/error.hpp"
#include "ebb/service/log_records.hpp"
#include "ebb/service/namespace_spec.hpp"
#include "ebb/service/service.hpp"
#include "ebb/storage/file_io.hpp"
#include "support/ebb_server.hpp"
#include "support/quiet_logger.hpp"

namespace ebb::cluster {
namespace {

const std::filesystem::path kGolden = std::filesystem::path(EBB_TEST_DATA) / "golden";

SharedCheckpointHead sample_head() {
  SharedCheckpointHead h;
  h.stream_created_ns = 1700000000123456789;
  h.partitions = 8;
  h.partition = 3;
  h.position = 4242;
  h.position_time_ns = 1700000000987654321;
  h.node_id = "node-a";
  h.written_at = 1700000000.5;
  h.bytes = 2500000;
  h.chunks = {17, 19, 23};
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
  bad.partition = 9;
  EXPECT_THROW(decode_head(encode_head(bad)), FormatError);
  bad.partition = 8;  // (the catalog's slot)
  EXPECT_EQ(decode_head(encode_head(bad)).partition, 8u);
  bad = sample_head();
  bad.chunks[1] = 0;
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
  std::string damaged = bytes;
  damaged[40] ^= 1;
  EXPECT_THROW(decode_checkpoint(damaged), FormatError);
}

CatalogSnapshot sample_catalog() {
  CatalogSnapshot c;
  c.as_of = 40;
  c.namespaces.push_back({"tags", R"({"name":"tags","k":7})", 12, 1700000000.25});
  c.namespaces.push_back({"topk:user:1", R"({"name":"topk:user:1"})", 30, 0});
  c.keys.push_back({"key-1", 0xabcdef, 33, 1700000001.5});
  return c;
}

TEST(CatalogSnapshots, ReadAndWriteTheirGoldenBytes) {
  const std::string bytes = golden("catalog-snapshot-v1.bin", encode_catalog(sample_catalog()));
  EXPECT_EQ(encode_catalog(sample_catalog()), bytes) << "the catalog snapshot's bytes changed";
  const CatalogSnapshot back = decode_catalog(bytes);
  EXPECT_EQ(back.as_of, 40u);
  EXPECT_EQ(back.namespaces, sample_catalog().namespaces);
  ASSERT_EQ(back.keys.size(), 1u);
  EXPECT_EQ(back.keys[0].key, "key-1");
  EXPECT_EQ(back.keys[0].body_hash, 0xabcdefu);
  EXPECT_EQ(back.keys[0].lsn, 33u);
  EXPECT_EQ(back.keys[0].received_at, 1700000001.5);
  CatalogSnapshot bad = sample_catalog();
  bad.namespaces[0].revision = 41;  // after the snapshot's position
  EXPECT_THROW(decode_catalog(encode_catalog(bad)), FormatError);
  EXPECT_THROW(decode_catalog(bytes.substr(0, bytes.size() - 1)), FormatError);
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
  const auto log = testing::quiet_logger();
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

  auto refusal = [&](const storage::CheckpointCopy& c) -> std::string {
    try {
      storage::write_checkpoint(to, c);
    } catch (const FormatError& e) {
      return e.what();
    }
    return "written";
  };
  auto outside = *copy;
  outside.states.emplace_back("../escape.state", "x");
  EXPECT_NE(refusal(outside).find("outside its folder"), std::string::npos) << refusal(outside);
  auto extra = *copy;
  extra.states.emplace_back(".hidden", "x");
  EXPECT_NE(refusal(extra).find("does not name"), std::string::npos) << refusal(extra);
  auto twice = *copy;
  twice.states.push_back(twice.states.front());
  EXPECT_NE(refusal(twice).find("twice"), std::string::npos) << refusal(twice);
  auto lacking = *copy;
  lacking.states.clear();
  EXPECT_NE(refusal(lacking).find("which it lacks"), std::string::npos) << refusal(lacking);
  EXPECT_FALSE(std::filesystem::exists(to / "checkpoints"));

  storage::write_checkpoint(to, decode_checkpoint(encode_checkpoint(*copy)));
  service::Service s(external(to), log);
  EXPECT_EQ(s.recover().log_position, 7u);
  EXPECT_EQ(s.count("tags", "x", std::nullopt).item.estimate, 3);
  EXPECT_EQ(s.count("tags", "y", std::nullopt).item.estimate, 1);
  std::filesystem::remove_all(from);
  std::filesystem::remove_all(to);
}

// A catalog taken as of a position and loaded into an empty one holds the
// same namespaces, revisions, clocks and keys: commits checked against
// those revisions count in it alike, a retry of a remembered key is known.
TEST(CatalogSnapshots, ALoadedCatalogHoldsWhatTheTakenOneHeld) {
  const auto log = testing::quiet_logger();
  service::ServiceOptions o;
  o.external_log = true;
  o.history_interval = 0;
  service::Service taken(o, log);
  taken.recover();
  auto create = [&](service::Service& s, std::uint64_t lsn, const std::string& json, service::RecordType type = service::RecordType::create,
                    const std::string& name = "") {
    const std::string config = service::write_namespace_spec(service::parse_namespace_spec(json, {}), true);
    service::AdminRecord r;
    r.type = type;
    r.name = name;
    r.config_json = config;
    ASSERT_TRUE(s.apply_record(lsn, service::encode_admin(r)));
  };
  create(taken, 3, R"({"name":"tags","windows":["all"],"k":5})");
  create(taken, 5, R"({"name":"clocked","windows":["1m"],"clock":"event"})");
  create(taken, 7, R"({"name":"tags","windows":["all"],"k":9})", service::RecordType::patch, "tags");
  create(taken, 8, R"({"name":"gone"})");
  service::AdminRecord remove;
  remove.type = service::RecordType::remove;
  remove.name = "gone";
  ASSERT_TRUE(taken.apply_record(9, service::encode_admin(remove)));
  const service::EventClockCheck clock{"clocked", NAN, 1700000123.5};
  taken.advance_event_clocks(10, std::span(&clock, 1), {{"clocked", 5}});
  taken.remember_key(11, "k1", 77, 1e18, {{"tags", 7}});  // (received far ahead: inside any window)

  const CatalogSnapshot snapshot = decode_catalog(encode_catalog(take_catalog(taken, 11)));
  EXPECT_EQ(snapshot.as_of, 11u);
  ASSERT_EQ(snapshot.namespaces.size(), 2u);
  service::Service loaded(o, log);
  loaded.recover();
  load_catalog(loaded, snapshot);
  EXPECT_EQ(loaded.config_revision("tags"), std::optional<std::uint64_t>(7));
  EXPECT_EQ(loaded.config_revision("clocked"), std::optional<std::uint64_t>(5));
  EXPECT_EQ(loaded.config_revision("gone"), std::nullopt);
  EXPECT_EQ(loaded.spec("tags").config.k, 9u);
  const auto entries = loaded.catalog_entries();
  ASSERT_EQ(entries.size(), 2u);
  for (const auto& e : entries) EXPECT_EQ(e.newest_time, e.spec.config.name == "clocked" ? 1700000123.5 : 0) << e.spec.config.name;
  const auto keys = loaded.idempotency_keys();
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].key, "k1");
  EXPECT_EQ(keys[0].body_hash, 77u);
  EXPECT_EQ(keys[0].lsn, 11u);
}

}  // namespace
}  // namespace ebb::cluster
