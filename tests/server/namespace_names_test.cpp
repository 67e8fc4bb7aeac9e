// Namespace names are any UTF-8 text of 1-256 bytes without control
// characters (Redis keys such as "topk:user:42" name namespaces as they
// are): through the real server, percent-encoded in paths (a '/' as %2F),
// in query parameters and JSON, across a checkpoint and a log replay, under
// file names a filesystem takes.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ebb/core/percent_encoding.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "ebb/storage/checkpoint_store.hpp"
#include "support/ebb_server.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

std::string url(const std::string& name) { return percent_encode(name, "-_.~"); }

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string fire256() {
  std::string s;
  for (int i = 0; i < 64; ++i) s += "\xF0\x9F\x94\xA5";  // U+1F525, 4 bytes
  return s;
}

const std::vector<std::string>& names() {
  static const std::vector<std::string> n = {"topk:user:42", "hashtags/de", "a b?c&d=e#f%", "q\"\\", "\xE8\xB6\x8B\xE5\x8A\xBF", "...", ".a", fire256()};
  return n;
}

double total_weight(HttpClient& c, const std::string& name) {
  const auto r = c.request("GET", "/namespaces/" + url(name));
  EXPECT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser p;
  auto doc = p.parse(r.body);
  EXPECT_EQ(std::string(std::string_view(doc["name"])), name);
  return doc["stats"]["total_weight"].get_double().value();
}

void ingest(HttpClient& c, const std::string& name, int weight) {
  const std::string body = R"({"namespace":)" + json_string(name) + R"(,"events":[{"item_id":"x","weight":)" + std::to_string(weight) + "}]}";
  ASSERT_EQ(c.request("POST", "/events", body).status, 204) << body;
}

TEST(NamespaceNames, RuleNamesWhatIsWrong) {
  EXPECT_FALSE(engine::namespace_name_problem("topk:user:42"));
  EXPECT_FALSE(engine::namespace_name_problem(fire256()));
  EXPECT_FALSE(engine::namespace_name_problem("\xC2\xA0"));  // U+00A0, no-break space: printable
  EXPECT_EQ(engine::namespace_name_problem(""), "must not be empty");
  EXPECT_EQ(engine::namespace_name_problem(fire256() + "x"), "is 257 bytes long (at most 256)");
  EXPECT_EQ(engine::namespace_name_problem("ab\xFF"), "must be UTF-8 text (byte 2 is not)");
  EXPECT_EQ(engine::namespace_name_problem("a\tb"), "must not hold control characters (byte 1 starts one)");
  EXPECT_EQ(engine::namespace_name_problem(std::string("a\0b", 3)), "must not hold control characters (byte 1 starts one)");
  EXPECT_EQ(engine::namespace_name_problem("ab\x7F"), "must not hold control characters (byte 2 starts one)");
  EXPECT_EQ(engine::namespace_name_problem("\xC2\x85"), "must not hold control characters (byte 0 starts one)");  // U+0085, C1
}

TEST(NamespaceNames, FileNamesFitAndStayDistinct) {
  EXPECT_EQ(storage::encode_file_name("hot_list-1"), "hot_list-1");  // existing data directories keep their files
  EXPECT_EQ(storage::encode_file_name("topk:user:42"), "topk%3Auser%3A42");
  EXPECT_EQ(storage::encode_file_name(".."), "%2E%2E");
  const std::string a = storage::encode_file_name(fire256());
  const std::string b = storage::encode_file_name(fire256().substr(0, 252) + "abcd");
  EXPECT_LE(a.size(), 200u);
  EXPECT_NE(a, b);  // same first 160 encoded bytes, different hash
  EXPECT_EQ(a.substr(0, 160), std::string(storage::encode_file_name(fire256()).substr(0, 160)));
  EXPECT_EQ(a.substr(a.size() - 17, 1), "~");
  // Never cut inside a %XX: 53 "%F0%9F..." triplets are 159 bytes, so the head stops there.
  EXPECT_EQ(a.find('~'), 159u);
}

TEST(NamespaceNames, WideNamesWorkEverywhereAndSurviveRestarts) {
  const auto dir = testing::make_temp_dir("ebb-names");
  {
    EbbServer server(dir);
    HttpClient c(server.port());
    for (const auto& name : names()) {
      const auto r = c.request("POST", "/namespaces", R"({"name":)" + json_string(name) + R"(,"k":5})");
      ASSERT_EQ(r.status, 201) << r.body;
      EXPECT_EQ(r.headers.at("Location"), "/namespaces/" + url(name));
      ingest(c, name, 3);
      EXPECT_EQ(total_weight(c, name), 3);
      const auto top = c.request("GET", "/top-k?namespace=" + url(name));
      ASSERT_EQ(top.status, 200) << top.body;
      EXPECT_NE(top.body.find(R"("item_id":"x")"), std::string::npos) << top.body;
    }
    // Prometheus quotes '"' and '\' in label values.
    EXPECT_NE(c.request("GET", "/metrics").body.find("ebb_events_ingested_total{namespace=\"q\\\"\\\\\"} 1\n"), std::string::npos);
    // "hashtags/de" is one segment when sent as %2F; unencoded it is no name.
    EXPECT_EQ(c.request("GET", "/namespaces/hashtags/de").status, 404);
    EXPECT_EQ(c.request("GET", "/namespaces/hashtags").status, 404);
    ASSERT_EQ(server.stop(), 0) << server.log();  // a last checkpoint
  }
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    EXPECT_LE(e.path().filename().string().size(), 255u) << e.path();
  }
  {
    EbbServer server(dir, {"--checkpoint-interval", "1h"});
    HttpClient c(server.port());
    for (const auto& name : names()) {
      EXPECT_EQ(total_weight(c, name), 3) << name;
      ingest(c, name, 4);
    }
    ASSERT_EQ(c.request("DELETE", "/namespaces/" + url("hashtags/de")).status, 204);
    server.stop_hard();  // the later writes live in the log alone
  }
  EbbServer server(dir);
  HttpClient c(server.port());
  for (const auto& name : names()) {
    if (name == "hashtags/de") {
      EXPECT_EQ(c.request("GET", "/namespaces/" + url(name)).status, 404);
    } else {
      EXPECT_EQ(total_weight(c, name), 7) << name;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(NamespaceNames, BadNamesAreRefusedByReason) {
  const auto dir = testing::make_temp_dir("ebb-names");
  EbbServer server(dir);
  HttpClient c(server.port());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"name":""})", "name: must not be empty"},
      {R"({"name":")" + fire256() + R"(x"})", "name: is 257 bytes long (at most 256)"},
      {R"({"name":"a\u0001b"})", "name: must not hold control characters (byte 1 starts one)"},
      {R"({"name":"a\u0085"})", "name: must not hold control characters (byte 1 starts one)"},
      {R"({"name":"tab\there"})", "name: must not hold control characters (byte 3 starts one)"},
      {R"({"name":".."})", "name: must not be '.' or '..' (URLs resolve them as path segments)"},
      {R"({"name":"."})", "name: must not be '.' or '..' (URLs resolve them as path segments)"},
      {R"({"name":"x","redis":{"type":"cms","width":10,"depth":5}})", "redis: is set by TOPK.RESERVE and CMS.INITBYDIM / INITBYPROB over the Redis protocol, not in a request"},
  };
  for (const auto& [body, message] : cases) {
    const auto r = c.request("POST", "/namespaces", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_NE(r.body.find(message), std::string::npos) << r.body;
  }
  EXPECT_EQ(c.request("GET", "/namespaces").body.find("\"name\""), std::string::npos);  // nothing was created
  EXPECT_EQ(c.request("GET", "/namespaces/%ZZ").status, 400);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
