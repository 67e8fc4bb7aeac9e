// POST /top-k/personalised and `ebb query --user-item` against the real
// binary: a user's items lift what they touched above the global list by
// the scores the counts and weights determine; bad requests are 400s (413
// past the item limit) naming the field, and change nothing.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "support/ebb_server.hpp"
#include "support/error_code.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

TEST(PersonalisedApi, TheUsersItemsRiseByTheScoresTheirCountsAndWeightsDetermine) {
  const auto dir = testing::make_temp_dir("ebb-personalised");
  EbbServer server(dir, {"--max-user-items", "100"});
  HttpClient c(server.port());
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"shop","clock":"event","windows":["all","1h"],"half_lives":["10m"]})").status, 201);
  // a 10 events, b 5, c 3, d 1 (exact: far fewer keys than the sketch's width).
  std::string body = R"({"namespace":"shop","events":[)";
  bool first = true;
  for (auto [item, n] : {std::pair{"a", 10}, {"b", 5}, {"c", 3}, {"d", 1}}) {
    for (int i = 0; i < n; ++i) {
      body += std::string(first ? "" : ",") + R"({"item_id":")" + item + R"(","timestamp":1700000000})";
      first = false;
    }
  }
  ASSERT_EQ(c.request("POST", "/events", body + "]}").status, 204);

  // popularity a 1, b 0.5, c 0.3, d 0.1; relevance d 1, c 0.5;
  // score (alpha 0.5): d 0.55, a 0.5, c 0.4, b 0.25.
  auto r = c.request("POST", "/top-k/personalised",
                     R"({"namespace":"shop","window":"all","k":3,"alpha":0.5,"user_items":[{"item_id":"d","weight":2},{"item_id":"c"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(r.body).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["namespace"]), "shop");
  EXPECT_EQ(double(doc["alpha"]), 0.5);
  EXPECT_EQ(uint64_t(doc["candidates"]), 4u);
  EXPECT_EQ(double(doc["total"]), 19);
  EXPECT_EQ(double(doc["as_of"]), 1700000000);
  simdjson::dom::array items = doc["items"];
  ASSERT_EQ(items.size(), 3u) << r.body;
  const char* order[] = {"d", "a", "c"};
  const double scores[] = {0.5 * 0.1 + 0.5, 0.5, 0.5 * 0.3 + 0.5 * 0.5};
  const double counts[] = {1, 10, 3};
  const uint64_t global_ranks[] = {4, 1, 3};
  for (std::size_t i = 0; i < 3; ++i) {
    auto item = items.at(i);
    EXPECT_EQ(std::string_view(item["item_id"]), order[i]) << r.body;
    EXPECT_EQ(uint64_t(item["rank"]), i + 1);
    EXPECT_DOUBLE_EQ(double(item["score"]), scores[i]) << order[i];
    EXPECT_EQ(double(item["estimated_count"]), counts[i]);
    EXPECT_EQ(double(item["lower_bound"]), counts[i]);
    EXPECT_EQ(double(item["upper_bound"]), counts[i]);
    EXPECT_EQ(uint64_t(item["global_rank"]), global_ranks[i]);
  }
  EXPECT_DOUBLE_EQ(double(items.at(0)["relevance"]), 1.0);
  EXPECT_DOUBLE_EQ(double(items.at(2)["relevance"]), 0.5);
  EXPECT_DOUBLE_EQ(double(items.at(0)["popularity"]), 0.1);

  // A user item the namespace never saw: count 0, not in the global list.
  r = c.request("POST", "/top-k/personalised", R"({"namespace":"shop","window":"all","k":1,"alpha":0,"user_items":[{"item_id":"new"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("item_id":"new","estimated_count":0,)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("global_rank":null)"), std::string::npos) << r.body;
  // No user items, default alpha and k, the namespace's first view: the global order.
  r = c.request("POST", "/top-k/personalised", R"({"namespace":"shop","user_items":[]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("alpha":0.5,"candidates":4,"items":[{"item_id":"a")"), std::string::npos) << r.body;
  // Decay as the view's: in the 10m view an interaction 10 minutes old weighs half.
  r = c.request("POST", "/top-k/personalised",
                R"({"namespace":"shop","half_life":"10m","k":2,"alpha":0,"user_items":[{"item_id":"b","weight":2,"timestamp":1699999400},{"item_id":"c"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(p.parse(r.body).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["half_life"]), "10m");
  // b: 2 x 1/2, c: 1: a tie on relevance 1 (without decay, c would have 1/2), b ranked higher.
  EXPECT_EQ(std::string_view(doc["items"].at(0)["item_id"]), "b");
  EXPECT_EQ(std::string_view(doc["items"].at(1)["item_id"]), "c");
  EXPECT_DOUBLE_EQ(double(doc["items"].at(0)["score"]), 1.0);
  EXPECT_DOUBLE_EQ(double(doc["items"].at(1)["relevance"]), 1.0);

  // Refusals name the field.
  const std::pair<const char*, const char*> bad[] = {
      {R"({"namespace":"shop","alpha":1.5,"user_items":[]})", "alpha: must be a number in [0, 1]"},
      {R"({"namespace":"shop","alpha":"high","user_items":[]})", "alpha: must be a number in [0, 1]"},
      {R"({"namespace":"shop"})", "user_items: is required"},
      {R"({"user_items":[]})", "namespace: is required"},
      {R"({"namespace":"shop","user_items":[{"item_id":"a"},{"item_id":"b","weight":-1}]})", "user_items[1].weight: must be a number in (0, 1e15]"},
      {R"({"namespace":"shop","user_items":[{"item_id":"a","weight":2e15}]})", "user_items[0].weight: must be a number in (0, 1e15]"},
      {R"({"namespace":"shop","user_items":[],"user_items":[]})", "user_items: is given twice"},
      {R"({"namespace":"shop","user_items":[{"item_id":"a","timestamp":-5}]})", "user_items[0].timestamp: must be a number of seconds since the epoch"},
      {R"({"namespace":"shop","user_items":[{"weight":2}]})", "user_items[0].item_id: is required"},
      {R"({"namespace":"shop","user_items":[{"item_id":""}]})", "user_items[0].item_id: must be 1 to 1024 bytes"},
      {R"({"namespace":"shop","user_items":[{"item_id":"a","colour":"red"}]})", "user_items[0].colour: unknown field"},
      {R"({"namespace":"shop","user_items":["a"]})", "user_items[0]: must be an object with an item_id"},
      {R"({"namespace":"shop","user_items":{}})", "user_items: must be an array"},
      {R"({"namespace":"shop","user_items":[],"extra":1})", "extra: unknown field"},
      {R"({"namespace":"shop","k":0,"user_items":[]})", "k: must be a whole number in [1, 1000]"},
      {R"({"namespace":"shop","window":"all","half_life":"10m","user_items":[]})", "window"},
      {"not json", "request body is not valid JSON"},
  };
  for (const auto& [request, message] : bad) {
    r = c.request("POST", "/top-k/personalised", request);
    EXPECT_EQ(r.status, 400) << request << " -> " << r.body;
    EXPECT_NE(r.body.find(message), std::string::npos) << request << " -> " << r.body;
  }
  EXPECT_EQ(testing::error_code_of(c.request("POST", "/top-k/personalised", R"({"namespace":"shop","window":"1d","user_items":[]})")), "unknown_view");
  EXPECT_EQ(c.request("POST", "/top-k/personalised", R"({"namespace":"nope","user_items":[]})").status, 404);
  std::string many = R"({"namespace":"shop","user_items":[)";
  for (int i = 0; i < 101; ++i) many += std::string(i ? "," : "") + R"({"item_id":"x"})";
  r = c.request("POST", "/top-k/personalised", many + "]}");
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_NE(r.body.find("user_items: more than 100 items (--max-user-items)"), std::string::npos) << r.body;
  // Nothing of it counted: a question changes no state.
  r = c.request("GET", "/top-k?namespace=shop&window=all");
  EXPECT_NE(r.body.find(R"("total":19,)"), std::string::npos) << r.body;

  const auto q = testing::run_process({EBB_BINARY, "query", "-n", "shop", "--url", "http://127.0.0.1:" + std::to_string(server.port()),
                                       "--window", "all", "-k", "3", "--user-item", "d=2", "--user-item", "c", "--alpha", "0.5"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("top 3 of 'shop' for this user (alpha 0.5: 0.5 popularity + 0.5 relevance), as of 2023-11-14T22:13:20Z"),
            std::string::npos)
      << q.out;
  EXPECT_NE(q.out.find("   1  d                                 0.5500      0.1000     1.0000            1.00       4"), std::string::npos)
      << q.out;
  // An id ending in "=N" is given with "=1" after it; a number out of range is refused, nothing asked.
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  const auto sku = testing::run_process({EBB_BINARY, "query", "-n", "shop", "--url", url, "--json", "-k", "1", "--alpha", "0", "--user-item", "sku=42=1"});
  ASSERT_EQ(sku.exit_code, 0) << sku.err;
  EXPECT_NE(sku.out.find(R"("items":[{"item_id":"sku=42",)"), std::string::npos) << sku.out;
  const auto huge = testing::run_process({EBB_BINARY, "query", "-n", "shop", "--url", url, "--user-item", "a=1e400"});
  EXPECT_NE(huge.exit_code, 0);
  EXPECT_NE(huge.err.find("--user-item 'a=1e400': the weight '1e400' is no finite number"), std::string::npos) << huge.err;
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
