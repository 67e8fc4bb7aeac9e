// Distributions that forget over HTTP, against the real binary: the Go
// forgettable server's requests (its README's) and response shapes, exact
// counts (a server rate of 0: no decay), its error names, limits that
// change nothing, and the log and checkpoints keeping what was counted.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "support/ebb_server.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

// The body with the value of "T" (a wall-clock time) replaced by "<T>";
// the time itself is checked to be recent.
std::string without_t(const std::string& body) {
  const auto at = body.find("\"T\":");
  if (at == std::string::npos) return body;
  const auto end = body.find(',', at);
  const double t = std::stod(body.substr(at + 4, end - at - 4));
  EXPECT_GT(t, 1.7e9) << body;
  return body.substr(0, at + 4) + "<T>" + body.substr(end);
}

std::string status_txt(const testing::HttpResult& r) {
  simdjson::dom::parser p;
  simdjson::dom::element e;
  std::string_view txt;
  if (p.parse(r.body).get(e) || e["status_txt"].get(txt)) return "<" + r.body + ">";
  return std::string(txt);
}

TEST(DistributionsApi, ForgettablesRequestsGetItsShapesWithExactCounts) {
  const auto dir = testing::make_temp_dir("ebb-dist");
  EbbServer server(dir, {"--distribution-rate", "0"});
  HttpClient c(server.port());
  auto r = c.request("GET", "/incr?distribution=colors&field=red");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "OK");
  r = c.request("GET", "/incr?distribution=colors&field=red&field=blue&N=2.5");
  EXPECT_EQ(r.body, "OK");

  EXPECT_EQ(without_t(c.request("GET", "/dist?distribution=colors").body),
            R"({"status_code":200,"status_txt":"","data":{"distribution":"colors","Z":6,"T":<T>,"data":[)"
            R"({"bin":"red","count":3.5,"p":0.5833333333333334},{"bin":"blue","count":2.5,"p":0.4166666666666667}],"rate":0,"prune":true}})");
  // Fields in the order asked, one it does not have at 0; Z is the whole distribution's.
  EXPECT_EQ(without_t(c.request("GET", "/get?distribution=colors&field=blue&field=green&field=red").body),
            R"({"status_code":200,"status_txt":"","data":{"distribution":"colors","Z":6,"T":<T>,"data":[)"
            R"({"bin":"blue","count":2.5,"p":0.4166666666666667},{"bin":"green","count":0,"p":0},)"
            R"({"bin":"red","count":3.5,"p":0.5833333333333334}],"rate":0,"prune":true}})");
  EXPECT_EQ(without_t(c.request("GET", "/nmostprobable?distribution=colors&N=1").body),
            R"({"status_code":200,"status_txt":"","data":{"distribution":"colors","Z":6,"T":<T>,"data":[)"
            R"({"bin":"red","count":3.5,"p":0.5833333333333334}],"rate":0,"prune":true}})");
  // N defaults to 10.
  for (int i = 0; i < 12; ++i) c.request("GET", "/incr?distribution=many&field=f" + std::to_string(i) + "&N=" + std::to_string(i + 1));
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  const auto many = c.request("GET", "/nmostprobable?distribution=many").body;
  ASSERT_EQ(p.parse(many).get(doc), simdjson::SUCCESS) << many;
  simdjson::dom::array bins = doc["data"]["data"];
  ASSERT_EQ(bins.size(), 10u);
  EXPECT_EQ(std::string_view(bins.at(0)["bin"]), "f11");
  EXPECT_EQ(std::string_view(bins.at(9)["bin"]), "f2");
  EXPECT_EQ(double(doc["data"]["Z"]), 78);

  EXPECT_EQ(c.request("GET", "/dbsize").body, R"({"status_code":200,"status_txt":"","data":2})");
  // A distribution never written answers as forgettable's did: empty.
  EXPECT_EQ(c.request("GET", "/dist?distribution=nothing&rate=0.5").body,
            R"({"status_code":200,"status_txt":"","data":{"distribution":"nothing","Z":0,"T":0,"data":[],"rate":0.5,"prune":true}})");
  EXPECT_EQ(c.request("GET", "/get?distribution=nothing&field=a").body,
            R"({"status_code":200,"status_txt":"","data":{"distribution":"nothing","Z":0,"T":0,"data":[{"bin":"a","count":0,"p":0}],"rate":0,"prune":true}})");
  // A read's rate decays from the last write; a huge one leaves nothing over the minimum count.
  EXPECT_EQ(without_t(c.request("GET", "/dist?distribution=colors&rate=1e9").body),
            R"({"status_code":200,"status_txt":"","data":{"distribution":"colors","Z":0,"T":<T>,"data":[],"rate":1000000000,"prune":true}})");
  std::filesystem::remove_all(dir);
}

TEST(DistributionsApi, BadRequestsNameTheParameterInTheEnvelopeAndChangeNothing) {
  const auto dir = testing::make_temp_dir("ebb-dist-errors");
  EbbServer server(dir, {"--distribution-rate", "0", "--distribution-max-bins", "3", "--max-distribution-bins", "4", "--max-item-bytes", "8"});
  HttpClient c(server.port());
  ASSERT_EQ(c.request("GET", "/incr?distribution=d&field=a&field=b").body, "OK");
  const std::string before = c.request("GET", "/dist?distribution=d").body;
  struct Case {
    std::string target;
    int status;
    std::string txt;
  };
  const std::vector<Case> cases = {
      {"/incr?field=a", 400, "MISSING_ARG_DISTRIBUTION"},
      {"/incr?distribution=&field=a", 400, "MISSING_ARG_DISTRIBUTION"},
      {"/incr?distribution=d", 400, "MISSING_ARG_FIELD"},
      {"/incr?distribution=d&field=a&field=", 400, "MISSING_ARG_FIELD"},
      {"/incr?distribution=d&field=a&N=abc", 400, "COULDNT_PARSE_N"},
      {"/incr?distribution=d&field=a&N=0", 400, "COULDNT_PARSE_N"},
      {"/incr?distribution=d&field=a&N=-2", 400, "COULDNT_PARSE_N"},
      {"/incr?distribution=d&field=a&N=inf", 400, "COULDNT_PARSE_N"},
      {"/incr?distribution=d&field=a&N=1&N=2", 400, "COULDNT_PARSE_N"},   // given twice
      {"/incr?distribution=d&field=c&field=e", 400, "INVALID_FIELD"},            // 4 bins > --distribution-max-bins 3
      {"/incr?distribution=d&field=toolongname", 400, "INVALID_FIELD"},         // > --max-item-bytes 8
      {"/incr?distribution=toolongname&field=a", 400, "INVALID_DISTRIBUTION"},
      {"/incr?distribution=d&field=%FF", 400, "INVALID_FIELD"},
      {"/get?distribution=%FE&field=a", 400, "INVALID_DISTRIBUTION"},
      {"/incr?distribution=e&field=a&field=b&field=c", 507, "INSUFFICIENT_STORAGE"},  // 5 bins in all > 4
      {"/get?distribution=d", 400, "MISSING_ARG_FIELD"},
      {"/get?field=a", 400, "MISSING_ARG_DISTRIBUTION"},
      {"/get?distribution=d&field=a&rate=fast", 400, "CANNOT_PARSE_RATE"},
      {"/dist?distribution=d&rate=-1", 400, "CANNOT_PARSE_RATE"},
      {"/dist", 400, "MISSING_ARG_DISTRIBUTION"},
      {"/nmostprobable?distribution=d&N=0", 400, "INVALID_ARG_N"},
      {"/nmostprobable?distribution=d&N=2.5", 400, "INVALID_ARG_N"},
      {"/incr?distribution=d&field=a&N=0.0001", 400, "COULDNT_PARSE_N"},  // under --distribution-min-count
  };
  for (const auto& k : cases) {
    const auto r = c.request("GET", k.target);
    EXPECT_EQ(r.status, k.status) << k.target << " " << r.body;
    EXPECT_EQ(status_txt(r), k.txt) << k.target << " " << r.body;
    EXPECT_NE(r.body.find(R"("data":null,"error":{"code":)"), std::string::npos) << r.body;
  }
  EXPECT_EQ(c.request("GET", "/dist?distribution=d").body, before);
  EXPECT_EQ(c.request("GET", "/dbsize").body, R"({"status_code":200,"status_txt":"","data":1})");
  EXPECT_EQ(c.request("POST", "/incr?distribution=d&field=a").status, 405);
  // Within the limits it goes on: 2 more bins make 4 in all.
  EXPECT_EQ(c.request("GET", "/incr?distribution=e&field=a&field=b").body, "OK");
  std::filesystem::remove_all(dir);
}

TEST(DistributionsApi, IncrementsSurviveACrashAndACheckpoint) {
  const auto dir = testing::make_temp_dir("ebb-dist-durable");
  const std::string want = R"({"bin":"x","count":3,"p":0.75},{"bin":"y","count":1,"p":0.25}])";
  {
    EbbServer server(dir, {"--distribution-rate", "0"});
    HttpClient c(server.port());
    for (int i = 0; i < 40; ++i) ASSERT_EQ(c.request("GET", "/incr?distribution=d" + std::to_string(i) + "&field=x&N=3").body, "OK");
    ASSERT_EQ(c.request("GET", "/incr?distribution=d7&field=y").body, "OK");
    server.signal(SIGKILL);  // acknowledged: in the log
  }
  {
    EbbServer server(dir);
    HttpClient c(server.port());
    EXPECT_EQ(c.request("GET", "/dbsize").body, R"({"status_code":200,"status_txt":"","data":40})");
    EXPECT_NE(c.request("GET", "/dist?distribution=d7").body.find(want), std::string::npos);
    EXPECT_EQ(server.stop(), 0);  // a checkpoint with the shards
  }
  std::size_t parts = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "checkpoints" / "state")) parts += e.path().filename().string().starts_with("distributions.");
  EXPECT_GT(parts, 1u);
  {
    EbbServer server(dir);
    HttpClient c(server.port());
    EXPECT_EQ(c.request("GET", "/dbsize").body, R"({"status_code":200,"status_txt":"","data":40})");
    EXPECT_NE(c.request("GET", "/dist?distribution=d7").body.find(want), std::string::npos);
    EXPECT_NE(c.request("GET", "/metrics").body.find("ebb_recovery_records_replayed 0\n"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

// bitly's Poisson decay (--distribution-decay poisson): "prune": false (each
// bin stops at 1), and the decay is logged with the increment, so a restart
// under the default (exact) replays it as it was. Reads at rate 0 see the
// counts as of the last write, deterministically.
TEST(DistributionsApi, PoissonDecayIsAnOptionThatSurvivesARestart) {
  const auto dir = testing::make_temp_dir("ebb-dist-poisson");
  const std::string want = R"("data":[{"bin":"x","count":7,"p":0.875},{"bin":"y","count":1,"p":0.125}],"rate":0,"prune":false})";
  {
    EbbServer server(dir, {"--distribution-decay", "poisson", "--distribution-rate", "0.01"});
    HttpClient c(server.port());
    ASSERT_EQ(c.request("GET", "/incr?distribution=p&field=x&N=7").body, "OK");
    ASSERT_EQ(c.request("GET", "/incr?distribution=p&field=y").body, "OK");
    auto body = c.request("GET", "/dist?distribution=p&rate=0").body;
    EXPECT_NE(body.find(want), std::string::npos) << body;
    body = c.request("GET", "/dist?distribution=p").body;
    EXPECT_NE(body.find(R"("rate":0.01,"prune":false})"), std::string::npos) << body;
    server.signal(SIGKILL);
  }
  {
    EbbServer server(dir);
    HttpClient c(server.port());
    auto body = c.request("GET", "/dist?distribution=p&rate=0").body;
    EXPECT_NE(body.find(want), std::string::npos) << body;
    ASSERT_EQ(c.request("GET", "/incr?distribution=e&field=x").body, "OK");  // a new one: the server's default, exact
    body = c.request("GET", "/dist?distribution=e").body;
    EXPECT_NE(body.find(R"("prune":true})"), std::string::npos) << body;
    EXPECT_EQ(server.stop(), 0);
  }
  std::filesystem::remove_all(dir);
}

TEST(DistributionsApi, EbbQueryAsksTheRoutes) {
  const auto dir = testing::make_temp_dir("ebb-dist-cli");
  EbbServer server(dir, {"--distribution-rate", "0"});
  HttpClient c(server.port());
  ASSERT_EQ(c.request("GET", "/incr?distribution=colors&field=red&N=3").body, "OK");
  ASSERT_EQ(c.request("GET", "/incr?distribution=colors&field=blue").body, "OK");
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  auto q = testing::run_process({EBB_BINARY, "query", "--url", url, "--dist", "colors"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("distribution 'colors': Z 4, last write "), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("rate 0/s\nbin "), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("\nred                                          3    0.750000\nblue                                         1    0.250000\n"),
            std::string::npos)
      << q.out;
  q = testing::run_process({EBB_BINARY, "query", "--url", url, "--dist", "colors", "--field", "blue", "--field", "green", "--json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find(R"("data":[{"bin":"blue","count":1,"p":0.25},{"bin":"green","count":0,"p":0}])"), std::string::npos) << q.out;
  q = testing::run_process({EBB_BINARY, "query", "--url", url, "--dist", "colors", "--most-probable", "1", "--rate", "0"});
  EXPECT_NE(q.out.find("\nred "), std::string::npos) << q.out;
  EXPECT_EQ(q.out.find("\nblue "), std::string::npos) << q.out;
  q = testing::run_process({EBB_BINARY, "query", "--url", url, "--dbsize"});
  EXPECT_EQ(q.out, "1 distributions\n");
  q = testing::run_process({EBB_BINARY, "query", "--url", url, "--dist", "colors", "--rate", "-1"});
  EXPECT_NE(q.exit_code, 0);
  q = testing::run_process({EBB_BINARY, "query", "--url", url, "-k", "3"});
  EXPECT_EQ(q.exit_code, 2) << q.out << q.err;
  EXPECT_NE(q.err.find("--namespace is required"), std::string::npos) << q.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
