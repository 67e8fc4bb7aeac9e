// A service fed from a log kept elsewhere (a cluster partition's replica,
// JetStream its log): its checkpoints name the position they include, a
// new service on the directory resumes there, and the namespaces keep the
// configuration revisions commits are checked against.
#include <gtest/gtest.h>

#include <cmath>

#include "ebb/service/log_records.hpp"
#include "ebb/service/namespace_spec.hpp"
#include "ebb/service/service.hpp"
#include "support/ebb_server.hpp"
#include "support/quiet_logger.hpp"

namespace ebb::service {
namespace {

ServiceOptions external(const std::filesystem::path& dir) {
  ServiceOptions o;
  o.data_dir = dir;
  o.external_log = true;
  o.history_interval = 0;
  return o;
}

std::string create_record(const std::string& request_json) {
  const std::string stored = write_namespace_spec(parse_namespace_spec(request_json, ServiceLimits{}), true);
  AdminRecord r;
  r.type = RecordType::create;
  r.config_json = stored;
  return encode_admin(r);
}

std::string patch_record(const std::string& name, const std::string& request_json) {
  const std::string stored = write_namespace_spec(parse_namespace_spec(request_json, ServiceLimits{}), true);
  AdminRecord r;
  r.type = RecordType::patch;
  r.name = name;
  r.config_json = stored;
  return encode_admin(r);
}

std::string remove_record(const std::string& name) {
  AdminRecord r;
  r.type = RecordType::remove;
  r.name = name;
  return encode_admin(r);
}

// A create or patch record of a Redis key of `type` (as TOPK.RESERVE and
// CMS.INITBYDIM store them), or of a namespace made over HTTP (no type).
std::string redis_record(RecordType type, const std::string& request_json, std::optional<RedisKey::Type> redis) {
  auto spec = parse_namespace_spec(request_json, ServiceLimits{});
  if (redis) spec.redis = RedisKey{.type = *redis, .k = *redis == RedisKey::Type::topk ? 10u : 0u, .width = 64, .depth = 3, .decay = 0.9};
  const std::string stored = write_namespace_spec(spec, true);  // (the record views it)
  AdminRecord r;
  r.type = type;
  if (type == RecordType::patch) r.name = spec.config.name;
  r.config_json = stored;
  return encode_admin(r);
}

using Items = std::initializer_list<std::pair<const char*, double>>;

// One batch over several namespaces (a cluster part holds each one's events).
std::string batch_of(std::initializer_list<std::pair<std::string, Items>> groups, double time = 1700000000) {
  BatchRecord r;
  r.received_at = 1700000000;
  for (const auto& [ns, items] : groups) {
    BatchGroup g;
    g.ns = ns;
    for (const auto& [item, weight] : items) g.events.push_back({item, time, weight});
    r.groups.push_back(std::move(g));
  }
  std::string out;
  encode_batch(out, r);
  return out;
}

std::string batch_record(const std::string& ns, Items items) { return batch_of({{ns, items}}); }

double count(const Service& s, const std::string& item, const std::string& ns = "tags") { return s.count(ns, item, std::nullopt).item.estimate; }

TEST(ExternalLog, ACheckpointResumesAtItsPositionWithTheConfigurationRevisions) {
  const auto dir = testing::make_temp_dir("ebb-external-log");
  const char* config = R"({"name":"tags","windows":["all"],"k":5})";
  {
    Service s(external(dir), testing::quiet_logger());
    EXPECT_EQ(s.recover().log_position, 0u);  // nothing yet: read the log from its start
    ASSERT_TRUE(s.apply_record(3, create_record(config)));
    ASSERT_TRUE(s.apply_record(5, patch_record("tags", R"({"name":"tags","windows":["all"],"k":7})")));
    const Service::ConfigRevisions checked{{"tags", 5}};
    ASSERT_TRUE(s.apply_record(9, batch_record("tags", {{"a", 2}, {"b", 1}}), &checked));
    EXPECT_EQ(s.checkpoint(), 0u);  // no log of its own to name a position: only checkpoint_at() does
    EXPECT_EQ(s.checkpoint_at(9), 1u);
    // Applied after the checkpoint, never in it: a restart replays it from the log.
    ASSERT_TRUE(s.apply_record(11, batch_record("tags", {{"a", 4}}), &checked));
    EXPECT_EQ(count(s, "a"), 6);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "wal"));  // the log is elsewhere
  {
    Service s(external(dir), testing::quiet_logger());
    EXPECT_EQ(s.recover().log_position, 9u);
    EXPECT_EQ(count(s, "a"), 2);
    EXPECT_EQ(count(s, "b"), 1);
    EXPECT_EQ(s.config_revision("tags"), 5u);  // the patch's, not the state's 9
    EXPECT_EQ(s.describe("tags").spec.config.k, 7u);
    // The replay after the position: a commit checked against revision 5 counts...
    const Service::ConfigRevisions checked{{"tags", 5}};
    ASSERT_TRUE(s.apply_record(11, batch_record("tags", {{"a", 4}}), &checked));
    EXPECT_EQ(count(s, "a"), 6);
    // ...one checked against another revision does not.
    const Service::ConfigRevisions stale{{"tags", 3}};
    s.apply_record(12, batch_record("tags", {{"a", 100}}), &stale);
    EXPECT_EQ(count(s, "a"), 6);
    EXPECT_EQ(s.checkpoint_at(12), 1u);
  }
  // A manifest copied by hand under a newer name is refused (its name and
  // its start disagree), not chosen as the newest at every start.
  std::filesystem::copy_file(dir / "checkpoints" / "00000000000000000009.manifest", dir / "checkpoints" / "99999999999999999999.manifest");
  {
    Service s(external(dir), testing::quiet_logger());
    EXPECT_EQ(s.recover().log_position, 12u);
    EXPECT_EQ(count(s, "a"), 6);
  }
  std::filesystem::remove_all(dir);
}

// A cluster's merge record: this partition's part of the destination
// becomes the weighted sum of its parts of the sources, at the record's
// position (a checkpoint after it holds the sum), and only while every
// namespace is at the configuration the writer checked.
TEST(ExternalLog, AMergeSumsThisPartsCountsAtItsPosition) {
  const auto dir = testing::make_temp_dir("ebb-external-merge");
  {
    Service s(external(dir), testing::quiet_logger());
    (void)s.recover();
    ASSERT_TRUE(s.apply_record(1, create_record(R"({"name":"src","windows":["all"],"k":5})")));
    ASSERT_TRUE(s.apply_record(2, create_record(R"({"name":"dst","windows":["all"],"k":5})")));
    const Service::ConfigRevisions both{{"dst", 2}, {"src", 1}};
    ASSERT_TRUE(s.apply_record(3, batch_record("src", {{"a", 2}, {"b", 1}}), &both));
    ASSERT_TRUE(s.apply_record(4, batch_record("dst", {{"a", 1}, {"c", 4}}), &both));
    const std::vector<std::string> sources{"src", "dst"};
    const std::vector<double> weights{2, 1};
    // Checked against another configuration of src: nothing merged.
    EXPECT_FALSE(s.apply_merge(5, "dst", sources, weights, {{"dst", 2}, {"src", 7}}));
    EXPECT_EQ(count(s, "a", "dst"), 1);
    // One that does not name every namespace's configuration: not a record ebb wrote.
    EXPECT_FALSE(s.apply_merge(5, "dst", sources, weights, {{"dst", 2}}));
    EXPECT_FALSE(s.apply_merge(5, "dst", sources, weights, {}));
    EXPECT_EQ(count(s, "a", "dst"), 1);
    // 2 x src + dst.
    EXPECT_TRUE(s.apply_merge(6, "dst", sources, weights, both));
    EXPECT_EQ(count(s, "a", "dst"), 5);
    EXPECT_EQ(count(s, "b", "dst"), 2);
    EXPECT_EQ(count(s, "c", "dst"), 4);
    EXPECT_EQ(count(s, "a", "src"), 2);  // the sources stay as they were
    EXPECT_EQ(s.describe("dst").stats.weight, 11);
    // Counts that came after the writer's check and pass 2^53 here: refused
    // in this partition, which keeps its part as it was.
    EXPECT_FALSE(s.apply_merge(7, "dst", std::vector<std::string>{"src"}, std::vector<double>{4e15}, both));
    EXPECT_EQ(count(s, "a", "dst"), 5);
    EXPECT_EQ(s.checkpoint_at(7), 2u);
  }
  {
    Service s(external(dir), testing::quiet_logger());
    EXPECT_EQ(s.recover().log_position, 7u);
    EXPECT_EQ(count(s, "a", "dst"), 5);
    EXPECT_EQ(count(s, "c", "dst"), 4);
  }
  std::filesystem::remove_all(dir);
}

// A cluster batch stays all or nothing across namespaces: when one of them
// changed since the batch was checked, no group of it counts, in any
// namespace; an event clock moves only with a batch that counts.
TEST(ExternalLog, ABatchWithAChangedNamespaceCountsInNone) {
  const auto dir = testing::make_temp_dir("ebb-external-all-or-nothing");
  Service s(external(dir), testing::quiet_logger());
  (void)s.recover();
  ASSERT_TRUE(s.apply_record(1, create_record(R"({"name":"tags","windows":["all"],"k":5})")));
  ASSERT_TRUE(s.apply_record(2, create_record(R"({"name":"ev","windows":["all"],"k":5,"clock":"event"})")));
  ASSERT_TRUE(s.apply_record(3, patch_record("ev", R"({"name":"ev","windows":["all"],"k":6,"clock":"event"})")));
  const Service::ConfigRevisions stale{{"ev", 2}, {"tags", 1}};  // ev was patched at 3 since
  const std::string batch = batch_of({{"tags", {{"a", 2}}}, {"ev", {{"x", 1}}}});
  s.apply_record(4, batch, &stale);
  const std::vector<EventClockCheck> clocks{{"ev", std::nan(""), 1700000000}};
  s.advance_event_clocks(4, clocks, stale);
  EXPECT_EQ(count(s, "a"), 0);
  EXPECT_EQ(count(s, "x", "ev"), 0);
  EXPECT_EQ(s.describe("ev").stats.newest_time, 0);  // the clock did not move either
  // Checked against the configurations that hold: both count, the clock moves.
  const Service::ConfigRevisions fresh{{"ev", 3}, {"tags", 1}};
  ASSERT_TRUE(s.apply_record(5, batch, &fresh, clocks));
  s.advance_event_clocks(5, clocks, fresh);
  EXPECT_EQ(count(s, "a"), 2);
  EXPECT_EQ(count(s, "x", "ev"), 1);
  EXPECT_EQ(s.describe("ev").stats.newest_time, 1700000000);
  std::filesystem::remove_all(dir);
}

// A partition's history outlives a restart for a namespace created after
// its checkpoint: the replay makes it again before history is swept (a
// sweep at recovery would have dropped it), and a deleted namespace's
// history goes with it.
TEST(ExternalLog, HistoryOfANamespaceCreatedAfterTheCheckpointSurvivesARestart) {
  const auto dir = testing::make_temp_dir("ebb-external-history");
  auto options = external(dir);
  options.history_interval = 3600;  // (its thread never snapshots within the test: the test does)
  auto replay = [](Service& s) {
    ASSERT_TRUE(s.apply_record(2, create_record(R"({"name":"tags","windows":["all"],"k":5})")));
    ASSERT_TRUE(s.apply_record(3, batch_record("tags", {{"a", 2}}), nullptr));
  };
  {
    Service s(options, testing::quiet_logger());
    (void)s.recover();
    ASSERT_TRUE(s.apply_record(1, create_record(R"({"name":"early","windows":["all"],"k":5})")));
    EXPECT_EQ(s.checkpoint_at(1), 1u);
    replay(s);
    s.start_history();
    EXPECT_EQ(s.snapshot_history(), 2u);  // a partition snapshots "early" too, holding none of its items
    EXPECT_EQ(s.history("tags", "a", std::nullopt, 0, 2e9, 100).points.size(), 1u);
  }
  {
    Service s(options, testing::quiet_logger());
    EXPECT_EQ(s.recover().log_position, 1u);
    replay(s);
    s.start_history();  // caught up: only now is history swept
    const auto points = s.history("tags", "a", std::nullopt, 0, 2e9, 100).points;
    ASSERT_EQ(points.size(), 1u);
    EXPECT_EQ(points[0].estimate, 2);
    // Deleted and made again, four times over: the old namespace's history
    // is gone (the history thread drops it; masked until then), and one
    // pass of that thread is done with every delete.
    for (std::uint64_t lsn = 4; lsn < 12; lsn += 2) {
      ASSERT_TRUE(s.apply_record(lsn, remove_record("tags")));
      ASSERT_TRUE(s.apply_record(lsn + 1, create_record(R"({"name":"tags","windows":["all"],"k":5})")));
    }
    EXPECT_TRUE(s.history("tags", "a", std::nullopt, 0, 2e9, 100).points.empty());
    EXPECT_EQ(s.snapshot_history(), 2u);  // (the pass drops the old rows first)
    const auto fresh = s.history("tags", "a", std::nullopt, 0, 2e9, 100).points;
    ASSERT_EQ(fresh.size(), 1u);
    EXPECT_FALSE(fresh[0].rank.has_value());  // the new namespace has not counted a
  }
  std::filesystem::remove_all(dir);
}

TEST(ExternalLog, TwoServicesCannotShareADirectory) {
  const auto dir = testing::make_temp_dir("ebb-external-lock");
  Service a(external(dir), testing::quiet_logger());
  (void)a.recover();
  Service b(external(dir), testing::quiet_logger());
  try {
    (void)b.recover();
    ADD_FAILURE() << "a second service recovered from a directory in use";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is in use by another ebb server"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// A cluster's patch of a key's earlier life can reach the log after another
// node deleted the key and made it again as the other type (or over HTTP):
// applied, it keeps the new key's type, which every node's replay reads the
// same (before, the record's `redis` replaced it, and the key answered
// neither type's commands consistently).
TEST(ExternalLog, APatchKeepsTheRedisTypeOfTheNamespaceItLandsOn) {
  const auto dir = testing::make_temp_dir("ebb-external-redis-patch");
  auto keys = [](const engine::TopKAnswer& a) { return std::to_string(a.items.size()); };
  auto expect_type = [&](const Service& s, const std::string& name, std::optional<RedisKey::Type> type) {
    const auto spec = s.describe(name).spec;
    ASSERT_EQ(spec.redis.has_value(), type.has_value()) << name;
    const auto other = type == RedisKey::Type::cms ? RedisKey::Type::topk : RedisKey::Type::cms;
    if (type) {
      EXPECT_EQ(spec.redis->type, *type) << name;
      EXPECT_THROW((void)s.top_rendered(name, std::nullopt, std::nullopt, "n", keys, other), ServiceError) << name;
    } else {
      EXPECT_EQ(*s.top_rendered(name, std::nullopt, std::nullopt, "n", keys, other), "0") << name;
    }
  };
  {
    Service s(external(dir), testing::quiet_logger());
    (void)s.recover();
    ASSERT_TRUE(s.apply_record(1, redis_record(RecordType::create, R"({"name":"x","k":10})", RedisKey::Type::topk)));
    ASSERT_TRUE(s.apply_record(2, remove_record("x")));
    ASSERT_TRUE(s.apply_record(3, redis_record(RecordType::create, R"({"name":"x","k":10})", RedisKey::Type::cms)));
    ASSERT_TRUE(s.apply_record(4, redis_record(RecordType::patch, R"({"name":"x","k":5})", RedisKey::Type::topk)));
    ASSERT_TRUE(s.apply_record(5, redis_record(RecordType::create, R"({"name":"h","k":10})", std::nullopt)));
    ASSERT_TRUE(s.apply_record(6, redis_record(RecordType::patch, R"({"name":"h","k":5})", RedisKey::Type::topk)));
    EXPECT_EQ(s.describe("x").spec.config.k, 5u);  // the patch's configuration is taken...
    expect_type(s, "x", RedisKey::Type::cms);       // ...not its type
    expect_type(s, "h", std::nullopt);
    EXPECT_EQ(s.checkpoint_at(6), 2u);
  }
  {
    Service s(external(dir), testing::quiet_logger());
    EXPECT_EQ(s.recover().log_position, 6u);
    expect_type(s, "x", RedisKey::Type::cms);
    expect_type(s, "h", std::nullopt);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb::service
