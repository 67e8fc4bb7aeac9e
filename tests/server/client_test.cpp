// `ebb send` and `ebb query` against a real `ebb serve`.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

#include "support/ebb_server.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::run_process;

const std::string kEbb = EBB_BINARY;
const std::string kData = EBB_TEST_DATA;

// `ebb send` retries a batch the server could not take (503, 429) after
// its Retry-After, with the same Idempotency-Key, so it counts once. A
// stand-in server answers 503 then 204 and records what it got.
TEST(EbbClients, SendRetriesABatchWithTheSameIdempotencyKey) {
  namespace net = boost::asio;
  namespace http = boost::beast::http;
  net::io_context ioc;
  net::ip::tcp::acceptor acceptor(ioc, {net::ip::make_address("127.0.0.1"), 0});
  const auto port = acceptor.local_endpoint().port();
  std::vector<std::string> keys, bodies;
  std::thread server([&] {
    int answered = 0;
    while (answered < 2) {
      net::ip::tcp::socket socket(ioc);
      acceptor.accept(socket);
      boost::beast::flat_buffer buffer;
      boost::system::error_code ec;
      while (answered < 2) {
        http::request<http::string_body> req;
        http::read(socket, buffer, req, ec);
        if (ec) break;
        keys.emplace_back(req["Idempotency-Key"]);
        bodies.push_back(req.body());
        http::response<http::string_body> res{answered == 0 ? http::status::service_unavailable : http::status::no_content, 11};
        if (answered == 0) {
          res.set("Retry-After", "0");
          res.set(http::field::content_type, "application/json");
          res.body() = R"({"error":{"code":"persist_failed","message":"disk full"}})";
        }
        res.prepare_payload();
        http::write(socket, res, ec);
        ++answered;
      }
    }
  });
  const auto r = run_process({kEbb, "send", "-n", "t", "--url", "http://127.0.0.1:" + std::to_string(port), "--no-progress"}, "a\nb\n");
  server.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("2 events in 1 requests"), std::string::npos) << r.err;
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].rfind("ebb-send-", 0), 0u) << keys[0];
  EXPECT_EQ(keys[0], keys[1]);
  EXPECT_EQ(bodies[0], bodies[1]);
  EXPECT_EQ(bodies[0], R"({"namespace":"t","events":[{"item_id":"a"},{"item_id":"b"}]})");
}

TEST(EbbClients, SendAFileThenQueryIt) {
  const auto dir = testing::make_temp_dir("ebb-clients");
  EbbServer server(dir);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  testing::HttpClient admin(server.port());
  ASSERT_EQ(admin.request("POST", "/namespaces", R"({"name":"paths","half_lives":["10m"],"windows":["all"],"clock":"event"})").status, 201);

  auto r = run_process({kEbb, "send", "-n", "paths", "--url", url, "--format", "clf", "--batch", "50", kData + "/access.log"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("275 events in 6 requests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("access.log:276: no [time] field"), std::string::npos) << r.err;

  r = run_process({kEbb, "query", "-n", "paths", "--url", url, "-k", "2", "--window", "all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1  /index.html             120"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2  /api/search              80"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("/login"), std::string::npos) << r.out;

  // Event time came along: the 10m view decayed relative to the newest event.
  r = run_process({kEbb, "query", "-n", "paths", "--url", url, "--half-life", "10m", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("half_life":"10m","as_of":1708634740)"), std::string::npos) << r.out;

  r = run_process({kEbb, "query", "-n", "paths", "--url", url, "--item", "/login", "--item", "/missing", "--window", "all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("/login"), std::string::npos);
  EXPECT_NE(r.out.find("40.00"), std::string::npos) << r.out;

  // Errors: the server's message, exit 1; a bad URL, exit 2.
  r = run_process({kEbb, "query", "-n", "nope", "--url", url});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no namespace 'nope'"), std::string::npos) << r.err;
  r = run_process({kEbb, "send", "-n", "nope", "--url", url}, "a\nb\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("0 events sent before it were accepted"), std::string::npos) << r.err;
  r = run_process({kEbb, "query", "-n", "paths", "--url", "https://example"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("http://"), std::string::npos) << r.err;
  EXPECT_EQ(server.stop(), 0);
  r = run_process({kEbb, "query", "-n", "paths", "--url", url});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot reach"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

// ebb query --hot-keys: the list, and with --follow the stream until the
// namespace goes.
TEST(EbbClients, QueryHotKeysAndFollowThem) {
  const auto dir = testing::make_temp_dir("ebb-clients-hot");
  EbbServer server(dir);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  testing::HttpClient admin(server.port());
  ASSERT_EQ(admin.request("POST", "/namespaces", R"({"name":"keys","clock":"event","hot_key_threshold":20})").status, 201);
  for (int s = 0; s < 20; ++s) {
    std::string body = R"({"namespace":"keys","events":[)";
    for (int i = 0; i < 40; ++i) body += std::string(i ? "," : "") + R"({"item_id":"tenant-42","timestamp":)" + std::to_string(1700000000 + s) + "}";
    ASSERT_EQ(admin.request("POST", "/events", body + "]}").status, 204);
  }
  auto r = run_process({kEbb, "query", "-n", "keys", "--url", url, "--hot-keys"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hot keys of 'keys': rate >= 20 events/s (half-life 10s), as of 2023-11-14T22:13:39Z"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tenant-42"), std::string::npos) << r.out;

  testing::ProcessResult followed;
  std::thread follower([&] { followed = run_process({kEbb, "query", "-n", "keys", "--url", url, "--hot-keys", "--follow", "--json"}); });
  // Once the stream is open, deleting the namespace ends it.
  bool open = false;
  for (int i = 0; i < 500 && !open; ++i) {
    open = admin.request("GET", "/metrics").body.find("ebb_hot_key_streams 1\n") != std::string::npos;
    if (!open) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(open);
  EXPECT_EQ(admin.request("DELETE", "/namespaces/keys").status, 204);
  follower.join();
  EXPECT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_EQ(followed.out.find(R"({"event":"hot","data":{"item_id":"tenant-42","rate":)"), 0u) << followed.out;
  EXPECT_NE(followed.out.find("\n{\"event\":\"end\",\"data\":{\"reason\":\"namespace deleted\"}}\n"), std::string::npos) << followed.out;
  r = run_process({kEbb, "query", "-n", "keys", "--url", url, "--hot-keys", "--item", "x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // CLI11's usage error
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// A line whose key is not UTF-8 cannot go into the batch's JSON as it is
// (the server would refuse the whole batch): ebb send reports it like any
// malformed line, with file:line, and sends the rest.
TEST(EbbClients, SendReportsAndSkipsLinesWhoseKeyIsNotUtf8) {
  const auto dir = testing::make_temp_dir("ebb-clients-utf8");
  EbbServer server(dir);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  testing::HttpClient admin(server.port());
  ASSERT_EQ(admin.request("POST", "/namespaces", R"({"name":"keys","windows":["all"]})").status, 201);

  std::string input = "a\nb\xFF\nc\xC3\xA9\na\n";
  for (int i = 0; i < 6; ++i) input += "bad\xED\xA0\x80\n";  // a surrogate
  auto r = run_process({kEbb, "send", "-n", "keys", "--url", url}, input);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ebb send: 3 events in 1 requests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ebb send: 7 malformed lines skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  stdin:2: item_id is not valid UTF-8 (byte 0xFF at offset 1)\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  stdin:5: item_id is not valid UTF-8 (byte 0xED at offset 3)\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  ... and 2 more\n"), std::string::npos) << r.err;

  auto counts = admin.request("POST", "/counts", R"({"namespace":"keys","item_ids":["a","c\u00e9"],"window":"all"})");
  ASSERT_EQ(counts.status, 200) << counts.body;
  EXPECT_NE(counts.body.find(R"("item_id":"a","estimated_count":2,)"), std::string::npos) << counts.body;
  EXPECT_NE(counts.body.find("\"item_id\":\"c\xC3\xA9\",\"estimated_count\":1,"), std::string::npos) << counts.body;
  EXPECT_NE(admin.request("GET", "/top-k?namespace=keys&window=all").body.find(R"("total":3,)"), std::string::npos);
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
