// Every route of `ebb serve` and its documented errors, against the real
// binary on an ephemeral port with a real HTTP client.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <boost/asio.hpp>
#include <cmath>
#include <fstream>
#include <random>
#include <regex>
#include <set>

#include "support/ebb_server.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;
using testing::HttpResult;

simdjson::dom::element parse(simdjson::dom::parser& p, const std::string& body) {
  simdjson::dom::element e;
  EXPECT_EQ(p.parse(body).get(e), simdjson::SUCCESS) << body;
  return e;
}

std::string error_code(const HttpResult& r) {
  simdjson::dom::parser p;
  simdjson::dom::element e;
  if (p.parse(r.body).get(e)) return "<not json: " + r.body + ">";
  std::string_view code;
  if (e["error"]["code"].get(code)) return "<no error.code: " + r.body + ">";
  return std::string(code);
}

class ServerApi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_temp_dir("ebb-api");
    server_ = std::make_unique<EbbServer>(dir_, std::vector<std::string>{"--max-body-bytes", "64KiB", "--max-batch-events", "1000",
                                                                          "--max-namespaces", "5"});
    client_ = std::make_unique<HttpClient>(server_->port());
  }
  void TearDown() override {
    client_.reset();
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    std::filesystem::remove_all(dir_);
  }
  HttpResult call(const std::string& method, const std::string& target, const std::string& body = "",
                  const std::string& type = "application/json") {
    return client_->request(method, target, body, type);
  }
  void create(const std::string& body) { ASSERT_EQ(call("POST", "/namespaces", body).status, 201) << body; }

  std::filesystem::path dir_;
  std::unique_ptr<EbbServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(ServerApi, CreatesNamespacesAndReportsTheResolvedConfig) {
  auto r = call("POST", "/namespaces", R"({"name":"trending","k":20,"windows":["all"],"half_lives":["5m","1h"],
      "sketch_width":1000000,"sketch_depth":4,"exclude":["the"],"clock":"event","hot_key_threshold":100})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.headers["Location"], "/namespaces/trending");
  simdjson::dom::parser p;
  auto doc = parse(p, r.body);
  EXPECT_EQ(std::string_view(doc["name"]), "trending");
  EXPECT_EQ(uint64_t(doc["k"]), 20u);
  EXPECT_EQ(uint64_t(doc["sketch_width"]), 1048576u);  // rounded up to a power of two
  EXPECT_EQ(std::string_view(doc["half_lives"].at(1)), "1h");
  EXPECT_EQ(std::string_view(doc["clock"]), "event");
  EXPECT_EQ(double(doc["hot_key_threshold"]), 100);
  EXPECT_EQ(std::string_view(doc["accuracy"]["type"]), "count_min_sketch");

  // epsilon/delta sizing; defaults.
  r = call("POST", "/namespaces", R"({"name":"by_error","epsilon":0.001,"delta":0.0001})");
  ASSERT_EQ(r.status, 201) << r.body;
  doc = parse(p, r.body);
  EXPECT_EQ(uint64_t(doc["sketch_width"]), 4096u);
  EXPECT_EQ(uint64_t(doc["sketch_depth"]), 10u);
  EXPECT_EQ(std::string_view(doc["windows"].at(0)), "all");  // default view

  EXPECT_EQ(call("POST", "/namespaces", R"({"name":"trending"})").status, 409);
  EXPECT_EQ(error_code(call("POST", "/namespaces", R"({"name":"trending"})")), "namespace_exists");

  r = call("GET", "/namespaces");
  ASSERT_EQ(r.status, 200);
  doc = parse(p, r.body);
  EXPECT_EQ(simdjson::dom::array(doc["namespaces"]).size(), 2u);
  r = call("GET", "/namespaces/trending");
  ASSERT_EQ(r.status, 200);
  doc = parse(p, r.body);
  EXPECT_EQ(uint64_t(doc["stats"]["events"]), 0u);
  EXPECT_GT(uint64_t(doc["stats"]["memory_bytes"]), 3u * 8 * 1048576 * 4);
}

TEST_F(ServerApi, BadNamespaceFieldsAreNamed) {
  struct Case {
    const char* body;
    const char* code;
    const char* names;
  };
  const Case cases[] = {
      {R"({"k":5})", "invalid_field", "name: is required"},
      {R"({"name":"bad\nname"})", "invalid_field", "name: must not hold control characters (byte 3 starts one)"},
      {R"({"name":"a","k":0})", "invalid_field", "k: must be in [1, 1000]"},
      {R"({"name":"a","k":"ten"})", "invalid_field", "k: must be a whole number"},
      {R"({"name":"a","windows":["1.5s"]})", "invalid_field", "windows: '1.5s' must be a whole number of seconds in [1s, 366d]"},
      {R"({"name":"a","windows":["367d"]})", "invalid_field", "windows: '367d' must be a whole number of seconds"},
      {R"({"name":"a","windows":["1h","60m"]})", "invalid_field", "windows: '60m' is given twice"},
      {R"({"name":"a","windows":["all","all"]})", "invalid_field", "windows: 'all' is given twice"},
      {R"({"name":"a","windows":["1h"],"window_sketch_width":1073741824})", "invalid_field", "window_sketch_width: the namespace would need"},
      {R"({"name":"a","windows":["soon"]})", "invalid_field", "windows: bad duration 'soon'"},
      {R"({"name":"a","half_lives":["5m","5m"]})", "invalid_field", "half_lives:"},
      {R"({"name":"a","half_lives":["1e-300s"]})", "invalid_field", "half_lives: bad duration '1e-300s'"},
      {R"({"name":"a","half_lives":["500ms"]})", "invalid_field", "half_lives: '500ms' is outside [1s, 36500d]"},
      {R"({"name":"a","half_lives":["36501d"]})", "invalid_field", "half_lives: '36501d' is outside [1s, 36500d]"},
      {R"({"name":"a","sketch_width":4096,"epsilon":0.01})", "invalid_field", "not both"},
      {R"({"name":"a","sketch_depth":40})", "invalid_field", "sketch_depth: must be in [1, 32]"},
      {R"({"name":"a","sketch_width":1073741824,"sketch_depth":32})", "invalid_field", "over the limit"},
      {R"({"name":"a","counting":"maybe"})", "invalid_field", "counting: must be"},
      {R"({"name":"a","counting":"exact","sketch_width":1024})", "invalid_field", "sketch_width: does not apply to"},
      {R"({"name":"a","summary":"space_saving","counting":"exact"})", "invalid_field", "summary: does not apply"},
      {R"({"name":"a","max_items":10})", "invalid_field", "max_items: applies to"},
      {R"({"name":"a","counting":"exact","max_items":0})", "invalid_field", "max_items: must be"},
      {R"({"name":"a","counting":"exact","max_items":100000000,"windows":["7d"]})", "invalid_field", "max_items: the namespace could need"},
      {R"({"name":"a","clock":"lunar"})", "invalid_field", "clock: must be"},
      {R"({"name":"a","hot_key_threshold":-1})", "invalid_field", "hot_key_threshold:"},
      {R"({"name":"a","exclude":[1]})", "invalid_field", "exclude: entry 0 must be a string"},
      {R"({"name":"a","halflives":["5m"]})", "invalid_field", "halflives: unknown field"},
      {R"({"name":"a",)", "invalid_json", "not valid JSON"},
      {R"([1,2])", "invalid_json", "must be a JSON object"},
  };
  for (const auto& c : cases) {
    auto r = call("POST", "/namespaces", c.body);
    EXPECT_EQ(r.status, 400) << c.body << " -> " << r.body;
    EXPECT_EQ(error_code(r), c.code) << c.body << " -> " << r.body;
    EXPECT_NE(r.body.find(c.names), std::string::npos) << c.body << " -> " << r.body;
  }
  EXPECT_EQ(parse(*std::make_unique<simdjson::dom::parser>(), call("GET", "/namespaces").body)["namespaces"].get_array().size(), 0u);
}

TEST_F(ServerApi, NamespaceLimitIsEnforced) {
  for (int i = 0; i < 5; ++i) create(R"({"name":"n)" + std::to_string(i) + R"(","sketch_width":1024})");
  auto r = call("POST", "/namespaces", R"({"name":"n5","sketch_width":1024})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_code(r), "namespace_limit");
  EXPECT_EQ(call("DELETE", "/namespaces/n0").status, 204);
  EXPECT_EQ(call("POST", "/namespaces", R"({"name":"n5","sketch_width":1024})").status, 201);
}

TEST_F(ServerApi, PatchAndDelete) {
  create(R"({"name":"p","k":10,"candidates":64})");
  auto r = call("PATCH", "/namespaces/p", R"({"k":50,"exclude":["spam"],"hot_key_threshold":5})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("k":50)"), std::string::npos);
  EXPECT_NE(r.body.find(R"("exclude":["spam"])"), std::string::npos);
  EXPECT_EQ(call("POST", "/events", R"({"namespace":"p","events":[{"item_id":"spam"},{"item_id":"ham"}]})").status, 204);
  r = call("GET", "/top-k?namespace=p");
  EXPECT_EQ(r.body.find("spam"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("ham"), std::string::npos);
  r = call("PATCH", "/namespaces/p", R"({"k":65})");  // more than the 64 candidates
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("k: must be at most"), std::string::npos) << r.body;
  r = call("PATCH", "/namespaces/p", R"({"sketch_depth":2})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("sketch_depth: cannot be changed at run time"), std::string::npos) << r.body;
  r = call("PATCH", "/namespaces/p", R"({"hot_key_threshold":null})");
  EXPECT_NE(r.body.find(R"("hot_key_threshold":null)"), std::string::npos) << r.body;
  EXPECT_EQ(call("PATCH", "/namespaces/nope", R"({"k":5})").status, 404);
  EXPECT_EQ(call("DELETE", "/namespaces/p").status, 204);
  EXPECT_EQ(call("DELETE", "/namespaces/p").status, 404);
  EXPECT_EQ(call("GET", "/namespaces/p").status, 404);
  EXPECT_EQ(call("GET", "/top-k?namespace=p").status, 404);
}

// The guards of "now": a wall-clock namespace refuses an event older than
// max_event_age (timestamp 0 would start all-time in 1970); an event-clock
// one refuses a jump ahead past max_time_jump (a millisecond time among
// seconds). Both are 400 naming the event, count nothing, and can be changed
// by PATCH (null = no guard) for a backfill.
TEST_F(ServerApi, EventTimeGuardsRefuseAncientAndFarFutureTimestamps) {
  auto r = call("POST", "/namespaces", R"({"name":"w"})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_NE(r.body.find(R"("max_event_age":"7d","max_time_jump":"1d")"), std::string::npos) << r.body;
  r = call("POST", "/events", R"({"namespace":"w","events":[{"item_id":"ok"},{"item_id":"old","timestamp":0}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_code(r), "invalid_event");
  EXPECT_NE(r.body.find("events[1].timestamp: is "), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("s older than the server clock"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("more than the namespace's max_event_age of 7d"), std::string::npos) << r.body;
  EXPECT_NE(call("GET", "/namespaces/w").body.find(R"("events":0,)"), std::string::npos);

  r = call("PATCH", "/namespaces/w", R"({"max_event_age":null})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("max_event_age":null)"), std::string::npos) << r.body;
  EXPECT_EQ(call("POST", "/events", R"({"namespace":"w","events":[{"item_id":"old","timestamp":0}]})").status, 204);
  EXPECT_NE(call("GET", "/count?namespace=w&item_id=old").body.find(R"("estimated_count":1,)"), std::string::npos);

  create(R"({"name":"e","clock":"event","half_lives":["1m"],"windows":["all"],"max_time_jump":"1h"})");
  ASSERT_EQ(call("POST", "/events", R"({"namespace":"e","events":[{"item_id":"a","timestamp":1700000000}]})").status, 204);
  r = call("POST", "/events", R"({"namespace":"e","events":[{"item_id":"a","timestamp":1700000001},{"item_id":"a","timestamp":1700000001000}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("events[1].timestamp: is 1698300000999 s ahead of the newest event time so far (1700000001), more than the namespace's max_time_jump of 1h"), std::string::npos) << r.body;
  ASSERT_EQ(call("POST", "/events", R"({"namespace":"e","events":[{"item_id":"a","timestamp":1700000060}]})").status, 204);
  // "Now" stayed at the real newest event: a minute later the first event weighs 1/2.
  r = call("GET", "/count?namespace=e&item_id=a&half_life=1m");
  EXPECT_NE(r.body.find(R"("estimated_count":1.5,)"), std::string::npos) << r.body;
  EXPECT_NE(call("GET", "/count?namespace=e&item_id=a&window=all").body.find(R"("estimated_count":2,)"), std::string::npos);

  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"name":"x","max_event_age":5})", R"(max_event_age: must be a duration string such as \"7d\", or null for no limit)"},
           {R"({"name":"x","max_event_age":"0s"})", "max_event_age: bad duration '0s' (must be finite and > 0, at least 1ms, at most 11574074d)"},
           {R"({"name":"x","max_time_jump":"soon"})", "max_time_jump: "}}) {
    r = call("POST", "/namespaces", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_NE(r.body.find(message), std::string::npos) << r.body;
  }
  EXPECT_EQ(call("GET", "/namespaces/x").status, 404);
}

TEST_F(ServerApi, IngestsJsonAndNdjsonAllOrNothing) {
  create(R"({"name":"a","half_lives":["1h"],"windows":["all"]})");
  create(R"({"name":"b","max_event_age":null})");  // takes a 2023 timestamp
  // Per-event namespaces, a top-level default, weights, timestamps.
  auto r = call("POST", "/events", R"({"namespace":"a","events":[
      {"item_id":"x"},{"item_id":"x","weight":2.5},{"item_id":"y","namespace":"b","timestamp":1700000000}]})");
  ASSERT_EQ(r.status, 204) << r.body;
  r = call("POST", "/events?namespace=b", "{\"item_id\":\"y\"}\n\n{\"item_id\":\"z\",\"weight\":4}\n", "application/x-ndjson");
  ASSERT_EQ(r.status, 204) << r.body;
  simdjson::dom::parser p;
  auto doc = parse(p, call("GET", "/count?namespace=a&item_id=x&window=all").body);
  EXPECT_EQ(double(doc["estimated_count"]), 3.5);
  doc = parse(p, call("GET", "/top-k?namespace=b").body);
  EXPECT_EQ(std::string_view(doc["items"].at(0)["item_id"]), "z");
  EXPECT_EQ(double(doc["total"]), 6);

  // One bad event anywhere rejects the whole batch, across namespaces.
  const std::pair<const char*, const char*> bad[] = {
      {R"({"events":[{"item_id":"x","namespace":"a"},{"item_id":"q","namespace":"b","weight":0}]})", "events[1].weight: must be finite and > 0"},
      {R"({"events":[{"item_id":"x","namespace":"a"},{"namespace":"b"}]})", "events[1].item_id: is required"},
      {R"({"events":[{"item_id":"x","namespace":"a"},{"item_id":"q"}]})", "events[1].namespace: is required"},
      {R"({"events":[{"item_id":"x","namespace":"a","timestamp":"noon"}]})", "events[0].timestamp: must be a number"},
      {R"({"events":[{"item_id":"x","namespace":"a","timestamp":99999999999}]})", "events[0].timestamp: is"},
      {R"({"events":[{"item_id":7,"namespace":"a"}]})", "events[0].item_id: must be a string"},
      {R"({"events":{}})", "events: must be an array"},
      {R"({"evens":[]})", "evens: unknown field"},
  };
  for (const auto& [body, says] : bad) {
    r = call("POST", "/events", body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    EXPECT_NE(r.body.find(says), std::string::npos) << body << " -> " << r.body;
  }
  const std::string long_key(2000, 'k');
  r = call("POST", "/events", R"({"namespace":"a","events":[{"item_id":"ok"},{"item_id":")" + long_key + R"("}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("events[1].item_id: is 2000 bytes"), std::string::npos) << r.body;
  r = call("POST", "/events", R"({"events":[{"item_id":"x","namespace":"a"},{"item_id":"x","namespace":"nope"}]})");
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("events[1].namespace: no namespace 'nope'"), std::string::npos) << r.body;
  r = call("POST", "/events", "{\"item_id\":\"x\",\"namespace\":\"a\"}\n{oops}\n", "application/x-ndjson");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("(line 2)"), std::string::npos) << r.body;
  // Nothing of any rejected batch was counted.
  doc = parse(p, call("GET", "/count?namespace=a&item_id=x&window=all").body);
  EXPECT_EQ(double(doc["estimated_count"]), 3.5);
  doc = parse(p, call("GET", "/top-k?namespace=b").body);
  EXPECT_EQ(double(doc["total"]), 6);
}

// Garbage and mutations of valid bodies: always a 4xx with an error body,
// never a crash, never a partial count.
TEST_F(ServerApi, MalformedBodiesNeverCrashOrCount) {
  create(R"({"name":"f"})");
  const std::string valid = R"({"namespace":"f","events":[{"item_id":"a","weight":2,"timestamp":null},{"item_id":"b"}]})";
  std::mt19937_64 rng(3);
  int accepted = 0;
  std::uint64_t accepted_events = 0;  // what the accepted bodies hold, counted here
  simdjson::dom::parser body_parser;
  for (int i = 0; i < 300; ++i) {
    std::string body = valid;
    for (int e = 0; e < 1 + static_cast<int>(rng() % 3); ++e) {
      const std::size_t at = rng() % body.size();
      if (rng() % 2) body[at] = static_cast<char>(rng() % 256);
      else body.erase(at, 1 + rng() % 5);
    }
    const auto type = i % 3 == 0 ? "application/x-ndjson" : "application/json";
    auto r = call("POST", "/events", body, type);
    ASSERT_TRUE(r.status == 204 || (r.status >= 400 && r.status < 500)) << r.status << " " << body;
    if (r.status == 204) {
      ++accepted;
      if (i % 3 == 0) {  // NDJSON: one event per line that is not blank
        std::size_t start = 0;
        while (start <= body.size()) {
          const std::size_t end = std::min(body.find('\n', start), body.size());
          if (body.substr(start, end - start).find_first_not_of(" \t\r") != std::string::npos) ++accepted_events;
          start = end + 1;
        }
      } else {
        accepted_events += simdjson::dom::array(parse(body_parser, body)["events"]).size();
      }
    } else {
      EXPECT_FALSE(error_code(r).empty());
    }
    r = call("POST", i % 2 ? "/namespaces" : "/counts", body);
    ASSERT_LT(r.status, 500) << body;
  }
  EXPECT_EQ(call("GET", "/healthz").status, 200);
  simdjson::dom::parser p;
  auto doc = parse(p, call("GET", "/namespaces/f").body);
  // Whatever was accepted was whole batches, every event of them counted.
  EXPECT_GT(accepted, 0);
  EXPECT_EQ(uint64_t(doc["stats"]["events"]), accepted_events);
}

// "Expect: 100-continue" (curl sends it for large bodies): the server says
// go ahead before the client sends the body, instead of letting it wait.
TEST_F(ServerApi, AnswersExpectContinue) {
  create(R"({"name":"x"})");
  namespace net = boost::asio;
  net::io_context ioc;
  net::ip::tcp::socket socket(ioc);
  socket.connect({net::ip::make_address("127.0.0.1"), server_->port()});
  const std::string body = R"({"namespace":"x","events":[{"item_id":"a"}]})";
  const std::string head = "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  net::write(socket, net::buffer(head));
  net::streambuf reply;
  net::read_until(socket, reply, "\r\n\r\n");
  std::string first(net::buffers_begin(reply.data()), net::buffers_end(reply.data()));
  EXPECT_EQ(first.rfind("HTTP/1.1 100 Continue", 0), 0u) << first;
  reply.consume(reply.size());
  net::write(socket, net::buffer(body));
  net::read_until(socket, reply, "\r\n\r\n");
  std::string second(net::buffers_begin(reply.data()), net::buffers_end(reply.data()));
  EXPECT_EQ(second.rfind("HTTP/1.1 204", 0), 0u) << second;
}

// A NUL in a value an error message quotes is shown as "\0" and the
// message goes on: what() ends a message at its first NUL, which cut these
// off mid-quote ("windows: bad duration 'a", hostile run).
TEST_F(ServerApi, AQuotedNulDoesNotCutAnErrorMessageShort) {
  create(R"({"name":"a","k":5})");
  struct Case {
    std::string method, target, body;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"POST", "/namespaces", R"({"name":"b","windows":["x\u0000y"]})", 400, R"(windows: bad duration 'x\\0y' (expected a number)"},
      {"POST", "/namespaces", R"({"name":"b","half_lives":["x\u0000y"]})", 400, R"(half_lives: bad duration 'x\\0y' (expected)"},
      {"POST", "/namespaces", R"({"name":"b","clock":"x\u0000y"})", 400, R"((got 'x\\0y'))"},
      {"POST", "/namespaces", R"({"name":"b","memory":"x\u0000y"})", 400, R"((got 'x\\0y'))"},
      {"GET", "/top-k?namespace=x%00y", "", 404, R"(no namespace 'x\\0y')"},
      {"GET", "/top-k?namespace=a&k=x%00y", "", 400, R"((got 'x\\0y'))"},
      {"GET", "/top-k?namespace=a&half_life=x%00y", "", 400, R"(bad duration 'x\\0y' (expected)"},
      {"POST", "/events", R"({"namespace":"x\u0000y","events":[{"item_id":"i"}]})", 404, R"(no namespace 'x\\0y')"},
      {"DELETE", "/namespaces/x%00y", "", 404, R"(no namespace 'x\\0y')"},
      {"GET", "/top-k?namespace=a&window=x%00y", "", 400, R"((got 'x\\0y'))"},
      {"GET", "/anomalies?namespace=a&window=1m&min_rank_jump=x%00y", "", 400, R"((got 'x\\0y'))"},
  };
  for (const auto& c : cases) {
    const auto r = call(c.method, c.target, c.body);
    EXPECT_EQ(r.status, c.status) << c.target << " " << c.body << ": " << r.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.target << " " << c.body << ": " << r.body;
  }
  EXPECT_EQ(call("GET", "/namespaces/b").status, 404);  // nothing made
}

// A member named twice in one object is refused by name (which one a
// request meant is a guess), and changes nothing.
TEST_F(ServerApi, AMemberNamedTwiceIsRefusedByName) {
  create(R"({"name":"a","k":5})");
  struct Case {
    std::string method, target, body, code, says;
  };
  const std::vector<Case> cases = {
      {"POST", "/events", R"({"namespace":"a","events":[{"item_id":"x","item_id":"y"}]})", "invalid_event", "events[0].item_id: is given twice"},
      {"POST", "/events", R"({"namespace":"a","events":[{"item_id":"x","weight":1,"weight":5}]})", "invalid_event", "events[0].weight: is given twice"},
      {"POST", "/events", R"({"namespace":"a","namespace":"b","events":[{"item_id":"x"}]})", "invalid_field", "namespace: is given twice"},
      {"POST", "/events", R"({"events":[],"namespace":"a","events":[{"item_id":"x"}]})", "invalid_field", "events: is given twice"},
      {"POST", "/namespaces", R"({"name":"b","k":5,"k":6})", "invalid_field", "k: is given twice"},
      {"POST", "/namespaces", R"({"name":"b","windows":["1m"],"windows":["1h"]})", "invalid_field", "windows: is given twice"},
      {"PATCH", "/namespaces/a", R"({"k":6,"k":7})", "invalid_field", "k: is given twice"},
      {"POST", "/counts", R"({"namespace":"a","item_ids":["x"],"item_ids":["y"]})", "invalid_field", "item_ids: is given twice"},
      {"POST", "/top-k/personalised", R"({"namespace":"a","k":2,"k":3,"user_items":[]})", "invalid_field", "k: is given twice"},
      {"POST", "/top-k/personalised", R"({"namespace":"a","user_items":[{"item_id":"x","weight":1,"weight":2}]})", "invalid_field",
       "user_items[0].weight: is given twice"},
  };
  for (const auto& c : cases) {
    const auto r = call(c.method, c.target, c.body);
    EXPECT_EQ(r.status, 400) << c.body << ": " << r.body;
    EXPECT_EQ(error_code(r), c.code) << c.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.body << ": " << r.body;
  }
  // Nothing was counted, created or changed.
  EXPECT_EQ(call("GET", "/namespaces/b").status, 404);
  EXPECT_NE(call("GET", "/namespaces/a").body.find(R"("k":5,)"), std::string::npos);
  EXPECT_NE(call("GET", "/top-k?namespace=a").body.find(R"("items":[])"), std::string::npos);
  // A member the API does not read (an event's metadata) may repeat.
  EXPECT_EQ(call("POST", "/events", R"({"namespace":"a","events":[{"item_id":"x","tag":1,"tag":2}]})").status, 204);
}

TEST_F(ServerApi, LimitsGive413) {
  create(R"({"name":"a"})");
  std::string events;
  for (int i = 0; i < 1001; ++i) events += std::string(i ? "," : "") + R"({"item_id":"i)" + std::to_string(i) + R"("})";
  auto r = call("POST", "/events", R"({"namespace":"a","events":[)" + events + "]}");
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(error_code(r), "batch_too_large");
  std::string big(70000, ' ');
  r = call("POST", "/events", R"({"namespace":"a","events":[]})" + big);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(error_code(r), "body_too_large");
  // --max-body-bytes 64KiB is 65536 bytes: a body of exactly that is taken,
  // one byte more is not.
  const std::string edge = R"({"namespace":"a","events":[{"item_id":"edge"}]})";
  r = call("POST", "/events", edge + std::string(65536 - edge.size() + 1, ' '));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(error_code(r), "body_too_large");
  // The server is still healthy and counted nothing.
  EXPECT_EQ(call("GET", "/healthz").status, 200);
  EXPECT_EQ(call("GET", "/count?namespace=a&item_id=edge").body.find(R"("lower_bound":1)"), std::string::npos);
  r = call("POST", "/events", edge + std::string(65536 - edge.size(), ' '));
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_NE(call("GET", "/count?namespace=a&item_id=edge").body.find(R"("lower_bound":1,)"), std::string::npos);
}

TEST_F(ServerApi, QueriesAnswerWithBoundsAndRejectWhatIsNotThereYet) {
  // On the event clock "now" is the batch's receive time, so the decayed
  // view reads exactly what was sent.
  create(R"({"name":"q","k":2,"half_lives":["5m"],"windows":["all"],"clock":"event"})");
  ASSERT_EQ(call("POST", "/events", R"({"namespace":"q","events":[{"item_id":"a","weight":5},{"item_id":"b","weight":3},{"item_id":"c"}]})").status, 204);
  simdjson::dom::parser p;
  auto r = call("GET", "/top-k?namespace=q");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = parse(p, r.body);
  EXPECT_EQ(std::string_view(doc["namespace"]), "q");
  EXPECT_EQ(simdjson::dom::array(doc["items"]).size(), 2u);  // the namespace's k
  auto first = doc["items"].at(0);
  EXPECT_EQ(std::string_view(first["item_id"]), "a");
  EXPECT_EQ(uint64_t(first["rank"]), 1u);
  EXPECT_EQ(double(first["estimated_count"]), 5);
  EXPECT_EQ(double(first["lower_bound"]), 5);  // three items in a 65536-wide sketch: no collision
  EXPECT_EQ(double(first["upper_bound"]), 5);
  EXPECT_EQ(double(doc["total"]), 9);
  EXPECT_GE(double(doc["window"]["end"]), double(doc["window"]["start"]));
  EXPECT_EQ(double(doc["accuracy"]["confidence"]) > 0.98, true);
  doc = parse(p, call("GET", "/top-k?namespace=q&half_life=5m&k=3").body);
  EXPECT_EQ(std::string_view(doc["half_life"]), "5m");
  EXPECT_EQ(simdjson::dom::array(doc["items"]).size(), 3u);
  doc = parse(p, call("GET", "/count?namespace=q&item_id=b&half_life=5m").body);
  EXPECT_EQ(double(doc["estimated_count"]), 3);
  EXPECT_DOUBLE_EQ(double(doc["rate"]), 3 * std::log(2.0) / 300);
  r = call("POST", "/counts", R"({"namespace":"q","item_ids":["c","zz","a"],"window":"all"})");
  ASSERT_EQ(r.status, 200) << r.body;
  doc = parse(p, r.body);
  EXPECT_EQ(std::string_view(doc["items"].at(0)["item_id"]), "c");
  EXPECT_EQ(double(doc["items"].at(1)["upper_bound"]), 0);
  EXPECT_EQ(double(doc["items"].at(2)["estimated_count"]), 5);
  EXPECT_EQ(std::string_view(doc["accuracy"]["type"]), "count_min_sketch");
  EXPECT_GE(double(doc["window"]["end"]), double(doc["window"]["start"]));

  const std::pair<const char*, const char*> bad[] = {
      {"/top-k", "namespace: is required"},
      {"/top-k?namespace=q&k=0", "k: must be a whole number in [1, 1000]"},
      {"/top-k?namespace=q&k=abc", "k: must be"},
      {"/top-k?namespace=q&half_life=1h", "keeps no half-life 1h view (it keeps: all-time, half-life 5m)"},
      {"/top-k?namespace=q&half_life=5x", "half_life: bad duration"},
      {"/top-k?namespace=q&window=1h", "window: namespace 'q' keeps no window 1h view (it keeps: all-time, half-life 5m)"},
      {"/top-k?namespace=q&window=soon", "or a duration like 1h (got 'soon')"},
      {"/top-k?namespace=q&window=1.5s", "window: windows are whole seconds (got '1.5s')"},
      {"/top-k?namespace=q&window=all&half_life=5m", "give one of the two"},
      {"/top-k?namespace=q&timestamp=1700000000", "timestamp: no snapshot of the all-time view at or before it (history is written every 10s and kept 90d)"},
      {"/top-k?namespace=q&half_life=5m&timestamp=1700000000", "timestamp: no snapshot of the half-life 5m view at or before it"},
      {"/history?namespace=q&item_id=a", "from: is required (seconds since the epoch)"},
      {"/history?namespace=q&item_id=a&from=5&to=4", "from: must be at most to"},
      {"/history?namespace=q&item_id=a&from=x&to=4", "from: must be seconds since the epoch, like 1708632000 (got 'x')"},
      {"/history?namespace=q&item_id=a&from=1&to=4&window=2h", "window: namespace 'q' keeps no window 2h view"},
      {"/top-k?namespace=q&timestamp=noon", "timestamp: must be seconds since the epoch, like 1708632000 (got 'noon')"},
      {"/top-k?namespace=q&timestamp=99999999999", "timestamp: 99999999999 is after now"},
      {"/top-k?namespace=q&k=1&k=2", "k: given more than once"},
      {"/count?namespace=q", "item_id: is required"},
      {"/top-k?namespace=%zz", "malformed percent-encoding"},
  };
  for (const auto& [target, says] : bad) {
    r = call("GET", target);
    EXPECT_EQ(r.status, 400) << target << " -> " << r.body;
    EXPECT_NE(r.body.find(says), std::string::npos) << target << " -> " << r.body;
  }
  EXPECT_EQ(call("GET", "/top-k?namespace=nope").status, 404);
  EXPECT_EQ(call("POST", "/counts", R"({"namespace":"q"})").status, 400);
  EXPECT_EQ(call("POST", "/counts", R"({"namespace":"q","item_ids":[1]})").status, 400);
}

TEST_F(ServerApi, WindowsAnswerOverTheirStatedBoundariesNowAndAsTheyWere) {
  // Event clock: "now" is the newest event, 1700000000 + 3599.5 (a
  // midnight UTC plus an hour less half a second).
  create(R"({"name":"win","k":3,"windows":["1m","1h"],"half_lives":["5m"],"clock":"event"})");
  const std::string events = R"({"namespace":"win","events":[
      {"item_id":"old","timestamp":1700000000,"weight":7},
      {"item_id":"a","timestamp":1700003000},
      {"item_id":"a","timestamp":1700003550,"weight":2},
      {"item_id":"b","timestamp":1700003560,"weight":4},
      {"item_id":"a","timestamp":1700003599.5}]})";
  ASSERT_EQ(call("POST", "/events", events).status, 204);
  simdjson::dom::parser p;
  auto r = call("GET", "/top-k?namespace=win&window=1m");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = parse(p, r.body);
  // The 1 s buckets from 1700003539 (the second holding now - 60 s) to now.
  EXPECT_EQ(double(doc["window"]["start"]), 1700003539);
  EXPECT_EQ(double(doc["window"]["end"]), 1700003599.5);
  EXPECT_EQ(double(doc["granularity"]), 1);
  EXPECT_EQ(std::string_view(doc["window_length"]), "1m");
  EXPECT_EQ(double(doc["total"]), 7);
  EXPECT_EQ(std::string_view(doc["items"].at(0)["item_id"]), "b");
  EXPECT_EQ(double(doc["items"].at(0)["estimated_count"]), 4);
  EXPECT_EQ(std::string_view(doc["items"].at(1)["item_id"]), "a");
  EXPECT_EQ(double(doc["items"].at(1)["estimated_count"]), 3);
  EXPECT_EQ(double(doc["items"].at(1)["lower_bound"]), 3);
  EXPECT_TRUE(doc["source"].error());  // only answers as of a past time say where they come from

  r = call("GET", "/top-k?namespace=win&window=1h");
  doc = parse(p, r.body);
  EXPECT_EQ(double(doc["window"]["start"]), 1699999980);  // the minute holding now - 1 h
  EXPECT_EQ(double(doc["granularity"]), 60);
  EXPECT_EQ(double(doc["total"]), 15);
  EXPECT_EQ(std::string_view(doc["items"].at(0)["item_id"]), "old");

  // As it was at 1700003555.5: the end on the second boundary before it;
  // the 1 s level keeps 78 s, so the start is on a 10 s boundary.
  r = call("GET", "/count?namespace=win&window=1m&item_id=a&timestamp=1700003555.5");
  ASSERT_EQ(r.status, 200) << r.body;
  doc = parse(p, r.body);
  EXPECT_EQ(std::string_view(doc["source"]), "memory");
  EXPECT_EQ(double(doc["window"]["end"]), 1700003555);
  EXPECT_EQ(double(doc["window"]["start"]), 1700003490);
  EXPECT_EQ(double(doc["granularity"]), 10);
  EXPECT_EQ(double(doc["estimated_count"]), 2);
  EXPECT_EQ(double(doc["rate"]), 2.0 / 65);
  r = call("POST", "/counts", R"({"namespace":"win","window":"1h","item_ids":["a","old","zz"],"timestamp":1700003000.5})");
  ASSERT_EQ(r.status, 200) << r.body;
  doc = parse(p, r.body);
  EXPECT_EQ(std::string_view(doc["source"]), "memory");
  // Only the minute level reaches back 10 minutes: the end is the minute
  // boundary before 1700003000.5, and the a at 1700003000 is after it.
  EXPECT_EQ(double(doc["window"]["end"]), 1700002980);
  EXPECT_EQ(double(doc["granularity"]), 60);
  EXPECT_EQ(double(doc["items"].at(0)["estimated_count"]), 0);
  EXPECT_EQ(double(doc["items"].at(1)["estimated_count"]), 7);
  EXPECT_EQ(double(doc["items"].at(2)["upper_bound"]), 0);

  // Before the rings reach: history's, which is not built yet.
  r = call("GET", "/top-k?namespace=win&window=1h&timestamp=1600000000");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(error_code(r), "history_unavailable");
  r = call("GET", "/top-k?namespace=win&window=2h");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("window: namespace 'win' keeps no window 2h view (it keeps: window 1m, window 1h, half-life 5m)"), std::string::npos) << r.body;
  r = call("GET", "/namespaces/win");
  doc = parse(p, r.body);
  EXPECT_EQ(std::string_view(doc["windows"].at(1)), "1h");
  EXPECT_EQ(uint64_t(doc["window_sketch_width"]), 8192u);
}

TEST_F(ServerApi, OperationsRoutesAndHttpErrors) {
  EXPECT_EQ(call("GET", "/healthz").status, 200);
  EXPECT_EQ(call("GET", "/readyz").status, 200);
  create(R"({"name":"m"})");
  ASSERT_EQ(call("POST", "/events", R"({"namespace":"m","events":[{"item_id":"a"}]})").status, 204);
  call("GET", "/top-k?namespace=nope");
  auto r = call("GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.headers["Content-Type"].find("text/plain"), std::string::npos);
  EXPECT_NE(r.body.find(R"(ebb_events_ingested_total{namespace="m"} 1)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"(ebb_http_requests_total{route="/events",status="204"} 1)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"(ebb_errors_total{code="namespace_not_found"} 1)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"(ebb_http_request_duration_seconds_bucket{route="/events",status="204",le="+Inf"} 1)"), std::string::npos);

  // Every metric the docs list is exported, and every exported one is documented.
  std::ifstream docs(std::string(EBB_SOURCE_DIR) + "/docs/api.md");
  std::stringstream ss;
  ss << docs.rdbuf();
  const std::string text = ss.str();
  std::set<std::string> documented, exported;
  const std::regex doc_metric("\\| `(ebb_[a-z_]+)`");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), doc_metric); it != std::sregex_iterator(); ++it) documented.insert((*it)[1]);
  const std::regex type_line("# TYPE (ebb_[a-z_]+) ");
  for (auto it = std::sregex_iterator(r.body.begin(), r.body.end(), type_line); it != std::sregex_iterator(); ++it) exported.insert((*it)[1]);
  EXPECT_FALSE(documented.empty());
  EXPECT_EQ(documented, exported);

  // Every path docs/openapi.yaml describes is a route of the server.
  std::ifstream spec(std::string(EBB_SOURCE_DIR) + "/docs/openapi.yaml");
  std::string line;
  int paths = 0;
  while (std::getline(spec, line)) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex("  (/[a-z\\-/{}]*):"))) {
      std::string path = std::regex_replace(m[1].str(), std::regex("\\{name\\}"), "m");
      path = std::regex_replace(path, std::regex("\\{file\\}"), "dashboard.js");
      EXPECT_NE(error_code(call("GET", path)), "not_found") << path;
      ++paths;
    }
  }
  EXPECT_EQ(paths, 22);

  r = call("DELETE", "/top-k");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["Allow"], "GET");
  EXPECT_EQ(call("GET", "/nope").status, 404);
  EXPECT_EQ(error_code(call("GET", "/nope")), "not_found");
}

// Configuration from a file (CLI11 --config), and a data directory held by
// another server is refused.
TEST(ServerStartup, ConfigFileAndDataDirectoryLock) {
  const auto dir = testing::make_temp_dir("ebb-config");
  const auto config = dir.string() + ".toml";
  std::ofstream(config) << "[serve]\nmax-batch-events = 2\n";
  {
    EbbServer server(dir, {"--config", config});
    HttpClient client(server.port());
    ASSERT_EQ(client.request("POST", "/namespaces", R"({"name":"c"})").status, 201);
    auto r = client.request("POST", "/events", R"({"namespace":"c","events":[{"item_id":"a"},{"item_id":"b"},{"item_id":"c"}]})");
    EXPECT_EQ(r.status, 413) << r.body;
    EXPECT_THROW(EbbServer second(dir), std::runtime_error);
    EXPECT_EQ(server.stop(), 0);
  }
  std::filesystem::remove_all(dir);
  std::filesystem::remove(config);
}

}  // namespace
}  // namespace ebb
