// The accuracy self-audit through the real binary: GET /namespaces/{name}
// shows the figures the engine's audit computes for the same events (an
// undersized namespace, whose error the audit must report), /metrics
// exports them, a missed SLA is logged with the width that would meet it
// (and its recovery after a PATCH), the audit's fields are checked by name
// and fixed where they must be, and its state survives a restart and a
// crash.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "ebb/service/namespace_spec.hpp"
#include "support/ebb_server.hpp"
#include "support/error_code.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

constexpr double kStart = 1.7e9;

// A data directory for one test, removed after it.
struct TempDir {
  std::filesystem::path path = testing::make_temp_dir("ebb-audit");
  ~TempDir() { std::filesystem::remove_all(path); }
};

struct Event {
  std::string key;
  double time;
};

// `n` events over [from, from + seconds): Zipf-like keys from a fixed seed.
std::vector<Event> events(std::uint64_t seed, std::size_t n, double from, double seconds, std::size_t universe = 400) {
  std::mt19937_64 rng(seed);
  std::vector<double> cdf(universe);
  double acc = 0;
  for (std::size_t i = 0; i < universe; ++i) cdf[i] = acc += 1.0 / std::pow(i + 1.0, 1.1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Event> out;
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = std::lower_bound(cdf.begin(), cdf.end(), u(rng) * acc) - cdf.begin();
    out.push_back({"k" + std::to_string(k), std::floor(from + seconds * static_cast<double>(i) / static_cast<double>(n))});
  }
  return out;
}

void post(HttpClient& c, const std::string& ns, const std::vector<Event>& all, engine::Namespace* mirror = nullptr) {
  for (std::size_t at = 0; at < all.size(); at += 500) {
    std::string body = R"({"namespace":")" + ns + R"(","events":[)";
    std::vector<engine::Event> batch;
    for (std::size_t i = at; i < std::min(all.size(), at + 500); ++i) {
      body += std::string(i > at ? "," : "") + R"({"item_id":")" + all[i].key + R"(","timestamp":)" + std::to_string(all[i].time) + "}";
      batch.push_back({all[i].key, all[i].time, 1});
    }
    ASSERT_EQ(c.request("POST", "/events", body + "]}").status, 204);
    if (mirror) mirror->apply(batch);
  }
}

// GET /namespaces/{name} once a pass has seen the newest event `as_of` (event clock).
simdjson::dom::element audited(HttpClient& c, simdjson::dom::parser& parser, const std::string& ns, double as_of,
                               std::uint64_t min_top_compared = 0) {
  for (int i = 0; i < 300; ++i) {
    const auto r = c.request("GET", "/namespaces/" + ns);
    EXPECT_EQ(r.status, 200) << r.body;
    simdjson::dom::element doc = parser.parse(r.body);
    const auto view = doc["stats"]["views"].at(0)["audit"];
    if (!view["as_of"].is_null() && view["as_of"].get_double().value() >= as_of && view["top"]["compared"].get_uint64().value() >= min_top_compared) {
      return doc;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "no audit pass saw " << as_of;
  return parser.parse(c.request("GET", "/namespaces/" + ns).body);
}

double metric(const std::string& body, const std::string& series) {
  const auto at = body.find("\n" + series + " ");
  if (at == std::string::npos) return NAN;
  return std::stod(body.substr(at + series.size() + 2));
}

const std::string kSmall =
    R"({"name":"small","windows":["all","1m"],"sketch_width":16,"sketch_depth":2,"window_sketch_width":16,"candidates":16,"k":10,)"
    R"("clock":"event","audit_sample":32,"audit_top":0,"max_event_age":null})";

TEST(AuditApi, AnUndersizedNamespaceReportsTheErrorsTheEngineMeasuresForTheSameEvents) {
  TempDir dir;
  EbbServer server(dir.path, {"--audit-interval", "200ms"});
  HttpClient c(server.port());
  ASSERT_EQ(c.request("POST", "/namespaces", kSmall).status, 201);
  engine::Namespace mirror(service::parse_namespace_spec(kSmall, service::ServiceLimits{}).config);
  const auto stream = events(1, 6000, kStart, 120);  // 50 events a second: more items per bucket than its 16 candidates
  post(c, "small", stream, &mirror);
  mirror.audit_pass();
  const auto want = mirror.stats();
  simdjson::dom::parser parser;
  const auto doc = audited(c, parser, "small", stream.back().time);
  const auto audit = doc["stats"]["audit"];
  EXPECT_EQ(audit["sampled_items"].get_uint64().value(), want.audit.sampled_items);
  EXPECT_LE(want.audit.sampled_items, 32u);
  EXPECT_GT(want.audit.sampled_items, 8u);
  EXPECT_EQ(audit["sample_share"].get_double().value(), want.audit.sample_share);
  EXPECT_TRUE(audit["from_start"].get_bool().value());
  for (std::size_t v = 0; v < 2; ++v) {
    const auto got = doc["stats"]["views"].at(v)["audit"];
    const auto& w = want.views[v].audit;
    SCOPED_TRACE(want.views[v].view.label());
    EXPECT_EQ(got["compared"].get_uint64().value(), w.compared);
    EXPECT_EQ(got["max_error"].get_double().value(), w.max_error);
    EXPECT_EQ(got["max_relative_error"].get_double().value(), w.max_relative_error);
    EXPECT_EQ(got["outside_bound"].get_uint64().value(), w.outside_bound);
    EXPECT_EQ(got["error_bound"].get_double().value(), w.error_bound);
    EXPECT_GT(w.max_error, 0) << "a 16-wide sketch over 400 items must over-count some sampled item";
    EXPECT_TRUE(got["sla_met"].is_null()) << "no top item compared";
  }
  // /metrics: the last pass's figures, and a histogram of every comparison.
  const std::string m = c.request("GET", "/metrics").body;
  EXPECT_EQ(metric(m, R"(ebb_audit_max_relative_error{namespace="small",view="window=all"})"), want.views[0].audit.max_relative_error) << m;
  EXPECT_EQ(metric(m, R"(ebb_audit_max_relative_error{namespace="small",view="window=1m"})"), want.views[1].audit.max_relative_error);
  const double count = metric(m, R"(ebb_audit_relative_error_count{namespace="small",view="window=all"})");
  EXPECT_GE(count, static_cast<double>(want.views[0].audit.compared));
  EXPECT_EQ(metric(m, R"(ebb_audit_relative_error_bucket{namespace="small",view="window=all",le="+Inf"})"), count);
}

TEST(AuditApi, AMissedSlaIsLoggedWithTheWidthThatWouldMeetItAndItsRecoveryAfterAPatch) {
  TempDir dir;
  EbbServer server(dir.path, {"--audit-interval", "200ms"});
  HttpClient c(server.port());
  ASSERT_EQ(c.request("POST", "/namespaces",
                      R"({"name":"narrow","windows":["1m"],"window_sketch_width":16,"sketch_depth":2,"candidates":16,"k":10,)"
                      R"("clock":"event","audit_sample":0,"audit_top":10,"audit_sla":0.01,"max_event_age":null})")
                .status,
            201);
  // Top items are tracked from a pass after the first part; the window
  // compares them once it starts after that.
  const auto first = events(2, 3000, kStart, 600, 2000), second = events(3, 3000, kStart + 600, 600, 2000);
  post(c, "narrow", first);
  simdjson::dom::parser parser;
  audited(c, parser, "narrow", first.back().time);
  post(c, "narrow", second);
  const auto doc = audited(c, parser, "narrow", second.back().time, 1);
  const auto view = doc["stats"]["views"].at(0)["audit"];
  EXPECT_FALSE(view["sla_met"].get_bool().value()) << simdjson::to_string(doc);
  EXPECT_GT(view["top"]["max_error_share"].get_double().value(), 0.01);
  const std::uint64_t width = view["suggested_sketch_width"].get_uint64().value();
  EXPECT_GE(width, 32u);
  EXPECT_EQ(width & (width - 1), 0u) << "a power of two";
  const std::string log = server.log();
  EXPECT_NE(log.find("namespace 'narrow' window 1m: the accuracy audit found a top item off by"), std::string::npos) << log;
  EXPECT_NE(log.find("would meet it: PATCH window_sketch_width " + std::to_string(width)), std::string::npos) << log;

  // A looser SLA: met at the next pass, and logged.
  ASSERT_EQ(c.request("PATCH", "/namespaces/narrow", R"({"audit_sla":1})").status, 200);
  for (int i = 0; i < 100 && server.log().find("within the SLA of 100% again") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(server.log().find("namespace 'narrow' window 1m: the accuracy audit finds its top items within the SLA of 100% again"), std::string::npos);
  const auto after = parser.parse(c.request("GET", "/namespaces/narrow").body);
  EXPECT_EQ(after["audit_sla"].get_double().value(), 1);
  EXPECT_TRUE(after["stats"]["views"].at(0)["audit"]["sla_met"].get_bool().value());
  EXPECT_TRUE(after["stats"]["views"].at(0)["audit"]["suggested_sketch_width"].is_null());
  // Breached again, then no SLA at all: said once, and nothing to meet.
  ASSERT_EQ(c.request("PATCH", "/namespaces/narrow", R"({"audit_sla":0.01})").status, 200);
  auto warnings = [&] {
    const std::string l = server.log();
    std::size_t n = 0;
    for (auto at = l.find("past the SLA of 1%"); at != std::string::npos; at = l.find("past the SLA of 1%", at + 1)) ++n;
    return n;
  };
  for (int i = 0; i < 100 && warnings() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(warnings(), 2u) << server.log();
  ASSERT_EQ(c.request("PATCH", "/namespaces/narrow", R"({"audit_sla":null})").status, 200);
  for (int i = 0; i < 100 && server.log().find("audit_sla cleared") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(server.log().find("namespace 'narrow' window 1m: the accuracy audit has no SLA any more (audit_sla cleared)"), std::string::npos)
      << server.log();
  const auto cleared = parser.parse(c.request("GET", "/namespaces/narrow").body);
  EXPECT_TRUE(cleared["audit_sla"].is_null());
  EXPECT_TRUE(cleared["stats"]["views"].at(0)["audit"]["sla_met"].is_null());
}

TEST(AuditApi, TheAuditsFieldsAreCheckedByNameAndFixedWhereTheyMustBe) {
  TempDir dir;
  EbbServer server(dir.path);
  HttpClient c(server.port());
  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"name":"a","audit_sla":0})", "audit_sla"},
           {R"({"name":"a","audit_sla":1.5})", "audit_sla"},
           {R"({"name":"a","audit_sla":"1%"})", "audit_sla"},
           {R"({"name":"a","audit_top":101})", "audit_top"},
           {R"({"name":"a","audit_sample":-1})", "audit_sample"},
           {R"({"name":"a","audit_sample":10001})", "audit_sample"}}) {
    const auto r = c.request("POST", "/namespaces", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_NE(r.body.find("\"" + field + ": "), std::string::npos) << r.body;
  }
  EXPECT_EQ(c.request("GET", "/namespaces/a").status, 404);
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"a","audit_sample":0,"audit_top":0,"audit_sla":null})").status, 201);
  simdjson::dom::parser parser;
  const auto doc = parser.parse(c.request("GET", "/namespaces/a").body);
  EXPECT_TRUE(doc["stats"]["audit"].is_null());
  EXPECT_TRUE(doc["audit_sla"].is_null());
  EXPECT_EQ(doc["stats"]["views"].at(0)["audit"].error(), simdjson::NO_SUCH_FIELD);
  for (const std::string field : {"audit_sample", "audit_top"}) {
    const auto r = c.request("PATCH", "/namespaces/a", "{\"" + field + "\":5}");
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find(field + ": cannot be changed at run time"), std::string::npos) << r.body;
  }
  EXPECT_EQ(c.request("PATCH", "/namespaces/a", R"({"audit_sla":0})").status, 400);
  // No SLA without an audit, at creation or later.
  const auto sla = c.request("PATCH", "/namespaces/a", R"({"audit_sla":0.5})");
  EXPECT_EQ(sla.status, 400);
  EXPECT_NE(sla.body.find("audit_sla: needs an accuracy audit"), std::string::npos) << sla.body;
  const auto created = c.request("POST", "/namespaces", R"({"name":"c","audit_sample":0,"audit_top":0,"audit_sla":0.5})");
  EXPECT_EQ(created.status, 400);
  EXPECT_NE(created.body.find("audit_sla: needs an accuracy audit"), std::string::npos) << created.body;
  EXPECT_TRUE(parser.parse(c.request("POST", "/namespaces", R"({"name":"d","audit_sample":0,"audit_top":0})").body)["audit_sla"].is_null());
  const auto defaults = parser.parse(c.request("POST", "/namespaces", R"({"name":"b"})").body);
  EXPECT_EQ(defaults["audit_sample"].get_uint64().value(), 64u);
  EXPECT_EQ(defaults["audit_top"].get_uint64().value(), 10u);
  EXPECT_EQ(defaults["audit_sla"].get_double().value(), 0.01);
}

TEST(AuditApi, TheSampleAndItsExactCountsSurviveARestartAndACrash) {
  const TempDir temp;
  const auto& dir = temp.path;
  const auto first = events(4, 2000, kStart, 300), second = events(5, 2000, kStart + 300, 300);
  engine::Namespace mirror(service::parse_namespace_spec(kSmall, service::ServiceLimits{}).config);
  {
    EbbServer server(dir, {"--audit-interval", "200ms"});
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", kSmall).status, 201);
    post(c, "small", first, &mirror);
    EXPECT_EQ(server.stop(), 0);  // a checkpoint holds the audit
  }
  {
    EbbServer server(dir, {"--audit-interval", "200ms"});
    HttpClient c(server.port());
    post(c, "small", second, &mirror);
    server.stop_hard();  // the second part is in the log only
  }
  EbbServer server(dir, {"--audit-interval", "200ms"});
  HttpClient c(server.port());
  mirror.audit_pass();
  const auto want = mirror.stats();
  simdjson::dom::parser parser;
  const auto doc = audited(c, parser, "small", second.back().time);
  EXPECT_TRUE(doc["stats"]["audit"]["from_start"].get_bool().value());
  EXPECT_EQ(doc["stats"]["audit"]["sampled_items"].get_uint64().value(), want.audit.sampled_items);
  for (std::size_t v = 0; v < 2; ++v) {
    const auto got = doc["stats"]["views"].at(v)["audit"];
    EXPECT_EQ(got["compared"].get_uint64().value(), want.views[v].audit.compared);
    EXPECT_EQ(got["max_error"].get_double().value(), want.views[v].audit.max_error);
    EXPECT_EQ(got["max_relative_error"].get_double().value(), want.views[v].audit.max_relative_error);
  }
}

// A data directory with an audited namespace (namespace state version 3,
// the audit blob), checked in: written by
//   create golden_audit (event clock; windows all + 1m, half-life 1h;
//   sketch 16 x 2, window sketch 16, 4 candidates, k 2; audit_sample 3,
//   audit_top 2); one batch of 288 events of a..h over a minute from
//   1700000000; passes every 200 ms for a second; SIGTERM (checkpoint:
//   records 1-2, the audit's sample and top items with their exact counts);
//   restart; batch: a at 1700000070, h x 3 at 1700000071; SIGKILL (record 3
//   in the log only).
TEST(AuditApi, ADataDirectoryWithAnAuditedNamespaceLoads) {
  const TempDir temp;
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v9", temp.path, std::filesystem::copy_options::recursive);
  EbbServer server(temp.path, {"--audit-interval", "200ms", "--checkpoint-interval", "1h"});
  HttpClient c(server.port());
  simdjson::dom::parser parser;
  // Once the items the log's batch put on top are tracked (the pass after
  // the one that takes them in), every pass finds the same figures.
  const auto doc = audited(c, parser, "golden_audit", 1700000071, 2);
  const auto stats = doc["stats"];
  EXPECT_EQ(stats["events"].get_uint64().value(), 290u);
  EXPECT_EQ(stats["audit"]["sampled_items"].get_uint64().value(), 3u);
  EXPECT_EQ(stats["audit"]["top_items"].get_uint64().value(), 3u);
  EXPECT_EQ(stats["audit"]["sample_share"].get_double().value(), 0.25);
  EXPECT_TRUE(stats["audit"]["from_start"].get_bool().value());
  // all-time: the held items count exactly since they came in.
  const auto all = stats["views"].at(0)["audit"];
  EXPECT_EQ(all["compared"].get_uint64().value(), 6u);
  EXPECT_EQ(all["max_error"].get_double().value(), 0);
  EXPECT_EQ(all["top"]["compared"].get_uint64().value(), 2u);
  // The 1m window: its 16-wide buckets over-count a tracked item by 10.
  const auto window = stats["views"].at(1)["audit"];
  EXPECT_EQ(window["compared"].get_uint64().value(), 3u);
  EXPECT_EQ(window["max_error"].get_double().value(), 10);
  EXPECT_EQ(window["max_relative_error"].get_double().value(), 0.2452529607809616);
  EXPECT_EQ(window["top"]["max_error_share"].get_double().value(), 0.3448275862068966);
  EXPECT_FALSE(window["sla_met"].get_bool().value());
  EXPECT_EQ(window["suggested_sketch_width"].get_uint64().value(), 1024u);
  const auto decayed = stats["views"].at(2)["audit"];
  EXPECT_EQ(decayed["compared"].get_uint64().value(), 6u);
  EXPECT_EQ(decayed["max_error"].get_double().value(), 0.0028554012894730363);

  // `ebb query --audit` prints the same, a line per view.
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  const auto q = testing::run_process({EBB_BINARY, "query", "-n", "golden_audit", "--url", url, "--audit"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("accuracy audit of 'golden_audit': 3 sampled items (share 0.25 of all), 3 top items\n"), std::string::npos) << q.out;
  const auto window_line = q.out.substr(q.out.find("window=1m"));
  EXPECT_EQ(window_line.substr(0, window_line.find('\n')),
            "window=1m       2023-11-14T22:14:31Z           3            10         40.77      0.2453      0.00%     34.483%  1% missed: width 1024 would meet it")
      << q.out;
  const auto json = testing::run_process({EBB_BINARY, "query", "-n", "golden_audit", "--url", url, "--audit", "--json"});
  EXPECT_NE(json.out.find(R"("audit":{"sampled_items":3,"top_items":3,"sample_share":0.25,"from_start":true})"), std::string::npos) << json.out;
  EXPECT_NE(testing::run_process({EBB_BINARY, "query", "-n", "golden_audit", "--url", url, "--audit", "--window", "1m"}).exit_code, 0);
}

}  // namespace
}  // namespace ebb
