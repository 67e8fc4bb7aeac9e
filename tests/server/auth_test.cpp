// Bearer tokens (--auth-token-file): writes and admin need one, reads too
// with --auth-reads, probes never; header or ?access_token=; 401 with a
// WWW-Authenticate challenge; a refused request changes nothing. Against
// the real binary, and `ebb send`/`ebb query` with --auth-token-file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "support/ebb_server.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

constexpr const char* kToken = "s3cr3t-token-0123456789abcdef";
constexpr const char* kOldToken = "previous-token-abcdefghijklmnop";

std::filesystem::path write_token_file(const std::filesystem::path& dir, const std::string& text, mode_t mode = 0600) {
  const auto path = dir / "tokens";
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

io::HttpHeaders bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

std::string header_of(const io::HttpResult& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "<none>";
}

std::string stat_events(HttpClient& c, const std::string& token) {
  const auto body = c.request("GET", "/namespaces/t", "", "application/json", bearer(token)).body;
  const auto at = body.find(R"("events":)");
  return at == std::string::npos ? body : body.substr(at, body.find(',', at) - at);
}

TEST(Auth, WritesNeedATokenReadsAndProbesDoNot) {
  const auto dir = testing::make_temp_dir("ebb-auth");
  const auto tokens = write_token_file(dir, std::string("# rotation: both work\n") + kToken + "\n\n  " + kOldToken + "  \n");
  EbbServer server(dir / "data", {"--auth-token-file", tokens.string()});
  HttpClient c(server.port());
  const std::string ns = R"({"name":"t"})";
  const std::string batch = R"({"namespace":"t","events":[{"item_id":"a","weight":2}]})";

  auto r = c.request("POST", "/namespaces", ns);
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.body.find(R"("code":"unauthorized")"), std::string::npos) << r.body;
  EXPECT_EQ(header_of(r, "WWW-Authenticate"), R"(Bearer realm="ebb")");
  r = c.request("POST", "/namespaces", ns, "application/json", bearer("wrong-token-0123456789abcdef"));
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.body.find(R"("code":"invalid_token")"), std::string::npos) << r.body;
  EXPECT_EQ(header_of(r, "WWW-Authenticate"), R"(Bearer realm="ebb", error="invalid_token")");
  r = c.request("POST", "/namespaces", ns, "application/json", {{"Authorization", std::string("Basic ") + kToken}});
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.body.find(R"("code":"invalid_request")"), std::string::npos) << r.body;
  EXPECT_EQ(c.request("GET", "/namespaces/t").status, 404);  // nothing was created

  ASSERT_EQ(c.request("POST", "/namespaces", ns, "application/json", bearer(kToken)).status, 201);
  EXPECT_EQ(c.request("POST", "/events", batch).status, 401);
  EXPECT_EQ(c.request("POST", "/events?access_token=nope-nope-nope-nope-nope", batch).status, 401);
  EXPECT_EQ(stat_events(c, kToken), R"("events":0)");
  // The scheme is case-insensitive; both tokens of the file work; so does the query parameter.
  EXPECT_EQ(c.request("POST", "/events", batch, "application/json", {{"Authorization", std::string("bearer ") + kToken}}).status, 204);
  EXPECT_EQ(c.request("POST", "/events", batch, "application/json", bearer(kOldToken)).status, 204);
  EXPECT_EQ(c.request("POST", std::string("/events?access_token=") + kToken, batch).status, 204);
  EXPECT_EQ(c.request("POST", std::string("/events?access_token=") + kToken + "&access_token=" + kToken, batch).status, 401);
  EXPECT_EQ(stat_events(c, kToken), R"("events":3)");
  EXPECT_EQ(c.request("PATCH", "/namespaces/t", R"({"k":5})").status, 401);
  EXPECT_EQ(c.request("DELETE", "/namespaces/t").status, 401);

  // Reads stay open by default; so do the probes.
  r = c.request("GET", "/count?namespace=t&item_id=a&window=all");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find(R"("estimated_count":6,)"), std::string::npos) << r.body;
  EXPECT_EQ(c.request("POST", "/counts", R"({"namespace":"t","item_ids":["a"]})").status, 200);
  EXPECT_EQ(c.request("GET", "/metrics").status, 200);
  EXPECT_EQ(c.request("GET", "/healthz").status, 200);
  EXPECT_EQ(c.request("GET", "/readyz").status, 200);
  EXPECT_EQ(server.stop(), 0);
  EXPECT_NE(server.log().find("auth=writes and admin"), std::string::npos) << server.log();
  std::filesystem::remove_all(dir);
}

TEST(Auth, AuthReadsProtectsQueriesButNotProbes) {
  const auto dir = testing::make_temp_dir("ebb-auth-reads");
  const auto tokens = write_token_file(dir, std::string(kToken) + "\n", 0644);
  EbbServer server(dir / "data", {"--auth-token-file", tokens.string(), "--auth-reads"});
  HttpClient c(server.port());
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"t"})", "application/json", bearer(kToken)).status, 201);
  for (const auto& target : {"/namespaces", "/namespaces/t", "/top-k?namespace=t", "/count?namespace=t&item_id=a", "/metrics"}) {
    EXPECT_EQ(c.request("GET", target).status, 401) << target;
    EXPECT_EQ(c.request("GET", target, "", "application/json", bearer(kToken)).status, 200) << target;
  }
  EXPECT_EQ(c.request("GET", std::string("/top-k?namespace=t&access_token=") + kToken).status, 200);
  EXPECT_EQ(c.request("POST", "/counts", R"({"namespace":"t","item_ids":["a"]})").status, 401);
  EXPECT_EQ(c.request("GET", "/healthz").status, 200);
  EXPECT_EQ(c.request("GET", "/readyz").status, 200);
  EXPECT_EQ(server.stop(), 0);
  // A token file others can read is worth a warning.
  EXPECT_NE(server.log().find("can be read by other users (chmod 600 it)"), std::string::npos) << server.log();
  std::filesystem::remove_all(dir);
}

TEST(Auth, ABadTokenFileStopsTheServerWithTheReason) {
  const auto dir = testing::make_temp_dir("ebb-auth-bad");
  const std::pair<std::string, std::string> cases[] = {
      {"short\n", ":1: the token is 5 characters; a token needs at least 16"},
      {"# only a comment\n\n", "holds no token (one per line; '#' starts a comment)"},
      {"has a space inside it ok\n", ":1: the token has a character that is not visible ASCII"},
  };
  for (const auto& [text, message] : cases) {
    const auto tokens = write_token_file(dir, text);
    const auto r = testing::run_process({EBB_BINARY, "serve", "--port", "0", "--data-dir", (dir / "data").string(), "--auth-token-file", tokens.string()});
    EXPECT_EQ(r.exit_code, 2) << text;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  auto r = testing::run_process({EBB_BINARY, "serve", "--port", "0", "--data-dir", (dir / "data").string(), "--auth-token-file", (dir / "missing").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing: cannot read it: No such file or directory"), std::string::npos) << r.err;
  r = testing::run_process({EBB_BINARY, "serve", "--port", "0", "--data-dir", (dir / "data").string(), "--auth-reads"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--auth-reads needs --auth-token-file"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

TEST(Auth, SendAndQuerySendTheToken) {
  const auto dir = testing::make_temp_dir("ebb-auth-cli");
  const auto tokens = write_token_file(dir, std::string(kToken) + "\n");
  EbbServer server(dir / "data", {"--auth-token-file", tokens.string(), "--auth-reads"});
  HttpClient c(server.port());
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"t"})", "application/json", bearer(kToken)).status, 201);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  auto r = testing::run_process({EBB_BINARY, "send", "-n", "t", "--url", url, "--no-progress"}, "a\nb\na\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the server refused a batch (HTTP 401)"), std::string::npos) << r.err;
  r = testing::run_process({EBB_BINARY, "send", "-n", "t", "--url", url, "--no-progress", "--auth-token-file", tokens.string()}, "a\nb\na\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = testing::run_process({EBB_BINARY, "query", "-n", "t", "--url", url, "--item", "a", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  r = testing::run_process({EBB_BINARY, "query", "-n", "t", "--url", url, "--item", "a", "--json", "--auth-token-file", tokens.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("estimated_count":2,)"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
