// A RESP write names the type of key it is for, and the service checks it
// under the namespace's lock with the rest of the batch: a key deleted and
// made again as the other type after the command's own check (DEL, then
// CMS.INITBYDIM, from another connection) is not counted into.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "ebb/core/clock.hpp"
#include "ebb/service/service.hpp"
#include "support/ebb_server.hpp"

namespace ebb::service {
namespace {

TEST(ServiceRedisType, ABatchForTheOtherTypeOfKeyIsRefusedAndCountsNothing) {
  const auto dir = testing::make_temp_dir("ebb-service-redis-type");
  {
    ServiceOptions o;
    o.data_dir = dir;
    Service service(o, std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>()));
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

}  // namespace
}  // namespace ebb::service
