// A RESP command names the type of key it is for, and the service checks it
// under the namespace's lock as it counts, reads or merges: a key deleted
// and made again as the other type after the command's own check (DEL,
// then CMS.INITBYDIM, from another connection) is not counted into, read
// or merged with.
#include <gtest/gtest.h>

#include "ebb/core/clock.hpp"
#include "ebb/service/service.hpp"
#include "support/ebb_server.hpp"
#include "support/quiet_logger.hpp"

namespace ebb::service {
namespace {

class ServiceRedisType : public ::testing::Test {
 protected:
  void SetUp() override {
    ServiceOptions o;
    o.data_dir = dir_;
    service_.emplace(o, testing::quiet_logger());
    (void)service_->recover();
  }
  void TearDown() override {
    service_->shutdown();
    service_.reset();
    std::filesystem::remove_all(dir_);
  }

  Service& service() { return *service_; }
  // A Redis key of `type` (width 64, depth 3, k 10), or, without a type, a
  // namespace made over HTTP with the same configuration.
  void make(const std::string& name, std::optional<RedisKey::Type> type) {
    auto spec = parse_namespace_spec(R"({"name":")" + name + R"(","k":10})", service().limits());
    if (type) spec.redis = RedisKey{.type = *type, .width = 64, .depth = 3};
    service().create(std::move(spec));
  }
  Commit count(std::string_view ns, std::vector<engine::Event> events, std::optional<RedisKey::Type> type) {
    IngestRequest req;
    req.events = events;
    req.namespaces = std::span(&ns, 1);
    req.received_at = now_;
    req.redis_type = type;
    return service().ingest(req);
  }
  template <typename Call>
  void expect_wrong_type(Call&& call, const std::string& named) {
    try {
      call();
      ADD_FAILURE() << "went through a key of the other type";
    } catch (const ServiceError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::conflict);
      EXPECT_EQ(e.code(), "wrong_type");
      EXPECT_EQ(std::string(e.what()), "namespace '" + named + "' is a Redis key of another type");
    }
  }

  const double now_ = wall_clock_now();

 private:
  std::filesystem::path dir_ = testing::make_temp_dir("ebb-service-redis-type");
  std::optional<Service> service_;
};

TEST_F(ServiceRedisType, ABatchForTheOtherTypeOfKeyIsRefusedAndCountsNothing) {
  make("c", RedisKey::Type::cms);
  make("http", std::nullopt);  // made over HTTP: either type
  const std::vector<engine::Event> events = {{"a", now_, 1}, {"b", now_, 2}};
  expect_wrong_type([&] { (void)count("c", events, RedisKey::Type::topk); }, "c");
  EXPECT_EQ(service().describe("c").stats.events, 0u);
  // The items of increments of 0 (no events) are checked the same way.
  const std::vector<std::string_view> items = {"a"};
  expect_wrong_type([&] { service().check_event_items("c", items, RedisKey::Type::topk); }, "c");
  service().check_event_items("c", items, RedisKey::Type::cms);
  service().check_event_items("http", items, RedisKey::Type::topk);
  (void)count("c", events, RedisKey::Type::cms);
  (void)count("c", events, std::nullopt);  // (HTTP names no type)
  EXPECT_EQ(service().describe("c").stats.events, 4u);
  (void)count("http", events, RedisKey::Type::topk);
  (void)count("http", events, RedisKey::Type::cms);
  EXPECT_EQ(service().describe("http").stats.events, 4u);
}

// A read (TOPK.COUNT, CMS.QUERY, an INCRBY's counts) names its type too:
// it does not answer a re-made key's counts.
TEST_F(ServiceRedisType, AReadOfTheOtherTypeOfKeyIsRefused) {
  make("c", RedisKey::Type::cms);
  (void)count("c", {{"a", now_, 3}}, std::nullopt);
  const std::vector<std::string> items = {"a"};
  engine::TopKAnswer view;
  expect_wrong_type([&] { (void)service().counts("c", items, std::nullopt, view, std::nullopt, RedisKey::Type::topk); }, "c");
  const auto answers = service().counts("c", items, std::nullopt, view, std::nullopt, RedisKey::Type::cms);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].item.upper, 3);
}

// TOPK.LIST and TOPK.QUERY read the rendered list: it is not the list of a
// key made again as a CMS, cached answer or not; a namespace made over HTTP
// answers either. A patch keeps the type it was made with.
TEST_F(ServiceRedisType, ARenderedListOfTheOtherTypeOfKeyIsRefused) {
  make("c", RedisKey::Type::cms);
  make("http", std::nullopt);
  (void)count("c", {{"a", now_, 3}}, std::nullopt);
  (void)count("http", {{"a", now_, 2}}, std::nullopt);
  auto keys = [](const engine::TopKAnswer& a) {
    std::string out;
    for (const auto& item : a.items) out += item.key + ";";
    return out;
  };
  EXPECT_EQ(*service().top_rendered("c", std::nullopt, std::nullopt, "keys", keys), "a;");  // cached now
  expect_wrong_type([&] { (void)service().top_rendered("c", std::nullopt, std::nullopt, "keys", keys, RedisKey::Type::topk); }, "c");
  EXPECT_EQ(*service().top_rendered("c", std::nullopt, std::nullopt, "keys", keys, RedisKey::Type::cms), "a;");
  EXPECT_EQ(*service().top_rendered("http", std::nullopt, std::nullopt, "keys", keys, RedisKey::Type::topk), "a;");
  // TOPK.INFO and CMS.INFO: the description they answer, likewise.
  expect_wrong_type([&] { (void)service().describe("c", RedisKey::Type::topk); }, "c");
  EXPECT_EQ(service().describe("c", RedisKey::Type::cms).stats.events, 1u);
  EXPECT_EQ(service().describe("http", RedisKey::Type::cms).stats.events, 1u);
  (void)service().patch("c", [](const NamespaceSpec& current) {
    NamespaceSpec next = current;
    next.config.k = 5;
    next.redis.reset();  // (an edit cannot drop it)
    return next;
  });
  ASSERT_TRUE(service().describe("c").spec.redis.has_value());
  EXPECT_EQ(service().describe("c").spec.redis->type, RedisKey::Type::cms);
  expect_wrong_type([&] { (void)service().top_rendered("c", std::nullopt, std::nullopt, "keys", keys, RedisKey::Type::topk); }, "c");
}

// TOPK.HOTKEYS and TOPK.TRENDING name their type too.
TEST_F(ServiceRedisType, HotKeysAndTrendingOfTheOtherTypeOfKeyAreRefused) {
  make("c", RedisKey::Type::cms);
  make("t", RedisKey::Type::topk);
  (void)count("c", {{"a", now_, 3}}, std::nullopt);
  expect_wrong_type([&] { (void)service().hot_keys("c", {}, RedisKey::Type::topk); }, "c");
  expect_wrong_type([&] { (void)service().trending("c", std::nullopt, std::nullopt, std::nullopt, 0, std::nullopt, RedisKey::Type::topk); }, "c");
  // Of its own type, or none named, they go on to their own checks (these
  // keys have no hot-key threshold and no half-lives to compare).
  auto refusal = [](auto&& call) -> std::string {
    try {
      call();
      return "answered";
    } catch (const ServiceError& e) {
      return e.code();
    }
  };
  EXPECT_EQ(refusal([&] { (void)service().hot_keys("t", {}, RedisKey::Type::topk); }), "hot_keys_off");
  EXPECT_EQ(refusal([&] { (void)service().hot_keys("c"); }), "hot_keys_off");
  EXPECT_EQ(refusal([&] { (void)service().trending("c", std::nullopt, std::nullopt, std::nullopt, 0, std::nullopt, RedisKey::Type::cms); }), "unknown_view");
  EXPECT_EQ(refusal([&] { (void)service().trending("c", std::nullopt, std::nullopt, std::nullopt, 0); }), "unknown_view");
}

// A key deleted after the command found it: not_found, as ingest says.
TEST_F(ServiceRedisType, TheItemCheckOfADeletedKeyIsNotFound) {
  make("c", RedisKey::Type::cms);
  service().remove("c");
  const std::vector<std::string_view> items = {"a"};
  try {
    service().check_event_items("c", items, RedisKey::Type::cms);
    ADD_FAILURE() << "a deleted key's items passed";
  } catch (const ServiceError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
}

// A top-K key with the CMS keys' very configuration would sum with them:
// only its type refuses it, as destination or as source, before anything
// is merged.
TEST_F(ServiceRedisType, AMergeOverAKeyOfTheOtherTypeIsRefusedAndMergesNothing) {
  make("c1", RedisKey::Type::cms);
  make("c2", RedisKey::Type::cms);
  make("t", RedisKey::Type::topk);
  (void)count("c1", {{"a", now_, 2}}, std::nullopt);
  (void)count("c2", {{"a", now_, 3}}, std::nullopt);
  (void)count("t", {{"a", now_, 5}}, std::nullopt);
  const std::vector<double> one{1};
  auto merge = [&](const std::string& destination, const std::string& source) {
    service().merge(destination, std::vector<std::string>{source}, one, RedisKey::Type::cms);
  };
  expect_wrong_type([&] { merge("c1", "t"); }, "t");
  expect_wrong_type([&] { merge("t", "c2"); }, "t");
  EXPECT_EQ(service().describe("c1").stats.weight, 2);
  EXPECT_EQ(service().describe("c2").stats.weight, 3);
  EXPECT_EQ(service().describe("t").stats.weight, 5);
  merge("c1", "c2");
  EXPECT_EQ(service().describe("c1").stats.weight, 3);  // c1's counts replaced by c2's
  service().merge("c1", std::vector<std::string>{"c1", "t"}, std::vector<double>{1, 1});  // (no type named: summed)
  EXPECT_EQ(service().describe("c1").stats.weight, 8);
}

}  // namespace
}  // namespace ebb::service
