// A RESP write names the type of key it is for, and the service checks it
// under the namespace's lock with the rest of the batch: a key deleted and
// made again as the other type after the command's own check (DEL, then
// CMS.INITBYDIM, from another connection) is not counted into. CMS.MERGE
// names its type the same way, checked for every key it locks.
#include <gtest/gtest.h>

#include "ebb/core/clock.hpp"
#include "ebb/service/service.hpp"
#include "support/ebb_server.hpp"
#include "support/quiet_logger.hpp"

namespace ebb::service {
namespace {

TEST(ServiceRedisType, ABatchForTheOtherTypeOfKeyIsRefusedAndCountsNothing) {
  const auto dir = testing::make_temp_dir("ebb-service-redis-type");
  {
    ServiceOptions o;
    o.data_dir = dir;
    Service service(o, testing::quiet_logger());
    (void)service.recover();
    auto cms = parse_namespace_spec(R"({"name":"c","k":10})", service.limits());
    cms.redis = RedisKey{.type = RedisKey::Type::cms, .width = 64, .depth = 3};
    service.create(std::move(cms));
    service.create(parse_namespace_spec(R"({"name":"http","k":10})", service.limits()));  // made over HTTP: either type

    const double now = wall_clock_now();
    const std::vector<engine::Event> events = {{"a", now, 1}, {"b", now, 2}};
    auto batch = [&](std::string_view ns, std::optional<RedisKey::Type> type) {
      IngestRequest req;
      req.events = events;
      req.namespaces = std::span(&ns, 1);
      req.received_at = now;
      req.redis_type = type;
      return service.ingest(req);
    };
    try {
      batch("c", RedisKey::Type::topk);
      ADD_FAILURE() << "a TOPK write was counted into a CMS key";
    } catch (const ServiceError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::conflict);
      EXPECT_EQ(e.code(), "wrong_type");
      EXPECT_STREQ(e.what(), "namespace 'c' is a Redis key of another type");
    }
    EXPECT_EQ(service.describe("c").stats.events, 0u);
    // The items of increments of 0 (no events) are checked the same way.
    const std::vector<std::string_view> items = {"a"};
    try {
      service.check_event_items("c", items, RedisKey::Type::topk);
      ADD_FAILURE() << "a TOPK write's items passed as a CMS key's";
    } catch (const ServiceError& e) {
      EXPECT_EQ(e.code(), "wrong_type");
    }
    service.check_event_items("c", items, RedisKey::Type::cms);
    service.check_event_items("http", items, RedisKey::Type::topk);
    (void)batch("c", RedisKey::Type::cms);
    (void)batch("c", std::nullopt);  // (HTTP names no type)
    EXPECT_EQ(service.describe("c").stats.events, 4u);
    (void)batch("http", RedisKey::Type::topk);
    (void)batch("http", RedisKey::Type::cms);
    EXPECT_EQ(service.describe("http").stats.events, 4u);
    service.shutdown();
  }
  std::filesystem::remove_all(dir);
}

// A top-K key with the CMS keys' very configuration would sum with them:
// only its type refuses it, as destination or as source, before anything
// is merged.
TEST(ServiceRedisType, AMergeOverAKeyOfTheOtherTypeIsRefusedAndMergesNothing) {
  const auto dir = testing::make_temp_dir("ebb-service-merge-type");
  {
    ServiceOptions o;
    o.data_dir = dir;
    Service service(o, testing::quiet_logger());
    (void)service.recover();
    auto make = [&](const std::string& name, RedisKey::Type type) {
      auto spec = parse_namespace_spec(R"({"name":")" + name + R"(","k":10})", service.limits());
      spec.redis = RedisKey{.type = type, .width = 64, .depth = 3};
      service.create(std::move(spec));
    };
    make("c1", RedisKey::Type::cms);
    make("c2", RedisKey::Type::cms);
    make("t", RedisKey::Type::topk);
    const double now = wall_clock_now();
    for (const auto& [ns, weight] : std::vector<std::pair<std::string_view, double>>{{"c1", 2}, {"c2", 3}, {"t", 5}}) {
      const std::vector<engine::Event> events = {{"a", now, weight}};
      IngestRequest req;
      req.events = events;
      req.namespaces = std::span(&ns, 1);
      req.received_at = now;
      (void)service.ingest(req);
    }
    const std::vector<double> one{1};
    auto refused = [&](const std::string& destination, const std::string& source, const std::string& named) {
      try {
        service.merge(destination, std::vector<std::string>{source}, one, RedisKey::Type::cms);
        ADD_FAILURE() << "a merge of '" << source << "' into '" << destination << "' went through a top-K key";
      } catch (const ServiceError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::conflict);
        EXPECT_EQ(e.code(), "wrong_type");
        EXPECT_EQ(std::string(e.what()), "namespace '" + named + "' is a Redis key of another type");
      }
    };
    refused("c1", "t", "t");
    refused("t", "c2", "t");
    EXPECT_EQ(service.describe("c1").stats.weight, 2);
    EXPECT_EQ(service.describe("c2").stats.weight, 3);
    EXPECT_EQ(service.describe("t").stats.weight, 5);
    service.merge("c1", std::vector<std::string>{"c2"}, one, RedisKey::Type::cms);
    EXPECT_EQ(service.describe("c1").stats.weight, 3);  // c1's counts replaced by c2's
    service.merge("c1", std::vector<std::string>{"c1", "t"}, std::vector<double>{1, 1});  // (no type named: summed)
    EXPECT_EQ(service.describe("c1").stats.weight, 8);
    service.shutdown();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb::service
