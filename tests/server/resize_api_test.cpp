// Resizing a namespace through the real binary: audit_resize widens an
// undersized namespace whose top items miss their SLA (a PATCH in the log:
// a restart after a crash replays it at the same point and answers byte
// for byte as before), a PATCH of sketch_width or window_sketch_width
// widens by hand, and every width or setting that cannot be is refused by
// name with nothing changed.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "support/ebb_server.hpp"
#include "support/error_code.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

constexpr double kStart = 1.7e9;

struct TempDir {
  std::filesystem::path path = testing::make_temp_dir("ebb-resize");
  ~TempDir() { std::filesystem::remove_all(path); }
};

// `n` events over [from, from + seconds): Zipf-like keys from a fixed seed,
// posted in batches of 500.
void post(HttpClient& c, const std::string& ns, std::uint64_t seed, std::size_t n, double from, double seconds, std::size_t universe = 2000) {
  std::mt19937_64 rng(seed);
  std::vector<double> cdf(universe);
  double acc = 0;
  for (std::size_t i = 0; i < universe; ++i) cdf[i] = acc += 1.0 / std::pow(i + 1.0, 1.1);
  std::uniform_real_distribution<double> u(0, 1);
  for (std::size_t at = 0; at < n; at += 500) {
    std::string body = R"({"namespace":")" + ns + R"(","events":[)";
    for (std::size_t i = at; i < std::min(n, at + 500); ++i) {
      const auto k = std::lower_bound(cdf.begin(), cdf.end(), u(rng) * acc) - cdf.begin();
      const double t = std::floor(from + seconds * static_cast<double>(i) / static_cast<double>(n));
      body += std::string(i > at ? "," : "") + R"({"item_id":"k)" + std::to_string(k) + R"(","timestamp":)" + std::to_string(t) + "}";
    }
    ASSERT_EQ(c.request("POST", "/events", body + "]}").status, 204);
  }
}

std::uint64_t width_of(HttpClient& c, const std::string& ns, const char* field) {
  simdjson::dom::parser parser;
  const auto r = c.request("GET", "/namespaces/" + ns);
  EXPECT_EQ(r.status, 200) << r.body;
  return parser.parse(r.body)[field].get_uint64().value();
}

const std::string kNarrow =
    R"({"name":"narrow","windows":["all","1m"],"sketch_width":16,"sketch_depth":2,"window_sketch_width":16,"candidates":16,"k":10,)"
    R"("clock":"event","audit_sample":0,"audit_top":10,"audit_sla":0.01,"audit_resize":true,"max_event_age":null})";

TEST(ResizeApi, AuditResizeWidensAnUndersizedNamespaceAtALoggedPointThatACrashReplays) {
  TempDir dir;
  std::string top_all, top_window, counts;
  std::uint64_t views = 0, windows = 0;
  {
    EbbServer server(dir.path, {"--audit-interval", "200ms", "--checkpoint-interval", "1h"});
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", kNarrow).status, 201);
    // Top items are taken in at a pass after the first part and compared
    // from the next; the window once it starts after that.
    post(c, "narrow", 1, 3000, kStart, 600);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    post(c, "narrow", 2, 3000, kStart + 600, 600);
    for (int i = 0; i < 100 && (width_of(c, "narrow", "sketch_width") == 16 || width_of(c, "narrow", "window_sketch_width") == 16); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // Off from here (a PATCH like any other): no further resize while the
    // test reads what this one did.
    ASSERT_EQ(c.request("PATCH", "/namespaces/narrow", R"({"audit_resize":false})").status, 200);
    views = width_of(c, "narrow", "sketch_width");
    windows = width_of(c, "narrow", "window_sketch_width");
    EXPECT_GT(views, 16u);
    EXPECT_GT(windows, 16u);
    EXPECT_EQ(views & (views - 1), 0u) << "a power of two";
    const std::string log = server.log();
    EXPECT_NE(log.find("namespace 'narrow': audit_resize widened its sketches (sketch_width 16 -> "), std::string::npos) << log;
    EXPECT_NE(log.find("window_sketch_width 16 -> "), std::string::npos) << log;
    // The audit compares afresh: the widened views answer from it.
    simdjson::dom::parser parser;
    const auto doc = parser.parse(c.request("GET", "/namespaces/narrow").body);
    EXPECT_FALSE(doc["stats"]["audit"]["from_start"].get_bool().value());
    EXPECT_EQ(doc["accuracy"]["epsilon"].get_double().value(), std::exp(1.0) / static_cast<double>(views));
    // More events, counted at the new width; then a crash (the patch and
    // the batches after it are in the log only: no checkpoint since).
    post(c, "narrow", 3, 2000, kStart + 1200, 120);
    top_all = c.request("GET", "/top-k?namespace=narrow&window=all&k=10").body;
    top_window = c.request("GET", "/top-k?namespace=narrow&window=1m&k=10").body;
    counts = c.request("GET", "/count?namespace=narrow&item_id=k7&window=all").body;
    server.stop_hard();
  }
  EbbServer server(dir.path, {"--audit-interval", "0"});
  HttpClient c(server.port());
  EXPECT_EQ(width_of(c, "narrow", "sketch_width"), views);
  EXPECT_EQ(width_of(c, "narrow", "window_sketch_width"), windows);
  EXPECT_EQ(c.request("GET", "/top-k?namespace=narrow&window=all&k=10").body, top_all);
  EXPECT_EQ(c.request("GET", "/top-k?namespace=narrow&window=1m&k=10").body, top_window);
  EXPECT_EQ(c.request("GET", "/count?namespace=narrow&item_id=k7&window=all").body, counts);
  // And a clean stop: the checkpoint holds the mixed widths.
  EXPECT_EQ(server.stop(), 0);
  EbbServer again(dir.path, {"--audit-interval", "0"});
  HttpClient c2(again.port());
  EXPECT_EQ(c2.request("GET", "/top-k?namespace=narrow&window=1m&k=10").body, top_window);
  EXPECT_EQ(c2.request("GET", "/top-k?namespace=narrow&window=all&k=10").body, top_all);
}

TEST(ResizeApi, APatchWidensByHandAndWhatCannotBeIsRefusedByName) {
  TempDir dir;
  EbbServer server(dir.path, {"--max-namespace-bytes", "67108864"});
  HttpClient c(server.port());
  ASSERT_EQ(c.request("POST", "/namespaces",
                      R"({"name":"hand","windows":["all","1m"],"sketch_width":1024,"sketch_depth":3,"window_sketch_width":256,"clock":"event"})")
                .status,
            201);
  post(c, "hand", 4, 2000, kStart, 100);
  const std::string before = c.request("GET", "/top-k?namespace=hand&window=all&k=10").body;
  auto refused = [&](const std::string& ns, const std::string& body, const std::string& field) {
    const auto r = c.request("PATCH", "/namespaces/" + ns, body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    EXPECT_NE(r.body.find("\"" + field + ": "), std::string::npos) << r.body;
  };
  refused("hand", R"({"sketch_width":512})", "sketch_width");                // narrower
  refused("hand", R"({"sketch_width":"wide"})", "sketch_width");
  refused("hand", R"({"sketch_width":134217728})", "sketch_width");          // past --max-namespace-bytes
  refused("hand", R"({"sketch_depth":4})", "sketch_depth");                  // fixed
  refused("hand", R"({"audit_resize":"yes"})", "audit_resize");
  refused("hand", R"({"window_sketch_width":128})", "window_sketch_width");
  EXPECT_EQ(width_of(c, "hand", "sketch_width"), 1024u);
  EXPECT_EQ(c.request("GET", "/top-k?namespace=hand&window=all&k=10").body, before) << "a refusal changes nothing";

  // 3000 rounds up to 4096, as at creation; the answers at once are the
  // same items with the same counts.
  const auto ok = c.request("PATCH", "/namespaces/hand", R"({"sketch_width":3000,"window_sketch_width":1024})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(width_of(c, "hand", "sketch_width"), 4096u);
  EXPECT_EQ(width_of(c, "hand", "window_sketch_width"), 1024u);
  simdjson::dom::parser p1, p2;
  const auto a = p1.parse(before), b = p2.parse(c.request("GET", "/top-k?namespace=hand&window=all&k=10").body);
  ASSERT_EQ(a["items"].get_array().size(), b["items"].get_array().size());
  for (std::size_t i = 0; i < a["items"].get_array().size(); ++i) {
    EXPECT_EQ(a["items"].at(i)["item_id"].get_string().value(), b["items"].at(i)["item_id"].get_string().value());
    EXPECT_EQ(a["items"].at(i)["estimated_count"].get_double().value(), b["items"].at(i)["estimated_count"].get_double().value());
  }

  // Other namespaces: exact counting has no sketch; a memory budget fixes
  // the views' width; no windows, no window width; no audit, no audit_resize.
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"exact","counting":"exact","max_items":1000})").status, 201);
  refused("exact", R"({"sketch_width":4096})", "sketch_width");
  refused("exact", R"({"audit_resize":true})", "audit_resize");
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"budget","memory":"256KiB"})").status, 201);
  refused("budget", R"({"sketch_width":65536})", "sketch_width");
  refused("budget", R"({"audit_resize":true})", "audit_resize");
  refused("budget", R"({"window_sketch_width":65536})", "window_sketch_width");
  // A memory budget sizes the views only: its windows' buckets can grow.
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"budget2","memory":"256KiB","windows":["all","1m"],"window_sketch_width":1024})").status, 201);
  refused("budget2", R"({"sketch_width":65536})", "sketch_width");
  EXPECT_EQ(c.request("PATCH", "/namespaces/budget2", R"({"window_sketch_width":2048})").status, 200);
  EXPECT_EQ(width_of(c, "budget2", "window_sketch_width"), 2048u);
  // audit_resize judges by audit_sla: not without one.
  refused("hand", R"({"audit_sla":null,"audit_resize":true})", "audit_resize");
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"plain","audit_sample":0,"audit_top":0})").status, 201);
  refused("plain", R"({"audit_resize":true})", "audit_resize");
  const auto bad_create = c.request("POST", "/namespaces", R"({"name":"x","audit_sample":0,"audit_top":0,"audit_resize":true})");
  EXPECT_EQ(bad_create.status, 400);
  EXPECT_NE(bad_create.body.find("audit_resize: "), std::string::npos) << bad_create.body;
  // Turned on and off by PATCH.
  ASSERT_EQ(c.request("PATCH", "/namespaces/hand", R"({"audit_resize":true})").status, 200);
  simdjson::dom::parser p3;
  EXPECT_TRUE(p3.parse(c.request("GET", "/namespaces/hand").body)["audit_resize"].get_bool().value());
  ASSERT_EQ(c.request("PATCH", "/namespaces/hand", R"({"audit_resize":false})").status, 200);
}

// A data directory with a resized namespace, checked in: written by
//   create golden_resize (event clock; windows all, 1m, 1h; half-life 1h;
//   sketch 16 x 2, window sketch 16, 4 candidates, k 2; no audit); 288
//   events of a..h over a minute from 1700000000; PATCH sketch_width 32,
//   window_sketch_width 32; 100 events over 20 s; SIGTERM (checkpoint:
//   decayed views version 3 with their carried error, time rings version 3
//   with 16-wide buckets beside 32-wide ones); restart; a, h x 3; PATCH
//   sketch_width 64; b x 2; SIGKILL (the PATCH and the batches around it in
//   the log only: replayed). A build that changes how either loads fails
//   here.
TEST(ResizeApi, ADataDirectoryWithAResizedNamespaceLoads) {
  const TempDir temp;
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v10", temp.path, std::filesystem::copy_options::recursive);
  EbbServer server(temp.path, {"--audit-interval", "0", "--checkpoint-interval", "1h"});
  HttpClient c(server.port());
  EXPECT_EQ(width_of(c, "golden_resize", "sketch_width"), 64u);
  EXPECT_EQ(width_of(c, "golden_resize", "window_sketch_width"), 32u);
  EXPECT_EQ(c.request("GET", "/top-k?namespace=golden_resize&window=all").body,
            R"({"namespace":"golden_resize","window":{"start":1700000000,"end":1700000092},"as_of":1700000092,"items":[{"item_id":"b","estimated_count":51,"lower_bound":2,"upper_bound":51,"rank":1},{"item_id":"h","estimated_count":51,"lower_bound":2,"upper_bound":51,"rank":2}],"total":394,"accuracy":{"type":"count_min_sketch","epsilon":0.04247315356967258,"confidence":0.8646647167633873,"max_error":57.84843516189405,"guarantee_threshold":50,"candidates":4,"undersized":false,"tail_uncertain":true,"unlisted_upper_bound":50}})");
  EXPECT_EQ(c.request("GET", "/top-k?namespace=golden_resize&window=1m").body,
            R"({"namespace":"golden_resize","window":{"start":1700000032,"end":1700000092},"window_length":"1m","as_of":1700000092,"granularity":1,"items":[{"item_id":"b","estimated_count":32,"lower_bound":5,"upper_bound":32,"rank":1},{"item_id":"h","estimated_count":32,"lower_bound":7,"upper_bound":32,"rank":2}],"total":240,"accuracy":{"type":"count_min_sketch","epsilon":0.08494630713934516,"confidence":0.8646647167633873,"max_error":23.615073384737954,"guarantee_threshold":32,"candidates":4,"undersized":false,"tail_uncertain":true,"unlisted_upper_bound":32}})");
  EXPECT_EQ(c.request("GET", "/top-k?namespace=golden_resize&window=1h").body,
            R"({"namespace":"golden_resize","window":{"start":1699996440,"end":1700000092},"window_length":"1h","as_of":1700000092,"granularity":60,"items":[{"item_id":"b","estimated_count":51,"lower_bound":3,"upper_bound":51,"rank":1},{"item_id":"h","estimated_count":51,"lower_bound":3,"upper_bound":51,"rank":2}],"total":394,"accuracy":{"type":"count_min_sketch","epsilon":0.08494630713934516,"confidence":0.8646647167633873,"max_error":33.468845012901994,"guarantee_threshold":49,"candidates":4,"undersized":false,"tail_uncertain":true,"unlisted_upper_bound":50}})");
  EXPECT_EQ(c.request("GET", "/top-k?namespace=golden_resize&half_life=1h").body,
            R"({"namespace":"golden_resize","half_life":"1h","as_of":1700000092,"items":[{"item_id":"h","estimated_count":50.51617953043551,"lower_bound":2.999422432953952,"upper_bound":50.516179530435515,"rank":1},{"item_id":"b","estimated_count":50.513680344689554,"lower_bound":15.938149503335614,"upper_bound":50.513680344689554,"rank":2}],"total":390.11886827614217,"accuracy":{"type":"count_min_sketch","epsilon":0.04247315356967258,"confidence":0.8646647167633873,"max_error":57.2258566873059,"guarantee_threshold":49.49952386032964,"candidates":4,"undersized":false,"tail_uncertain":true,"unlisted_upper_bound":49.511571869289526}})");
}

}  // namespace
}  // namespace ebb
