// GET /hot-keys and its Server-Sent Events stream against the real binary:
// an event-clock namespace fed known rates, so each answer is determined
// (a key's rate is lambda x its exact decayed count: nothing collides in
// the sketch), a stream that hears hot, cool and the end of its namespace,
// the metric labelled by key hash, the key in the log, the stream limit,
// and the detector kept across a restart.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>

#include "ebb/core/hash.hpp"
#include "support/ebb_server.hpp"
#include "support/sse_reader.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;
using testing::Notice;
using testing::parse_notice;
using testing::SseReader;

constexpr double kStart = 1.7e9;

// `per_second` events of `key` a second for `seconds` s from `from`, one
// batch a second; returns the batches' bodies.
std::string batch(const std::string& key, int per_second, double second) {
  std::string body = R"({"namespace":"hot","events":[)";
  for (int i = 0; i < per_second; ++i) {
    char t[64];
    std::snprintf(t, sizeof t, "%.17g", second + (i + 1.0) / per_second);
    body += std::string(i ? "," : "") + R"({"item_id":")" + key + R"(","timestamp":)" + t + "}";
  }
  return body + "]}";
}

// lambda x the exact decayed count at `now` of `per_second` arrivals a second
// over [from, from + seconds), spread as batch() spreads them.
double exact_rate(int per_second, double from, int seconds, double now, double half_life) {
  const double lambda = std::log(2.0) / half_life;
  double s = 0;
  for (int sec = 0; sec < seconds; ++sec) {
    for (int i = 0; i < per_second; ++i) s += std::exp(-lambda * (now - (from + sec + (i + 1.0) / per_second)));
  }
  return lambda * s;
}

class HotKeysApi : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_temp_dir("ebb-hot"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void start(std::vector<std::string> flags = {}) {
    server_ = std::make_unique<EbbServer>(dir_, std::move(flags));
    client_ = std::make_unique<HttpClient>(server_->port());
  }
  void post(const std::string& body) { ASSERT_EQ(client_->request("POST", "/events", body).status, 204) << body; }
  std::filesystem::path dir_;
  std::unique_ptr<EbbServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(HotKeysApi, KeysTurnHotAndCoolAtTheRatesTheEventsDetermine) {
  start();
  ASSERT_EQ(client_->request("POST", "/namespaces",
                             R"({"name":"hot","clock":"event","windows":["all"],"hot_key_threshold":20,"hot_key_half_life":"10s"})")
                .status,
            201);
  SseReader stream(server_->port(), "/hot-keys/stream?namespace=hot");
  EXPECT_NE(stream.head().find("200 OK"), std::string::npos) << stream.head();
  EXPECT_NE(stream.head().find("Content-Type: text/event-stream"), std::string::npos) << stream.head();
  EXPECT_EQ(stream.message(), "retry: 2000");

  // a at 40/s (2x the threshold), b at 5/s, for 20 s.
  for (int s = 0; s < 20; ++s) {
    post(batch("a", 40, kStart + s));
    post(batch("b", 5, kStart + s));
  }
  auto r = client_->request("GET", "/hot-keys?namespace=hot");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(r.body).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(double(doc["threshold"]), 20);
  EXPECT_EQ(std::string_view(doc["half_life"]), "10s");
  EXPECT_EQ(double(doc["as_of"]), kStart + 20);  // the event clock's now
  EXPECT_TRUE(bool(doc["complete"]));
  simdjson::dom::array items = doc["items"];
  ASSERT_EQ(items.size(), 1u) << r.body;
  const double want = exact_rate(40, kStart, 20, kStart + 20, 10);
  EXPECT_EQ(std::string_view(items.at(0)["item_id"]), "a");
  EXPECT_NEAR(double(items.at(0)["rate"]), want, 1e-9 * want);

  // The stream heard a turn hot, once (whichever evaluation saw it first).
  const Notice hot = parse_notice(stream.message());
  EXPECT_EQ(hot.event, "hot");
  EXPECT_EQ(hot.item_id, "a");
  EXPECT_GE(hot.rate, 20);
  EXPECT_LE(hot.since, kStart + 20);

  // The metric carries the key's hash, the log the key itself.
  const auto metrics = client_->request("GET", "/metrics").body;
  EXPECT_NE(metrics.find("ebb_hot_keys{namespace=\"hot\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("ebb_hot_key_rate{namespace=\"hot\",key_hash=\"" + key_hash_hex("a") + "\"} "), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("ebb_hot_key_transitions_total{namespace=\"hot\",event=\"hot\"} 1\n"), std::string::npos) << metrics;

  // Only b from then on: a decays to under 0.8 x 20 = 16/s. Its exact
  // rate at kStart + 20 + d is want x 2^(-d/10) (a's arrivals stop): under
  // 16 from d = 10 log2(want / 16).
  const double cool_after = 10 * std::log2(want / 16);
  for (int s = 20; s < 20 + static_cast<int>(cool_after) + 2; ++s) post(batch("b", 5, kStart + s));
  r = client_->request("GET", "/hot-keys?namespace=hot");
  EXPECT_NE(r.body.find(R"("items":[])"), std::string::npos) << r.body;
  const Notice cool = parse_notice(stream.message());
  EXPECT_EQ(cool.event, "cool");
  EXPECT_EQ(cool.item_id, "a");
  EXPECT_LT(cool.rate, 16);
  EXPECT_EQ(cool.since, hot.since);

  // Deleting the namespace ends the stream.
  ASSERT_EQ(client_->request("DELETE", "/namespaces/hot").status, 204);
  EXPECT_EQ(parse_notice(stream.message()).event, "end");
  EXPECT_EQ(stream.message(), "");
  EXPECT_TRUE(stream.closed());

  const std::string text = server_->log();
  EXPECT_NE(text.find("hot key hot: namespace=hot key=\"a\" key_hash=" + key_hash_hex("a")), std::string::npos) << text;
  EXPECT_EQ(server_->stop(), 0);
}

TEST_F(HotKeysApi, ErrorsAndLimitsAreClear) {
  start({"--max-hot-key-streams", "1"});
  ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"hot","clock":"event","hot_key_threshold":20})").status, 201);
  ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"cold","clock":"event"})").status, 201);
  auto code_of = [](const testing::HttpResult& r) {
    simdjson::dom::parser p;
    simdjson::dom::element e;
    std::string_view code;
    if (p.parse(r.body).get(e) || e["error"]["code"].get(code)) return std::string("<") + r.body + ">";
    return std::string(code);
  };
  auto r = client_->request("GET", "/hot-keys?namespace=cold");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(code_of(r), "hot_keys_off");
  EXPECT_EQ(code_of(client_->request("GET", "/hot-keys/stream?namespace=cold")), "hot_keys_off");
  EXPECT_EQ(client_->request("GET", "/hot-keys?namespace=nope").status, 404);
  EXPECT_EQ(client_->request("GET", "/hot-keys").status, 400);
  for (const auto& [body, field] : {std::pair{R"({"hot_key_threshold":0})", "hot_key_threshold"},
                                   std::pair{R"({"hot_key_threshold":"x"})", "hot_key_threshold"},
                                   std::pair{R"({"hot_key_half_life":"0.5s"})", "hot_key_half_life"},
                                   std::pair{R"({"hot_key_half_life":10})", "hot_key_half_life"}}) {
    r = client_->request("PATCH", "/namespaces/hot", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_NE(r.body.find(std::string(field) + ":"), std::string::npos) << r.body;
  }
  {
    SseReader first(server_->port(), "/hot-keys/stream?namespace=hot");
    EXPECT_NE(first.head().find("200 OK"), std::string::npos);
    r = client_->request("GET", "/hot-keys/stream?namespace=hot");
    EXPECT_EQ(r.status, 429) << r.body;
    EXPECT_EQ(code_of(r), "too_many_streams");
  }
  // The first stream's client left: its place is free again (once the
  // server has seen it go).
  bool reopened = false;
  for (int i = 0; i < 100 && !reopened; ++i) {
    SseReader again(server_->port(), "/hot-keys/stream?namespace=hot");
    reopened = again.head().find("200 OK") != std::string::npos;
    if (!reopened) usleep(20000);
  }
  EXPECT_TRUE(reopened);
  // Detection turned on at run time, off again; the settings show.
  r = client_->request("PATCH", "/namespaces/cold", R"({"hot_key_threshold":5,"hot_key_half_life":"30s"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("hot_key_threshold":5,"hot_key_half_life":"30s")"), std::string::npos) << r.body;
  EXPECT_EQ(client_->request("GET", "/hot-keys?namespace=cold").status, 200);
  ASSERT_EQ(client_->request("PATCH", "/namespaces/cold", R"({"hot_key_threshold":null})").status, 200);
  EXPECT_EQ(code_of(client_->request("GET", "/hot-keys?namespace=cold")), "hot_keys_off");
  EXPECT_EQ(server_->stop(), 0);
}

TEST_F(HotKeysApi, TheDetectorSurvivesARestartAndACrash) {
  start();
  ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"hot","clock":"event","hot_key_threshold":20})").status, 201);
  for (int s = 0; s < 20; ++s) post(batch("a", 40, kStart + s));
  const auto before = client_->request("GET", "/hot-keys?namespace=hot").body;
  EXPECT_NE(before.find(R"("item_id":"a")"), std::string::npos) << before;
  EXPECT_EQ(server_->stop(), 0);  // a checkpoint holds the detector
  start();
  EXPECT_EQ(client_->request("GET", "/hot-keys?namespace=hot").body, before);
  for (int s = 20; s < 25; ++s) post(batch("a", 40, kStart + s));
  const auto later = client_->request("GET", "/hot-keys?namespace=hot").body;
  EXPECT_EQ(server_->stop_hard(), 128 + SIGKILL);  // the log replays those batches into the detector
  start();
  const auto replayed = client_->request("GET", "/hot-keys?namespace=hot").body;
  // The same counts; the evaluation happens anew at the same event time.
  EXPECT_EQ(replayed, later);
  EXPECT_EQ(server_->stop(), 0);
}

// A stream opens with every key hot at that moment, however many bytes
// that is (over the 1 MiB a slow reader may fall behind); the hot list is
// capped at the candidates and then says it is incomplete.
TEST_F(HotKeysApi, AStreamOpensWithALargeHotSetAndTheSetIsCapped) {
  start();
  ASSERT_EQ(client_->request("POST", "/namespaces", R"({"name":"hot","clock":"event","candidates":1100,"hot_key_threshold":1})").status, 201);
  std::string body = R"({"namespace":"hot","events":[)";
  for (int i = 0; i < 1200; ++i) {
    std::string key = "tenant-" + std::to_string(i) + "-";
    key.resize(1000, 'x');
    body += std::string(i ? "," : "") + R"({"item_id":")" + key + R"(","timestamp":1700000000,"weight":1000})";
  }
  ASSERT_EQ(client_->request("POST", "/events", body + "]}").status, 204);
  auto r = client_->request("GET", "/hot-keys?namespace=hot");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find(R"("complete":false)"), std::string::npos) << r.body.substr(0, 300);
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(r.body).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(doc["items"].get_array().size(), 1100u);

  SseReader stream(server_->port(), "/hot-keys/stream?namespace=hot");
  EXPECT_EQ(stream.message(), "retry: 2000");
  std::size_t hot = 0;
  for (std::string m; hot < 1100 && !(m = stream.message()).empty();) hot += parse_notice(m).event == "hot";
  EXPECT_EQ(hot, 1100u);
  EXPECT_EQ(server_->stop(), 0);
}

}  // namespace
}  // namespace ebb
