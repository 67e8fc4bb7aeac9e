// GET /top-k answers are reused until the namespace changes: a client
// always reads its own acknowledged writes, and a reused answer is the
// same bytes (as_of included) as the one computed.
#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include "support/ebb_server.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

std::uint64_t metric(HttpClient& c, const std::string& name) {
  const std::string text = c.request("GET", "/metrics").body;
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\n" + name + " ([0-9]+)\n"))) {
    ADD_FAILURE() << name << " not in /metrics";
    return 0;
  }
  return std::stoull(m[1]);
}

class AnswerCacheApi : public ::testing::Test {
 protected:
  void start(const std::string& ttl) {
    dir_ = testing::make_temp_dir("ebb-cache");
    server_ = std::make_unique<EbbServer>(dir_, std::vector<std::string>{"--answer-cache-ttl", ttl});
    client_ = std::make_unique<HttpClient>(server_->port());
    ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"q","half_lives":["5m"],"windows":["all"],"k":3})").status, 201);
  }
  void TearDown() override {
    client_.reset();
    if (server_) {
      EXPECT_EQ(server_->stop(), 0) << server_->log();
    }
    std::filesystem::remove_all(dir_);
  }
  void post(const std::string& events) {
    ASSERT_EQ(client_->request("POST", "/events?namespace=q", R"({"events":[)" + events + "]}").status, 204);
  }
  std::string top(const std::string& query = "") {
    auto r = client_->request("GET", "/top-k?namespace=q" + query);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  }
  std::uint64_t hits() { return metric(*client_, "ebb_answer_cache_hits_total"); }
  std::uint64_t misses() { return metric(*client_, "ebb_answer_cache_misses_total"); }

  std::filesystem::path dir_;
  std::unique_ptr<EbbServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(AnswerCacheApi, ReusesAnAnswerUntilABatchOrAPatchChangesTheNamespace) {
  start("1h");
  post(R"({"item_id":"a","weight":2},{"item_id":"b"})");
  const std::string first = top();
  EXPECT_EQ(top(), first);  // the same bytes, as_of included
  EXPECT_EQ(hits(), 1u);
  EXPECT_EQ(misses(), 1u);

  // Another view, another k: other questions, computed once each.
  const std::string all = top("&window=all&k=1");
  EXPECT_NE(all.find(R"("window":{)"), std::string::npos) << all;
  EXPECT_EQ(top("&window=all&k=1"), all);
  EXPECT_EQ(misses(), 2u);
  EXPECT_EQ(hits(), 2u);

  // An acknowledged batch is in the next answer.
  post(R"({"item_id":"c","weight":5})");
  const std::string after = top();
  EXPECT_NE(after, first);
  EXPECT_NE(after.find(R"("item_id":"c","estimated_count":5)"), std::string::npos) << after;
  EXPECT_EQ(misses(), 3u);

  // So is a patch: the default k follows it.
  ASSERT_EQ(client_->request("PATCH", "/namespaces/q", R"({"k":1})").status, 200);
  const std::string patched = top();
  EXPECT_EQ(patched.find(R"("item_id":"a")"), std::string::npos) << patched;  // only c, the top 1
  EXPECT_EQ(misses(), 4u);
}

TEST_F(AnswerCacheApi, AnAnswerOlderThanTheTtlIsComputedAgain) {
  start("20ms");
  post(R"({"item_id":"a"})");
  const std::string first = top();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_NE(top(), first);  // a later as_of
  EXPECT_EQ(hits(), 0u);
  EXPECT_EQ(misses(), 2u);
}

TEST_F(AnswerCacheApi, ATtlOfZeroTurnsTheCacheOff) {
  start("0");
  post(R"({"item_id":"a"})");
  top();
  top();
  EXPECT_EQ(hits(), 0u);
  EXPECT_EQ(misses(), 2u);
}

TEST(AnswerCacheFlag, ABadTtlIsRefusedNamingTheFlag) {
  const auto dir = testing::make_temp_dir("ebb-cache-flag");
  try {
    EbbServer server(dir, {"--answer-cache-ttl", "5x"});
    ADD_FAILURE() << "started with --answer-cache-ttl 5x";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--answer-cache-ttl: bad duration '5x'"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST_F(AnswerCacheApi, ANamespaceDeletedAndCreatedAgainNeverShowsTheOldAnswer) {
  start("1h");
  post(R"({"item_id":"old","weight":7})");
  const std::string before = top();
  EXPECT_NE(before.find(R"("item_id":"old")"), std::string::npos) << before;
  ASSERT_EQ(client_->request("DELETE", "/namespaces/q").status, 204);
  ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"q","half_lives":["5m"],"windows":["all"],"k":3})").status, 201);
  const std::string fresh = top();
  EXPECT_EQ(fresh.find(R"("item_id":"old")"), std::string::npos) << fresh;
  EXPECT_NE(fresh.find(R"("items":[])"), std::string::npos) << fresh;
}

TEST_F(AnswerCacheApi, ABatchForTwoNamespacesChangesBothAndNoOther) {
  start("1h");
  ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"r","windows":["all"]})").status, 201);
  ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"s","windows":["all"]})").status, 201);
  const std::string s_before = client_->request("GET", "/top-k?namespace=s").body;
  top();
  client_->request("GET", "/top-k?namespace=r");
  ASSERT_EQ(client_->request("POST", "/events", R"({"events":[{"item_id":"x","namespace":"q"},{"item_id":"y","namespace":"r"}]})").status, 204);
  EXPECT_NE(top().find(R"("item_id":"x")"), std::string::npos);
  EXPECT_NE(client_->request("GET", "/top-k?namespace=r").body.find(R"("item_id":"y")"), std::string::npos);
  EXPECT_EQ(client_->request("GET", "/top-k?namespace=s").body, s_before);  // unchanged: the same bytes
}

}  // namespace
}  // namespace ebb
