// A service fed from a log kept elsewhere (a cluster partition's replica,
// JetStream its log): its checkpoints name the position they include, a
// new service on the directory resumes there, and the namespaces keep the
// configuration revisions commits are checked against.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "ebb/service/log_records.hpp"
#include "ebb/service/namespace_spec.hpp"
#include "ebb/service/service.hpp"
#include "support/ebb_server.hpp"

namespace ebb::service {
namespace {

std::shared_ptr<spdlog::logger> quiet() { return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>()); }

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

std::string batch_record(const std::string& ns, std::initializer_list<std::pair<const char*, double>> items) {
  BatchRecord r;
  r.received_at = 1700000000;
  BatchGroup g;
  g.ns = ns;
  for (const auto& [item, weight] : items) g.events.push_back({item, 1700000000, weight});
  r.groups.push_back(std::move(g));
  std::string out;
  encode_batch(out, r);
  return out;
}

double count(const Service& s, const std::string& item) { return s.count("tags", item, std::nullopt).item.estimate; }

TEST(ExternalLog, ACheckpointResumesAtItsPositionWithTheConfigurationRevisions) {
  const auto dir = testing::make_temp_dir("ebb-external-log");
  const char* config = R"({"name":"tags","windows":["all"],"k":5})";
  {
    Service s(external(dir), quiet());
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
    Service s(external(dir), quiet());
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
    Service s(external(dir), quiet());
    EXPECT_EQ(s.recover().log_position, 12u);
    EXPECT_EQ(count(s, "a"), 6);
  }
  std::filesystem::remove_all(dir);
}

TEST(ExternalLog, TwoServicesCannotShareADirectory) {
  const auto dir = testing::make_temp_dir("ebb-external-lock");
  Service a(external(dir), quiet());
  (void)a.recover();
  Service b(external(dir), quiet());
  try {
    (void)b.recover();
    ADD_FAILURE() << "a second service recovered from a directory in use";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is in use by another ebb server"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb::service
