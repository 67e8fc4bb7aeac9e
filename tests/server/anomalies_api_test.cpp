// GET /anomalies, its events on GET /hot-keys/stream and `ebb query
// --anomalies` against the real binary: a burst over a steady background is
// listed with the score, jump and ranks its events determine, the steady
// items are not; the same window two hours back comes from history; the
// stream hears each new anomaly once; bad questions are 400s naming the
// parameter and change nothing.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <map>
#include <thread>

#include "support/ebb_server.hpp"
#include "support/error_code.hpp"
#include "support/run_process.hpp"
#include "support/sse_reader.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

constexpr double kStart = 1.7e9;

struct Fixture {
  std::vector<std::pair<std::string, double>> events;  // item, time
  void add(const std::string& key, double t) { events.emplace_back(key, t); }
  std::string body(const std::string& ns) const {
    std::string out = R"({"namespace":")" + ns + R"(","events":[)";
    for (std::size_t i = 0; i < events.size(); ++i) {
      out += std::string(i ? "," : "") + R"({"item_id":")" + events[i].first + R"(","timestamp":)" + std::to_string(events[i].second) + "}";
    }
    return out + "]}";
  }
  // Counts over [start, end] and their total.
  std::map<std::string, double> counts(double start, double end, double& total) const {
    std::map<std::string, double> out;
    total = 0;
    for (const auto& [key, t] : events) {
      if (t >= start && t <= end) {
        ++out[key];
        ++total;
      }
    }
    return out;
  }
};

// An hour from `from`: s0..s4 one event every 10 s, `rising` one every
// 100 s; in the last minute `rising` 20 more and `burst` 30 (every 2 s).
Fixture hour(double from, const std::string& burst) {
  Fixture f;
  for (int s = 0; s < 3600; s += 10) {
    for (int i = 0; i < 5; ++i) f.add("s" + std::to_string(i), from + s + i);
  }
  for (int s = 0; s < 3600; s += 100) f.add("rising", from + s);
  for (int i = 0; i < 20; ++i) f.add("rising", from + 3541 + 3 * i);
  for (int i = 0; i < 30; ++i) f.add(burst, from + 3541 + 2 * i);
  f.add("s0", from + 3599);  // "now"
  return f;
}

simdjson::dom::element parse(simdjson::dom::parser& p, const std::string& body) {
  simdjson::dom::element doc;
  EXPECT_EQ(p.parse(body).get(doc), simdjson::SUCCESS) << body;
  return doc;
}

class AnomaliesApi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_temp_dir("ebb-anomalies");
    server_ = std::make_unique<EbbServer>(dir_, std::vector<std::string>{"--history-interval", "1s", "--hot-key-interval", "1s"});
    client_ = std::make_unique<HttpClient>(server_->port());
    ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"news","clock":"event","windows":["1m","1h"]})").status, 201);
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0);
    }
    std::filesystem::remove_all(dir_);
  }
  std::string get(const std::string& target, int status = 200) {
    const auto r = client_->request("GET", target);
    EXPECT_EQ(r.status, status) << target << ": " << r.body;
    return r.body;
  }
  std::filesystem::path dir_;
  std::unique_ptr<EbbServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(AnomaliesApi, ABurstIsListedWithWhatItsEventsDetermineAndTheSteadyItemsAreNot) {
  const Fixture f = hour(kStart, "breaking");
  ASSERT_EQ(client_->request("POST", "/events", f.body("news")).status, 204);

  simdjson::dom::parser p;
  const std::string body = get("/anomalies?namespace=news&window=1m&baseline=1h&min_rank_jump=5");
  auto doc = parse(p, body);
  EXPECT_EQ(std::string_view(doc["namespace"]), "news");
  EXPECT_EQ(std::string_view(doc["window_length"]), "1m");
  EXPECT_EQ(double(doc["as_of"]), kStart + 3599);
  EXPECT_EQ(std::string_view(doc["baseline"]["window_length"]), "1h");
  EXPECT_EQ(double(doc["thresholds"]["min_rank_jump"]), 5);
  EXPECT_EQ(double(doc["thresholds"]["min_jump"]), 3);
  EXPECT_EQ(double(doc["thresholds"]["min_score"]), 4);
  EXPECT_EQ(double(doc["thresholds"]["min_count"]), 5);

  // What the events say over the windows' true boundaries.
  const double cs = double(doc["window"]["start"]), ce = double(doc["window"]["end"]);
  const double bs = double(doc["baseline"]["window"]["start"]), be = double(doc["baseline"]["window"]["end"]);
  double tc = 0, tb = 0;
  const auto now = f.counts(cs, ce, tc), then = f.counts(bs, be, tb);
  EXPECT_EQ(double(doc["total"]), tc);
  EXPECT_EQ(double(doc["baseline"]["total"]), tb);
  EXPECT_EQ(uint64_t(doc["candidates"]), now.size());  // every item of the minute
  const double rate_scale = (ce - cs) / (be - bs), share_scale = tc / tb;
  auto expect_item = [&](simdjson::dom::element item, const std::string& key, std::uint64_t rank, std::uint64_t baseline_rank,
                         std::int64_t rank_jump, const std::vector<std::string>& reasons) {
    SCOPED_TRACE(key);
    EXPECT_EQ(std::string_view(item["item_id"]), key);
    const double o = now.at(key), e = std::max(then.at(key) * rate_scale, (then.at(key) + 1) * share_scale);
    EXPECT_NEAR(double(item["score"]), (o - e) / std::sqrt(e * (1 + std::max(rate_scale, share_scale)) + 1), 1e-9 * o);
    EXPECT_NEAR(double(item["jump"]), o / e, 1e-9 * o / e);
    EXPECT_NEAR(double(item["expected_count"]), e, 1e-9 * e);
    EXPECT_EQ(double(item["count"]["lower_bound"]), o);
    EXPECT_EQ(double(item["count"]["upper_bound"]), o);
    EXPECT_EQ(double(item["baseline_count"]["upper_bound"]), then.at(key));
    EXPECT_NEAR(double(item["rate"]), o / (ce - cs), 1e-12);
    EXPECT_NEAR(double(item["baseline_rate"]), then.at(key) / (be - bs), 1e-12);
    EXPECT_EQ(uint64_t(item["rank"]), rank);
    EXPECT_EQ(uint64_t(item["baseline_rank"]), baseline_rank);
    EXPECT_EQ(int64_t(item["rank_jump"]), rank_jump);
    std::vector<std::string> got;
    for (auto r : simdjson::dom::array(item["reasons"])) got.emplace_back(std::string_view(r));
    EXPECT_EQ(got, reasons);
  };
  simdjson::dom::array items = doc["items"];
  ASSERT_EQ(items.size(), 2u) << body;
  // breaking: 30 now, 30 in the hour (7th); rising: 20 now, 56 in the hour
  // (6th); s0..s4 about 6 now against 360 (1st to 5th): no jump.
  expect_item(items.at(0), "breaking", 1, 7, 6, {"rate", "rank"});
  expect_item(items.at(1), "rising", 2, 6, 4, {"rate"});

  // Thresholds narrow it; k cuts it; as of a past time from the rings.
  items = parse(p, get("/anomalies?namespace=news&window=1m&baseline=1h&min_score=15"))["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(std::string_view(items.at(0)["item_id"]), "breaking");
  items = parse(p, get("/anomalies?namespace=news&window=1m&baseline=1h&k=1"))["items"];
  ASSERT_EQ(items.size(), 1u);
  doc = parse(p, get("/anomalies?namespace=news&window=1m&baseline=1h&timestamp=" + std::to_string(kStart + 3530)));
  EXPECT_EQ(double(doc["as_of"]), kStart + 3530);
  EXPECT_EQ(std::string_view(doc["source"]), "memory");
  EXPECT_EQ(simdjson::dom::array(doc["items"]).size(), 0u);  // before the burst

  // `ebb query --anomalies` prints the same list.
  const auto q = testing::run_process({EBB_BINARY, "query", "-n", "news", "--url", "http://127.0.0.1:" + std::to_string(server_->port()),
                                       "--anomalies", "--window", "1m", "--baseline", "1h", "--min-rank-jump", "5"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("anomalies in 'news': window 1m against 1h, as of 2023-11-14T23:13:19Z"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("breaking"), std::string::npos) << q.out;
  EXPECT_LT(q.out.find("breaking"), q.out.find("rising")) << q.out;
  EXPECT_NE(q.out.find("rate,rank"), std::string::npos) << q.out;
  const auto json = testing::run_process({EBB_BINARY, "query", "-n", "news", "--url", "http://127.0.0.1:" + std::to_string(server_->port()),
                                          "--anomalies", "--window", "1m", "--baseline", "1h", "--min-rank-jump", "5", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out, body + "\n");
  const auto bad = testing::run_process({EBB_BINARY, "query", "-n", "news", "--url", "http://127.0.0.1:" + std::to_string(server_->port()),
                                         "--anomalies", "--window", "1m"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("baseline: required"), std::string::npos) << bad.err;
}

TEST_F(AnomaliesApi, BadQuestionsNameTheParameterAndChangeNothing) {
  ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"decayed","half_lives":["5m"]})").status, 201);
  const std::map<std::string, std::string> cases = {
      {"/anomalies?window=1m&baseline=1h", "namespace: is required"},
      {"/anomalies?namespace=news&baseline=1h", "window: is required"},
      {"/anomalies?namespace=news&window=1m", "baseline: required"},
      {"/anomalies?namespace=news&window=1m&baseline=1h&baseline_offset=1d", "baseline: give baseline or baseline_offset, not both"},
      {"/anomalies?namespace=news&window=5m&baseline=1h", "window: the namespace keeps no 5m window (it keeps 1m, 1h)"},
      {"/anomalies?namespace=news&window=1m&baseline=1d", "baseline: the namespace keeps no 1d window (it keeps 1m, 1h)"},
      {"/anomalies?namespace=news&window=1h&baseline=1m", "baseline: must be longer than window (1h)"},
      {"/anomalies?namespace=news&window=1m&baseline=1m", "baseline: must be longer than window (1m)"},
      {"/anomalies?namespace=news&window=1.5s&baseline=1h", "window: windows are whole seconds"},
      {"/anomalies?namespace=news&window=soon&baseline=1h", "window: "},
      {"/anomalies?namespace=news&window=1m&baseline_offset=-1h", "baseline_offset: "},
      {"/anomalies?namespace=news&window=1m&baseline=1h&min_jump=-1", "min_jump: must be a number >= 0"},
      {"/anomalies?namespace=news&window=1m&baseline=1h&min_score=nan", "min_score: must be a number >= 0"},
      {"/anomalies?namespace=news&window=1m&baseline=1h&min_count=x", "min_count: must be a number >= 0"},
      {"/anomalies?namespace=news&window=1m&baseline=1h&min_rank_jump=1001", "min_rank_jump: must be a whole number in [0, 1000]"},
      {"/anomalies?namespace=news&window=1m&baseline=1h&k=0", "k: must be a whole number"},
      {"/anomalies?namespace=news&window=1m&baseline=1h&timestamp=-5", "timestamp: "},
      {"/anomalies?namespace=decayed&window=1m&baseline=1h", "window: the namespace keeps no 1m window (it keeps none)"},
      {"/hot-keys/stream?namespace=news&window=1m&baseline=1h&timestamp=5", "timestamp: a stream follows now"},
      {"/hot-keys/stream?namespace=news&window=1m", "baseline: required"},
      {"/hot-keys/stream?namespace=news&baseline=1h", "window: is required with baseline (anomaly events)"},
      {"/anomalies?namespace=news&window=1m&baseline_offset=30s", "baseline_offset: must be at least the window (1m)"},
  };
  for (const auto& [target, message] : cases) {
    SCOPED_TRACE(target);
    const auto r = client_->request("GET", target);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(testing::error_code_of(r), "bad_parameter");
    EXPECT_NE(r.body.find(message), std::string::npos) << r.body;
  }
  EXPECT_EQ(client_->request("GET", "/anomalies?namespace=nope&window=1m&baseline=1h").status, 404);
  EXPECT_NE(get("/namespaces/news").find(R"("events":0,)"), std::string::npos);
  // A day back is past the rings (the 1h level keeps 75 minutes) and no
  // history is that old: the offset has nothing to compare with.
  ASSERT_EQ(client_->request("POST", "/events", hour(kStart, "breaking").body("news")).status, 204);
  const auto r = client_->request("GET", "/anomalies?namespace=news&window=1m&baseline_offset=1d");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(testing::error_code_of(r), "history_unavailable");
  EXPECT_NE(r.body.find("baseline_offset: no snapshot of the window 1m view at or before it"), std::string::npos) << r.body;
}

TEST_F(AnomaliesApi, TheSameWindowTwoHoursBackComesFromHistory) {
  ASSERT_EQ(client_->request("POST", "/events", hour(kStart, "breaking").body("news")).status, 204);
  // The history thread's snapshot of that hour's last minute.
  bool kept = false;
  for (int i = 0; i < 500 && !kept; ++i) {
    kept = get("/history?namespace=news&item_id=breaking&window=1m&from=0&to=2e9").find(R"("rank":1)") != std::string::npos;
    if (!kept) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(kept);
  // Two hours later (past the rings' 75 minutes) the same minute holds the
  // steady items and `late`.
  Fixture next;
  for (int i = 0; i < 5; ++i) {
    for (int s = 3540; s < 3600; s += 10) next.add("s" + std::to_string(i), kStart + 7200 + s + i);
  }
  for (int i = 0; i < 30; ++i) next.add("late", kStart + 7200 + 3541 + 2 * i);
  next.add("s0", kStart + 10799);
  ASSERT_EQ(client_->request("POST", "/events", next.body("news")).status, 204);

  simdjson::dom::parser p;
  const std::string body = get("/anomalies?namespace=news&window=1m&baseline_offset=2h");
  auto doc = parse(p, body);
  EXPECT_EQ(double(doc["as_of"]), kStart + 10799);
  EXPECT_EQ(std::string_view(doc["baseline"]["offset"]), "2h");
  EXPECT_EQ(std::string_view(doc["baseline"]["source"]), "history");
  EXPECT_LE(double(doc["baseline"]["as_of"]), kStart + 3599);
  simdjson::dom::array items = doc["items"];
  ASSERT_EQ(items.size(), 1u) << body;
  auto late = items.at(0);
  EXPECT_EQ(std::string_view(late["item_id"]), "late");
  EXPECT_EQ(double(late["count"]["lower_bound"]), 30);
  EXPECT_TRUE(late["baseline_rank"].is_null());
  EXPECT_TRUE(late["baseline_count"]["estimated_count"].is_null());  // not in the list kept then: only bounded
  EXPECT_TRUE(late["baseline_rate"].is_null());
}

TEST_F(AnomaliesApi, TheHotKeyStreamHearsEachNewAnomalyOnce) {
  ASSERT_EQ(client_->request("POST", "/events", hour(kStart, "breaking").body("news")).status, 204);
  // Detection is off: the stream carries the anomalies alone.
  testing::SseReader stream(server_->port(), "/hot-keys/stream?namespace=news&window=1m&baseline=1h");
  EXPECT_NE(stream.head().find("200 OK"), std::string::npos) << stream.head();
  EXPECT_EQ(stream.message(), "retry: 2000");
  auto event_of = [](const std::string& m) { return m.substr(0, m.find('\n')); };
  std::string m = stream.message();
  EXPECT_EQ(event_of(m), "event: anomaly");
  EXPECT_NE(m.find(R"("item_id":"breaking","as_of":)" + std::to_string(static_cast<long long>(kStart + 3599))), std::string::npos) << m;
  m = stream.message();
  EXPECT_NE(m.find(R"("item_id":"rising")"), std::string::npos) << m;
  // A second burst, a few seconds on: heard once, at the next evaluations.
  Fixture more;
  for (int i = 0; i < 40; ++i) more.add("second", kStart + 3600 + i * 0.1);
  ASSERT_EQ(client_->request("POST", "/events", more.body("news")).status, 204);
  for (m = stream.message(); m.rfind(": keep-alive", 0) == 0; m = stream.message()) {
  }
  EXPECT_EQ(event_of(m), "event: anomaly");
  EXPECT_NE(m.find(R"("item_id":"second")"), std::string::npos) << m;
  // Later passes tell nobody again (each item stays anomalous); deleting
  // the namespace ends the stream.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ASSERT_EQ(client_->request("DELETE", "/namespaces/news").status, 204);
  for (m = stream.message(); m.rfind(": keep-alive", 0) == 0; m = stream.message()) {
  }
  EXPECT_EQ(m, "event: end\ndata: {\"reason\":\"namespace deleted\"}");
  EXPECT_EQ(stream.message(), "");
  EXPECT_TRUE(stream.closed());
}

TEST_F(AnomaliesApi, AnomalyStreamsAreBoundedAndARefusedOneChangesNothing) {
  server_->stop();
  server_ = std::make_unique<EbbServer>(dir_, std::vector<std::string>{"--max-hot-key-streams", "1", "--hot-key-interval", "1s"});
  client_ = std::make_unique<HttpClient>(server_->port());
  ASSERT_EQ(client_->request("POST", "/events", hour(kStart, "breaking").body("news")).status, 204);
  {
    testing::SseReader first(server_->port(), "/hot-keys/stream?namespace=news&window=1m&baseline=1h");
    EXPECT_EQ(first.message(), "retry: 2000");
    auto r = client_->request("GET", "/hot-keys/stream?namespace=news&window=1m&baseline=1h");
    EXPECT_EQ(r.status, 429) << r.body;
    EXPECT_EQ(testing::error_code_of(r), "too_many_streams");
    // Hot-key and anomaly streams share the limit.
    ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"hot","hot_key_threshold":5})").status, 201);
    r = client_->request("GET", "/hot-keys/stream?namespace=hot");
    EXPECT_EQ(r.status, 429) << r.body;
  }
  // The first stream's client left: its place is free again (once the
  // server noticed), and the refused one took none.
  bool opened = false;
  for (int i = 0; i < 200 && !opened; ++i) {
    testing::SseReader again(server_->port(), "/hot-keys/stream?namespace=news&window=1m&baseline=1h");
    opened = again.head().find("200 OK") != std::string::npos;
    if (!opened) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(opened);
}

}  // namespace
}  // namespace ebb
