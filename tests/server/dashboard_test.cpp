// The dashboard (GET /): the page and its files as HTTP serves them, then
// the page itself in headless Chromium against the real binary: it opens
// on the busiest namespace, shows the top items in order with their counts
// and [lower, upper] bounds, updates without a reload when events arrive
// (rows holding their place), follows deep links, draws an item's history,
// lists hot keys and trending items, asks for a token when reads need one,
// and fits a phone's screen.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <ctime>
#include <fstream>

#include "support/ebb_server.hpp"
#include "support/headless_browser.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HeadlessBrowser;
using testing::HttpClient;

void create(HttpClient& client, const std::string& body) {
  const auto r = client.request("POST", "/namespaces", body);
  ASSERT_EQ(r.status, 201) << r.body;
}

void send(HttpClient& client, const std::string& body) {
  const auto r = client.request("POST", "/events", body);
  ASSERT_EQ(r.status, 204) << r.body;
}

std::string base(const EbbServer& server) { return "http://127.0.0.1:" + std::to_string(server.port()); }

// "item=count" for each listed row of the top list, in order.
constexpr const char* kRows =
    "[...document.querySelectorAll('#top-list li[data-item]')].map(li => li.dataset.item + '=' + li.querySelector('.count').textContent).join(',')";

// Each test's data directory (and token file) goes when the test ends.
class WithTempDir : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_temp_dir("ebb-dash"); }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::filesystem::path dir_;
};
class Dashboard : public WithTempDir {};
class DashboardBrowser : public WithTempDir {};

TEST_F(Dashboard, ServesThePageAndItsFilesWithoutAToken) {
  const auto& dir = dir_;
  const auto tokens = dir / "tokens";
  std::ofstream(tokens) << "s3cret-token-value\n";
  std::filesystem::permissions(tokens, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EbbServer server(dir / "data", {"--auth-token-file", tokens.string(), "--auth-reads"});
  HttpClient client(server.port());

  const auto page = client.request("GET", "/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.headers.at("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script src=\"/dashboard/dashboard.js\" defer></script>"), std::string::npos);
  EXPECT_NE(page.headers.at("Content-Security-Policy").find("default-src 'none'; script-src 'self'"), std::string::npos);
  EXPECT_EQ(page.headers.at("Cache-Control"), "no-cache");
  EXPECT_EQ(page.headers.at("Referrer-Policy"), "no-referrer");
  // The data stays behind the token: only the page is open.
  EXPECT_EQ(client.request("GET", "/namespaces").status, 401);

  for (const auto& [file, type] : std::vector<std::pair<std::string, std::string>>{
           {"dashboard.js", "text/javascript; charset=utf-8"}, {"dashboard.css", "text/css; charset=utf-8"},
           {"favicon.svg", "image/svg+xml"}, {"index.html", "text/html; charset=utf-8"}}) {
    const auto r = client.request("GET", "/dashboard/" + file);
    ASSERT_EQ(r.status, 200) << file;
    EXPECT_EQ(r.headers.at("Content-Type"), type) << file;
    EXPECT_TRUE(r.body == testing::slurp(std::string(EBB_SOURCE_DIR) + "/src/server/dashboard/" + file)) << file << ": not the source's bytes";
    // Unchanged: 304 with no body, from the ETag the answer carried.
    const auto again = client.request("GET", "/dashboard/" + file, "", "application/json", {{"If-None-Match", r.headers.at("ETag")}});
    EXPECT_EQ(again.status, 304) << file;
    EXPECT_EQ(again.body, "") << file;
    const auto other = client.request("GET", "/dashboard/" + file, "", "application/json", {{"If-None-Match", "\"something-else\""}});
    EXPECT_EQ(other.status, 200) << file;
    EXPECT_EQ(client.request("GET", "/dashboard/" + file, "", "application/json", {{"If-None-Match", "*"}}).status, 304) << file;
    const std::string etag = r.headers.at("ETag");
    EXPECT_EQ(client.request("GET", "/dashboard/" + file, "", "application/json", {{"If-None-Match", "\"a\", W/" + etag}}).status, 304) << file;
    EXPECT_EQ(client.request("GET", "/dashboard/" + file, "", "application/json", {{"If-None-Match", "x" + etag + "y"}}).status, 200) << file;
    // HEAD: the same head, no body.
    const auto head = client.request("HEAD", "/dashboard/" + file);
    EXPECT_EQ(head.status, 200) << file;
    EXPECT_EQ(head.headers.at("Content-Length"), std::to_string(r.body.size())) << file;
    EXPECT_EQ(head.body, "") << file;
  }
  const auto missing = client.request("GET", "/dashboard/missing.js");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, R"json({"error":{"code":"not_found","message":"the dashboard has no file 'missing.js' (GET / is the page)"}})json");
  EXPECT_EQ(client.request("POST", "/", "{}").status, 405);
}

TEST_F(DashboardBrowser, OpensOnTheBusiestNamespaceAndUpdatesWithoutAReload) {
  EbbServer server(dir_ / "data");
  HttpClient client(server.port());
  create(client, R"({"name": "quiet", "windows": ["1h"]})");
  create(client, R"({"name": "tags", "windows": ["1h"], "half_lives": ["5m"]})");
  send(client, R"({"namespace": "quiet", "events": [{"item_id": "q", "weight": 3}]})");
  send(client, R"({"namespace": "tags", "events": [{"item_id": "a", "weight": 50}, {"item_id": "b", "weight": 30},
                   {"item_id": "c", "weight": 20}, {"item_id": "d", "weight": 10}]})");

  HeadlessBrowser browser;
  browser.navigate(base(server) + "/");
  ASSERT_TRUE(browser.wait_for(std::string(kRows) + " === 'a=50,b=30,c=20,d=10'", kRows)) << browser.last();
  EXPECT_EQ(browser.evaluate("document.getElementById('view-title').textContent"), "\"tags\"");
  EXPECT_EQ(browser.evaluate("document.querySelector('#views [aria-selected=true]').textContent"), "\"last 1h\"");
  EXPECT_EQ(browser.evaluate("location.search"), "\"?namespace=tags&window=1h&k=20\"");
  EXPECT_EQ(browser.evaluate("[...document.querySelectorAll('#namespaces button')].map(b => b.dataset.name + ':' + b.getAttribute('aria-current')).join(',')"),
            "\"quiet:false,tags:true\"");
  EXPECT_EQ(browser.evaluate("document.querySelectorAll('#top-list li').length"), "20");  // k rows, listed or not
  EXPECT_EQ(browser.evaluate("[...document.querySelectorAll('#top-list li[data-item] .bounds')].map(b => b.textContent).join(',')"),
            "\"exact,exact,exact,exact\"");

  // More events: the list follows on its own, the page is the same page
  // (the marker survives), and the panel is exactly as tall as before.
  browser.evaluate("window.__sameDocument = 'yes'");
  const std::string height = browser.evaluate("document.querySelector('.top').getBoundingClientRect().height");
  send(client, R"({"namespace": "tags", "events": [{"item_id": "e", "weight": 100}, {"item_id": "a", "weight": 1}]})");
  ASSERT_TRUE(browser.wait_for(std::string(kRows) + " === 'e=100,a=51,b=30,c=20,d=10'", kRows)) << browser.last();
  EXPECT_EQ(browser.evaluate("window.__sameDocument"), "\"yes\"");
  EXPECT_EQ(browser.evaluate("document.querySelector('.top').getBoundingClientRect().height"), height);
  EXPECT_EQ(browser.evaluate("document.getElementById('status').dataset.state"), "\"live\"");
}

TEST_F(DashboardBrowser, ShowsTheSketchBoundsTheApiAnswers) {
  EbbServer server(dir_ / "data");
  HttpClient client(server.port());
  // A sketch far too small for 201 items: the counts collide, so the
  // bounds differ from the estimates (an all-time view: nothing moves).
  create(client, R"({"name": "tiny", "windows": ["all"], "sketch_width": 16, "sketch_depth": 2, "k": 10})");
  std::string events = R"({"namespace": "tiny", "events": [{"item_id": "big", "weight": 300})";
  for (int i = 0; i < 200; ++i) events += R"(, {"item_id": "i)" + std::to_string(i) + R"(", "weight": )" + std::to_string(i % 7 + 1) + "}";
  send(client, events + "]}");

  // What the page must show, row by row, from the API itself.
  const auto answer = client.request("GET", "/top-k?namespace=tiny&window=all&k=10");
  ASSERT_EQ(answer.status, 200);
  simdjson::dom::parser parser;
  std::string expected;
  int inexact = 0;
  for (auto item : parser.parse(answer.body)["items"].get_array()) {
    const auto lower = static_cast<long long>(item["lower_bound"].get_double().value());
    const auto upper = static_cast<long long>(item["upper_bound"].get_double().value());
    if (!expected.empty()) expected += ",";
    expected += std::string(item["item_id"].get_string().value()) + "=" +
                std::to_string(static_cast<long long>(item["estimated_count"].get_double().value())) + " " +
                (lower == upper ? "exact" : "[" + std::to_string(lower) + ", " + std::to_string(upper) + "]");
    inexact += lower != upper;
  }
  ASSERT_GE(inexact, 5) << answer.body;  // the fixture does collide

  HeadlessBrowser browser;
  browser.navigate(base(server) + "/?namespace=tiny&window=all&k=10");
  const std::string shown =
      "[...document.querySelectorAll('#top-list li[data-item]')].map(li => li.dataset.item + '=' + "
      "li.querySelector('.count').textContent + ' ' + li.querySelector('.bounds').textContent).join(',')";
  ASSERT_TRUE(browser.wait_for(shown + " === " + testing::HeadlessBrowser::json_quote(expected), shown)) << browser.last() << "\nwanted " << expected;
  // Each inexact row draws its interval; exact ones draw none.
  EXPECT_EQ(browser.evaluate("[...document.querySelectorAll('#top-list li[data-item]')].filter(li => !li.querySelector('.range').hidden).length"),
            std::to_string(inexact));
  EXPECT_NE(browser.evaluate("document.getElementById('view-summary').textContent").find("any unlisted item"), std::string::npos);
}

TEST_F(DashboardBrowser, FollowsDeepLinksAndSaysWhenOneDoesNotResolve) {
  EbbServer server(dir_ / "data");
  HttpClient client(server.port());
  create(client, R"({"name": "busy", "windows": ["1h"]})");
  create(client, R"({"name": "topk:user:42", "windows": ["1h"], "half_lives": ["1m", "5m"]})");
  send(client, R"({"namespace": "busy", "events": [{"item_id": "x", "weight": 1}, {"item_id": "y", "weight": 1}, {"item_id": "z", "weight": 1}]})");
  send(client, R"({"namespace": "topk:user:42", "events": [{"item_id": "p/1", "weight": 1}]})");

  HeadlessBrowser browser;
  browser.navigate(base(server) + "/?namespace=topk%3Auser%3A42&half_life=5m");
  ASSERT_TRUE(browser.wait_for("document.querySelector('#views [aria-selected=true]')?.dataset.name === '5m'",
                               "document.querySelector('#views')?.innerText"))
      << browser.last();
  ASSERT_TRUE(browser.wait_for("document.querySelector('#top-list li[data-item]')?.dataset.item === 'p/1'", kRows)) << browser.last();
  EXPECT_EQ(browser.evaluate("document.getElementById('view-title').textContent"), "\"topk:user:42\"");

  // The same view however its length is written: 300s is the namespace's 5m.
  browser.navigate(base(server) + "/?namespace=topk%3Auser%3A42&half_life=300s");
  ASSERT_TRUE(browser.wait_for("new URLSearchParams(location.search).get('half_life') === '5m'", "location.search")) << browser.last();
  EXPECT_EQ(browser.evaluate("document.getElementById('banner').hidden"), "true");

  // Keyboard: ']' steps to the next view, '[' back.
  browser.evaluate("document.dispatchEvent(new KeyboardEvent('keydown', {key: '['}))");
  ASSERT_TRUE(browser.wait_for("new URLSearchParams(location.search).get('half_life') === '1m'", "location.search")) << browser.last();

  // A namespace that does not exist: said once, the busiest shown instead.
  browser.navigate(base(server) + "/?namespace=nope");
  ASSERT_TRUE(browser.wait_for(std::string(kRows) + " === 'x=1,y=1,z=1'", kRows)) << browser.last();
  EXPECT_EQ(browser.evaluate("document.getElementById('banner').textContent"),
            "\"There is no namespace 'nope': showing the busiest one instead.\"");
  // k as a link gives it: at most 100 rows, and a k the menu lacks joins it.
  browser.navigate(base(server) + "/?namespace=busy&k=1e9");
  ASSERT_TRUE(browser.wait_for("document.querySelectorAll('#top-list li').length === 100 && document.getElementById('k').value === '100'", "location.search"))
      << browser.last();
  browser.navigate(base(server) + "/?namespace=busy&k=7");
  ASSERT_TRUE(browser.wait_for("document.querySelectorAll('#top-list li').length === 7 && document.getElementById('k').value === '7'", "location.search"))
      << browser.last();
  // A view the namespace does not keep: its first view.
  browser.navigate(base(server) + "/?namespace=busy&half_life=5m");
  ASSERT_TRUE(browser.wait_for("document.querySelector('#views [aria-selected=true]')?.dataset.name === '1h'", "location.search")) << browser.last();
  EXPECT_EQ(browser.evaluate("document.getElementById('banner').textContent"), "\"Namespace 'busy' keeps no view '5m': showing its first view.\"");
}

TEST_F(DashboardBrowser, DrawsAnItemsHistoryHotKeysAndTrending) {
  EbbServer server(dir_ / "data", {"--history-interval", "1s"});
  HttpClient client(server.port());
  // A detector with a 1 h half-life: the keys stay hot (or not) for the
  // whole test, however slow the machine. Rates: hot 500 ln2/3600 = 0.096/s,
  // new 0.019/s, old (30 min ago) 0.0136/s: under the threshold.
  create(client, R"({"name": "keys", "windows": ["1h"], "half_lives": ["5m", "1h"], "hot_key_threshold": 0.015, "hot_key_half_life": "1h"})");
  create(client, R"({"name": "calm", "windows": ["1h"]})");
  const double now = static_cast<double>(std::time(nullptr));
  send(client, R"({"namespace": "keys", "events": [{"item_id": "hot", "weight": 500}, {"item_id": "new", "weight": 100},
                   {"item_id": "old", "weight": 100, "timestamp": )" + std::to_string(now - 1800) + "}]}");

  HeadlessBrowser browser;
  browser.navigate(base(server) + "/?namespace=keys&window=1h");
  ASSERT_TRUE(browser.wait_for(std::string(kRows) + " === 'hot=500,new=100,old=100'", kRows)) << browser.last();

  // Choosing an item draws its history from /history (snapshots every 1 s).
  browser.evaluate("document.querySelector('#top-list li[data-item=\"new\"] .item-id').click()");
  ASSERT_TRUE(browser.wait_for("Number(document.getElementById('history-chart').dataset.points) >= 1 && "
                               "document.querySelector('#history-chart polyline') !== null",
                               "document.getElementById('history-hint').textContent"))
      << browser.last();
  EXPECT_EQ(browser.evaluate("document.getElementById('history-title').textContent"), "\"History of new\"");
  // The newest snapshot as the hint reads it: 100 counted, second in the list.
  EXPECT_NE(browser.evaluate("document.getElementById('history-hint').textContent").find("; latest 100 (rank 2) at "), std::string::npos)
      << browser.evaluate("document.getElementById('history-hint').textContent");
  EXPECT_EQ(browser.evaluate("new URLSearchParams(location.search).get('item')"), "\"new\"");
  EXPECT_EQ(browser.evaluate("document.querySelector('#top-list li.chosen').dataset.item"), "\"new\"");

  // Hot keys as the detector reports them.
  ASSERT_TRUE(browser.wait_for("[...document.querySelectorAll('#hot-keys li')].map(li => li.dataset.item).join(',') === 'hot,new'",
                               "document.getElementById('hot-keys').innerText + ' / ' + document.getElementById('hot-summary').textContent"))
      << browser.last();
  // Trending in the API's order: what rose now, not what was counted long ago.
  const auto trending = client.request("GET", "/trending?namespace=keys&k=10");
  simdjson::dom::parser parser;
  std::string expected;
  for (auto item : parser.parse(trending.body)["items"].get_array()) expected += (expected.empty() ? "" : ",") + std::string(item["item_id"].get_string().value());
  ASSERT_EQ(expected, "hot,new") << trending.body;
  ASSERT_TRUE(browser.wait_for("[...document.querySelectorAll('#trending li')].map(li => li.dataset.item).join(',') === 'hot,new'",
                               "document.getElementById('trending').innerText"))
      << browser.last();

  // An event-clock namespace replaying 2017: its history is in its own time.
  create(client, R"({"name": "replay", "windows": ["1h"], "clock": "event", "max_event_age": "100000d"})");
  send(client, R"({"namespace": "replay", "events": [{"item_id": "r1", "weight": 4, "timestamp": 1500000000}]})");
  browser.navigate(base(server) + "/?namespace=replay&window=1h&item=r1");
  ASSERT_TRUE(browser.wait_for("document.getElementById('history-hint').textContent.includes('; latest 4 (rank 1) at 2017-07-14 ')",
                               "document.getElementById('history-hint').textContent"))
      << browser.last();

  // A namespace without detection or half-lives says why those panels are empty.
  browser.evaluate("document.querySelector('#namespaces button[data-name=\"calm\"]').click()");
  ASSERT_TRUE(browser.wait_for("document.getElementById('hot-summary').textContent.startsWith('Detection is off')",
                               "document.getElementById('hot-summary').textContent"))
      << browser.last();
  ASSERT_TRUE(browser.wait_for("document.getElementById('trending-summary').textContent.startsWith('Trending compares a short and a long half-life; this namespace keeps 0')",
                               "document.getElementById('trending-summary').textContent"))
      << browser.last();
  // The old namespace's item is gone from the history panel at once (the
  // click clears it; nothing waits for the new list).
  EXPECT_EQ(browser.evaluate("document.getElementById('history-title').textContent"), "\"History\"");
  EXPECT_EQ(browser.evaluate("new URLSearchParams(location.search).get('item')"), "null");
}

TEST_F(DashboardBrowser, AsksForATokenWhenReadsNeedOne) {
  const auto tokens = dir_ / "tokens";
  std::ofstream(tokens) << "s3cret-token-value\n";
  std::filesystem::permissions(tokens, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EbbServer server(dir_ / "data", {"--auth-token-file", tokens.string(), "--auth-reads"});
  HttpClient client(server.port());
  const io::HttpHeaders bearer = {{"Authorization", "Bearer s3cret-token-value"}};
  ASSERT_EQ(client.request("POST", "/namespaces", R"({"name": "private"})", "application/json", bearer).status, 201);
  ASSERT_EQ(client.request("POST", "/events", R"({"namespace": "private", "events": [{"item_id": "secret-item"}]})", "application/json", bearer).status, 204);

  HeadlessBrowser browser;
  browser.navigate(base(server) + "/");
  ASSERT_TRUE(browser.wait_for("!document.getElementById('auth').hidden", "document.getElementById('status').textContent")) << browser.last();
  EXPECT_EQ(browser.evaluate("document.querySelectorAll('#top-list li[data-item]').length"), "0");

  // The form takes the token; the page reads on with it.
  browser.evaluate("document.getElementById('auth-token').value = 's3cret-token-value'");
  browser.evaluate("document.getElementById('auth').requestSubmit()");
  ASSERT_TRUE(browser.wait_for(std::string(kRows) + " === 'secret-item=1'", kRows)) << browser.last();
  EXPECT_TRUE(browser.evaluate("document.getElementById('auth').hidden") == "true");

  // Or a link carries it; it leaves the address bar at once.
  HeadlessBrowser linked;
  linked.navigate(base(server) + "/?access_token=s3cret-token-value");
  ASSERT_TRUE(linked.wait_for(std::string(kRows) + " === 'secret-item=1'", kRows)) << linked.last();
  EXPECT_EQ(linked.evaluate("location.search.includes('access_token')"), "false");
}

TEST_F(DashboardBrowser, FitsAPhoneScreen) {
  EbbServer server(dir_ / "data");
  HttpClient client(server.port());
  create(client, R"({"name": "a-namespace-with-a-rather-long-name-for-a-phone", "windows": ["1m", "1h", "1d"], "half_lives": ["5m", "1h"]})");
  send(client, R"({"namespace": "a-namespace-with-a-rather-long-name-for-a-phone", "events": [
                   {"item_id": "an-item-whose-identifier-is-far-too-long-to-fit-on-one-line-of-a-phone", "weight": 12345},
                   {"item_id": "short", "weight": 7}]})");

  HeadlessBrowser browser;
  browser.emulate_phone(390, 844);
  browser.navigate(base(server) + "/");
  ASSERT_TRUE(browser.wait_for("document.querySelectorAll('#top-list li[data-item]').length === 2", kRows)) << browser.last();
  // One column, nothing wider than the screen (no sideways scrolling).
  EXPECT_EQ(browser.evaluate("getComputedStyle(document.querySelector('main')).gridTemplateColumns.split(' ').length"), "1");
  EXPECT_EQ(browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "true")
      << browser.evaluate("[document.documentElement.scrollWidth, window.innerWidth]");
  EXPECT_EQ(browser.evaluate("document.querySelector('#top-list li[data-item] .count').textContent"), "\"12,345\"");
}

// What a user does on the page: arrows on the view tabs, a smaller k, a
// choice while paused (shown once, then nothing moves), and namespaces
// deleted under it (the busiest left is shown; with none, nothing stale).
TEST_F(DashboardBrowser, FollowsTheKeyboardPauseAndDeletions) {
  EbbServer server(dir_ / "data");
  HttpClient client(server.port());
  create(client, R"({"name": "first", "windows": ["1m", "1h"], "half_lives": ["5m"], "hot_key_threshold": 0.001, "hot_key_half_life": "1h"})");
  create(client, R"({"name": "second", "windows": ["1h"]})");
  std::string events = R"({"namespace": "first", "events": [)";
  for (int i = 1; i <= 12; ++i) events += std::string(i > 1 ? "," : "") + R"({"item_id": "f)" + std::to_string(i) + R"(", "weight": )" + std::to_string(100 - i) + "}";
  send(client, events + "]}");
  send(client, R"({"namespace": "second", "events": [{"item_id": "s1", "weight": 2}]})");

  HeadlessBrowser browser;
  browser.navigate(base(server) + "/");
  ASSERT_TRUE(browser.wait_for("document.querySelectorAll('#top-list li[data-item]').length === 12", kRows)) << browser.last();
  EXPECT_EQ(browser.evaluate("document.querySelector('#views [aria-selected=true]').dataset.name"), "\"1m\"");

  // Arrow keys move along the tabs (and focus follows), End jumps to the last.
  browser.evaluate("document.querySelector('#views [aria-selected=true]').focus()");
  browser.evaluate("document.activeElement.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}))");
  ASSERT_TRUE(browser.wait_for("document.activeElement.dataset.name === '1h' && document.activeElement.getAttribute('aria-selected') === 'true'",
                               "location.search")) << browser.last();
  browser.evaluate("document.activeElement.dispatchEvent(new KeyboardEvent('keydown', {key: 'End', bubbles: true}))");
  ASSERT_TRUE(browser.wait_for("new URLSearchParams(location.search).get('half_life') === '5m'", "location.search")) << browser.last();

  // k = 10: ten rows, the ten heaviest.
  browser.evaluate("(() => { const k = document.getElementById('k'); k.value = '10'; k.dispatchEvent(new Event('change')); })()");
  ASSERT_TRUE(browser.wait_for("document.querySelectorAll('#top-list li').length === 10 && "
                               "[...document.querySelectorAll('#top-list li[data-item]')].map(li => li.dataset.item).join(',') === 'f1,f2,f3,f4,f5,f6,f7,f8,f9,f10'",
                               kRows)) << browser.last();

  // Paused: a choice still shows what was chosen, and then the page stays still.
  browser.evaluate("document.getElementById('pause').click()");
  EXPECT_EQ(browser.evaluate("document.getElementById('status').textContent"), "\"paused\"");
  browser.evaluate("document.querySelector('#namespaces button[data-name=\"second\"]').click()");
  ASSERT_TRUE(browser.wait_for(std::string(kRows) + " === 's1=2'", kRows)) << browser.last();
  const std::string updates = browser.evaluate("document.body.dataset.updates");
  send(client, R"({"namespace": "second", "events": [{"item_id": "s2", "weight": 5}]})");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two poll periods in which nothing may change
  EXPECT_EQ(browser.evaluate(kRows), "\"s1=2\"");
  EXPECT_EQ(browser.evaluate("document.body.dataset.updates"), updates);
  browser.evaluate("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'p'}))");  // resume
  ASSERT_TRUE(browser.wait_for(std::string(kRows) + " === 's2=5,s1=2'", kRows)) << browser.last();

  // The namespace shown is deleted: the page says so and shows the busiest left.
  ASSERT_EQ(client.request("DELETE", "/namespaces/second").status, 204);
  ASSERT_TRUE(browser.wait_for("document.getElementById('view-title').textContent === 'first'", "document.getElementById('banner').textContent"))
      << browser.last();
  EXPECT_EQ(browser.evaluate("document.getElementById('banner').textContent"), "\"There is no namespace 'second': showing the busiest one instead.\"");
  EXPECT_EQ(browser.evaluate("document.querySelector('#views [aria-selected=true]').dataset.name"), "\"1m\"");  // its own first view
  ASSERT_TRUE(browser.wait_for("document.querySelectorAll('#hot-keys li').length > 0", "document.getElementById('hot-summary').textContent"))
      << browser.last();
  // None left: no panel keeps what it showed.
  ASSERT_EQ(client.request("DELETE", "/namespaces/first").status, 204);
  ASSERT_TRUE(browser.wait_for("!document.getElementById('namespaces-empty').hidden && "
                               "document.querySelectorAll('#top-list li[data-item], #hot-keys li, #trending li').length === 0",
                               "document.querySelector('main').innerText"))
      << browser.last();
}

}  // namespace
}  // namespace ebb
