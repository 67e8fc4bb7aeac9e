// GET /trending and `ebb query --trending` against the real binary: a
// surge over a steady background leads the list, with the score the
// events determine; bad questions are 400s naming the parameter.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>

#include "support/ebb_server.hpp"
#include "support/error_code.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

constexpr double kStart = 1.7e9;

TEST(TrendingApi, ASurgeLeadsWithTheScoreItsEventsDetermine) {
  const auto dir = testing::make_temp_dir("ebb-trending");
  EbbServer server(dir);
  HttpClient c(server.port());
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"tags","clock":"event","half_lives":["5m","1h"]})").status, 201);
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"one","clock":"event","half_lives":["5m"]})").status, 201);
  // steady: one event a second for an hour; new: 60 events in the last minute.
  std::string body = R"({"namespace":"tags","events":[)";
  for (int i = 0; i < 3600; ++i) body += std::string(i ? "," : "") + R"({"item_id":"steady","timestamp":)" + std::to_string(kStart + i) + "}";
  for (int i = 0; i < 60; ++i) body += R"(,{"item_id":"new","timestamp":)" + std::to_string(kStart + 3540 + i) + "}";
  ASSERT_EQ(c.request("POST", "/events", body + "]}").status, 204);

  auto r = c.request("GET", "/trending?namespace=tags&k=5");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(r.body).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["short"]), "5m");
  EXPECT_EQ(std::string_view(doc["long"]), "1h");
  EXPECT_EQ(double(doc["as_of"]), kStart + 3599);
  EXPECT_EQ(double(doc["min_count"]), 5);
  simdjson::dom::array items = doc["items"];
  ASSERT_GE(items.size(), 1u) << r.body;
  auto first = items.at(0);
  EXPECT_EQ(std::string_view(first["item_id"]), "new");
  EXPECT_EQ(uint64_t(first["rank"]), 1u);
  // The score from the exact counts (no collisions): O = new's 5m count,
  // E = its 1h count / X(1h) x X(5m) over the stream's age of 3599 s.
  const double ls = std::log(2.0) / 300, ll = std::log(2.0) / 3600, now = kStart + 3599;
  double o = 0, long_count = 0;
  for (int i = 0; i < 60; ++i) {
    o += std::exp(-ls * (now - (kStart + 3540 + i)));
    long_count += std::exp(-ll * (now - (kStart + 3540 + i)));
  }
  auto x = [&](double lambda) { return -std::expm1(-lambda * 3599) / lambda; };
  const double e = long_count / x(ll) * x(ls);
  const double score = (o - e) / std::sqrt(e + 1);
  EXPECT_NEAR(double(first["score"]), score, 1e-9 * score);
  EXPECT_NEAR(double(first["short_count"]["lower_bound"]), o, 1e-9 * o);

  // Narrower support, other views, errors.
  r = c.request("GET", "/trending?namespace=tags&min_count=100");  // new has about 55 in the 5m view
  EXPECT_EQ(r.body.find(R"("item_id":"new")"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("min_count":100,)"), std::string::npos) << r.body;
  r = c.request("GET", "/trending?namespace=tags&short=1h&long=5m");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("short: must be a shorter half-life than long"), std::string::npos) << r.body;
  r = c.request("GET", "/trending?namespace=tags&long=1d");
  EXPECT_EQ(testing::error_code_of(r), "unknown_view");
  EXPECT_NE(r.body.find("long: namespace 'tags' keeps no half-life 1d"), std::string::npos) << r.body;
  EXPECT_EQ(testing::error_code_of(c.request("GET", "/trending?namespace=one")), "unknown_view");
  EXPECT_EQ(testing::error_code_of(c.request("GET", "/trending?namespace=tags&min_count=-1")), "bad_parameter");
  EXPECT_EQ(testing::error_code_of(c.request("GET", "/trending?namespace=tags&short=soon")), "bad_parameter");
  EXPECT_EQ(testing::error_code_of(c.request("GET", "/trending?namespace=tags&k=0")), "bad_parameter");
  EXPECT_EQ(c.request("GET", "/trending?namespace=nope").status, 404);

  const auto q = testing::run_process({EBB_BINARY, "query", "-n", "tags", "--url", "http://127.0.0.1:" + std::to_string(server.port()),
                                       "--trending", "-k", "3"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("trending in 'tags': half-life 5m against 1h, as of 2023-11-14T23:13:19Z"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("   1  new "), std::string::npos) << q.out;
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
