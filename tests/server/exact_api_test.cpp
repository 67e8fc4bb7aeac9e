// `"counting": "exact"` namespaces through the real binary: the resolved
// configuration, exact decayed scores, window counts and velocity, the
// eviction past max_items reported in every answer, POST /counts for a
// ranking pass, and the same answers after a clean restart and a crash.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>

#include "support/ebb_server.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

constexpr double t0 = 1699999980;  // a whole minute: the 1h window starts on it

simdjson::dom::element parsed(simdjson::dom::parser& p, const testing::HttpResult& r) {
  simdjson::dom::element e;
  EXPECT_EQ(p.parse(r.body).get(e), simdjson::SUCCESS) << r.body;
  return e;
}

// The fixture's events: a 3 at t0 and 2 at t0+1800, b 1 at t0+3600, c 4 at
// t0+3000 (late), then d 1 at t0+3600 past max_items = 3: b, the lowest
// under the 1h half-life, is evicted.
const char* kCreate = R"({"name":"scores","counting":"exact","max_items":3,"clock":"event","windows":["all","1h"],"half_lives":["1h"]})";
const char* kFirst = R"({"namespace":"scores","events":[{"item_id":"a","timestamp":1699999980,"weight":3},)"
                     R"({"item_id":"a","timestamp":1700001780,"weight":2},{"item_id":"b","timestamp":1700003580},)"
                     R"({"item_id":"c","timestamp":1700002980,"weight":4}]})";
const char* kSecond = R"({"namespace":"scores","events":[{"item_id":"d","timestamp":1700003580}]})";

double decayed(double w, double t) { return w * std::exp(-std::log(2.0) / 3600 * (t0 + 3600 - t)); }

void expect_answers(HttpClient& c) {
  simdjson::dom::parser p;
  const double a = decayed(3, t0) + decayed(2, t0 + 1800), c4 = decayed(4, t0 + 3000), b = 1, d = 1;
  auto r = c.request("GET", "/top-k?namespace=scores&half_life=1h");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = parsed(p, r);
  simdjson::dom::array items = doc["items"];
  ASSERT_EQ(items.size(), 3u) << r.body;
  EXPECT_EQ(std::string_view(items.at(0)["item_id"]), "c");
  EXPECT_DOUBLE_EQ(double(items.at(0)["estimated_count"]), c4);
  EXPECT_DOUBLE_EQ(double(items.at(0)["lower_bound"]), c4);
  EXPECT_DOUBLE_EQ(double(items.at(0)["upper_bound"]), c4 + b);  // it may have lost what eviction took
  EXPECT_EQ(std::string_view(items.at(1)["item_id"]), "a");
  EXPECT_DOUBLE_EQ(double(items.at(1)["estimated_count"]), a);
  EXPECT_EQ(std::string_view(items.at(2)["item_id"]), "d");
  EXPECT_DOUBLE_EQ(double(items.at(2)["estimated_count"]), d);
  EXPECT_DOUBLE_EQ(double(doc["total"]), a + c4 + b + d);
  EXPECT_EQ(std::string_view(doc["accuracy"]["type"]), "exact");
  EXPECT_DOUBLE_EQ(double(doc["accuracy"]["max_error"]), b);
  EXPECT_EQ(uint64_t(doc["accuracy"]["items"]), 3u);
  EXPECT_EQ(uint64_t(doc["accuracy"]["evicted_items"]), 1u);
  EXPECT_EQ(double(doc["as_of"]), t0 + 3600);

  // The window: minute buckets, [t0, t0+3600]; velocity = count / 3600 s.
  r = c.request("GET", "/top-k?namespace=scores&window=1h");
  EXPECT_NE(r.body.find(R"("window":{"start":1699999980,"end":1700003580},"window_length":"1h","as_of":1700003580,"granularity":60,)"
                        R"("items":[{"item_id":"a","estimated_count":5,"lower_bound":5,"upper_bound":6,"rank":1},)"
                        R"({"item_id":"c","estimated_count":4,"lower_bound":4,"upper_bound":5,"rank":2},)"
                        R"({"item_id":"d","estimated_count":1,"lower_bound":1,"upper_bound":2,"rank":3}],"total":11,)"),
            std::string::npos)
      << r.body;
  r = c.request("GET", "/count?namespace=scores&window=1h&item_id=a");
  auto point = parsed(p, r);
  EXPECT_DOUBLE_EQ(double(point["rate"]), 5.0 / 3600);
  EXPECT_EQ(bool(point["tracked"]), true);

  // A ranking pass: in request order, the evicted b bounded by what eviction took.
  r = c.request("POST", "/counts", R"({"namespace":"scores","half_life":"1h","item_ids":["a","b","zz","c"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto counts = parsed(p, r);
  simdjson::dom::array answers = counts["items"];
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_EQ(std::string_view(answers.at(0)["item_id"]), "a");
  EXPECT_DOUBLE_EQ(double(answers.at(0)["estimated_count"]), a);
  EXPECT_DOUBLE_EQ(double(answers.at(0)["rate"]), std::log(2.0) / 3600 * a);
  EXPECT_EQ(std::string_view(answers.at(1)["item_id"]), "b");
  EXPECT_EQ(double(answers.at(1)["estimated_count"]), 0);
  EXPECT_EQ(double(answers.at(1)["lower_bound"]), 0);
  EXPECT_DOUBLE_EQ(double(answers.at(1)["upper_bound"]), b);
  EXPECT_EQ(bool(answers.at(1)["tracked"]), false);
  EXPECT_EQ(bool(answers.at(2)["tracked"]), false);
  EXPECT_DOUBLE_EQ(double(answers.at(3)["estimated_count"]), c4);
  EXPECT_EQ(std::string_view(counts["accuracy"]["type"]), "exact");

  r = c.request("GET", "/top-k?namespace=scores&window=all");
  EXPECT_NE(r.body.find(R"("total":11,)"), std::string::npos) << r.body;
}

TEST(ExactApi, ExactScoresWindowsAndEvictionSurviveRestartsAndCrashes) {
  const auto dir = testing::make_temp_dir("ebb-exact");
  {
    EbbServer server(dir);
    HttpClient c(server.port());
    auto r = c.request("POST", "/namespaces", kCreate);
    ASSERT_EQ(r.status, 201) << r.body;
    EXPECT_NE(r.body.find(R"("counting":"exact","max_items":3,)"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("sketch_width"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find(R"("accuracy":{"type":"exact","bytes_max":)"), std::string::npos) << r.body;
    ASSERT_EQ(c.request("POST", "/events", kFirst).status, 204);
    ASSERT_EQ(c.request("POST", "/events", kSecond).status, 204);
    expect_answers(c);
    // ebb query states the eviction in its table.
    const auto q = testing::run_process({EBB_BINARY, "query", "-n", "scores", "--url", "http://127.0.0.1:" + std::to_string(server.port()),
                                         "--window", "1h", "-k", "2"});
    EXPECT_EQ(q.exit_code, 0) << q.err;
    EXPECT_NE(q.out.find("    1  a                  5               5               6\n"), std::string::npos) << q.out;
    EXPECT_NE(q.out.find("accuracy: exact counts, 3 items held; 1 evicted past max_items took 1 (upper bounds include it)\n"),
              std::string::npos)
        << q.out;
    EXPECT_EQ(server.stop(), 0) << server.log();  // a checkpoint
  }
  {
    EbbServer server(dir);
    HttpClient c(server.port());
    expect_answers(c);
    server.stop_hard();
  }
  // Replay only: the log since the checkpoint is empty, so remove the
  // checkpoint and the log alone must rebuild the same table.
  std::filesystem::remove_all(dir / "checkpoints");
  {
    EbbServer server(dir);
    HttpClient c(server.port());
    expect_answers(c);
    auto r = c.request("GET", "/namespaces/scores");
    EXPECT_NE(r.body.find(R"("counting":"exact","max_items":3,)"), std::string::npos) << r.body;
    EXPECT_EQ(server.stop(), 0) << server.log();
  }
  std::filesystem::remove_all(dir);
}

TEST(ExactApi, BadEventsChangeNothing) {
  const auto dir = testing::make_temp_dir("ebb-exact-bad");
  EbbServer server(dir);
  HttpClient c(server.port());
  ASSERT_EQ(c.request("POST", "/namespaces", kCreate).status, 201);
  ASSERT_EQ(c.request("POST", "/events", kFirst).status, 204);
  // One bad event: the batch is refused whole, and nothing is admitted or evicted.
  auto r = c.request("POST", "/events", R"({"namespace":"scores","events":[{"item_id":"d","timestamp":1700003580},{"item_id":"e","weight":-1}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("weight"), std::string::npos) << r.body;
  r = c.request("GET", "/top-k?namespace=scores&window=all");
  EXPECT_NE(r.body.find(R"("evicted_items":0)"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find(R"("item_id":"d")"), std::string::npos) << r.body;
  // PATCH cannot change the counting or the cap.
  r = c.request("PATCH", "/namespaces/scores", R"({"max_items":10})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("max_items: cannot be changed at run time"), std::string::npos) << r.body;
  EXPECT_EQ(server.stop(), 0) << server.log();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
