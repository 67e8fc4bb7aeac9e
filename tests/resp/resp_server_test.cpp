// The RESP front end through the real binary and real clients: redis-cli
// (RESP2, and RESP3 with -3) for every TOPK command, its error paths with
// RedisBloom's texts, and the connection commands; raw sockets for
// pipelines, framing errors and limits; AUTH with a token file; a crash
// after acknowledged adds; python3-redis (redis-py) for a client library's
// view (tests/resp/redis_py_check.py).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/ebb_server.hpp"
#include "support/raw_connection.hpp"
#include "support/redis_cli.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;
using testing::RawConnection;

// redis-cli's formatted output, and a command's bytes (tests/support).
std::string cli(unsigned short port, std::vector<std::string> args, const std::vector<std::string>& options = {}) {
  return testing::redis_cli(port, std::move(args), options);
}
std::string command(const std::vector<std::string>& args) { return testing::resp_command(args); }

class Resp : public ::testing::Test {
 protected:
  void SetUp() override { start(); }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0) << server_->log();
    }
    std::filesystem::remove_all(dir_);
  }
  void start(std::vector<std::string> extra = {}) {
    if (dir_.empty()) dir_ = testing::make_temp_dir("ebb-resp");
    extra.insert(extra.begin(), {"--resp-port", "0"});
    server_ = std::make_unique<EbbServer>(dir_, extra);
    port_ = server_->resp_port();
  }
  std::string run(std::vector<std::string> args) { return cli(port_, std::move(args)); }
  std::string run3(std::vector<std::string> args) { return cli(port_, std::move(args), {"-3"}); }

  std::filesystem::path dir_;
  std::unique_ptr<EbbServer> server_;
  unsigned short port_ = 0;
};

TEST_F(Resp, TopKCommandsAnswerAsRedisBloomDoes) {
  EXPECT_EQ(run({"TOPK.RESERVE", "topk:user:42", "3"}), "OK\n");
  EXPECT_EQ(run({"TOPK.ADD", "topk:user:42", "a", "b", "a", "c"}), "1) (nil)\n2) (nil)\n3) (nil)\n4) (nil)\n");
  // d enters past c and b (1 each, c ranks last by key): c is the one pushed out, named at d.
  EXPECT_EQ(run({"TOPK.INCRBY", "topk:user:42", "d", "5", "a", "0"}), "1) \"c\"\n2) (nil)\n");
  EXPECT_EQ(run({"TOPK.LIST", "topk:user:42"}), "1) \"d\"\n2) \"a\"\n3) \"b\"\n");
  EXPECT_EQ(run({"TOPK.LIST", "topk:user:42", "WITHCOUNT"}), "1) \"d\"\n2) (integer) 5\n3) \"a\"\n4) (integer) 2\n5) \"b\"\n6) (integer) 1\n");
  EXPECT_EQ(run({"TOPK.QUERY", "topk:user:42", "a", "c", "zz"}), "1) (integer) 1\n2) (integer) 0\n3) (integer) 0\n");
  EXPECT_EQ(run({"TOPK.COUNT", "topk:user:42", "a", "c", "zz"}), "1) (integer) 2\n2) (integer) 1\n3) (integer) 0\n");
  EXPECT_EQ(run({"TOPK.LIST", "topk:user:42", "WITHCOUNT", "WITHBOUNDS"}),
            " 1) \"d\"\n 2) (integer) 5\n 3) \"5\"\n 4) \"5\"\n 5) \"5\"\n 6) \"a\"\n 7) (integer) 2\n 8) \"2\"\n 9) \"2\"\n10) \"2\"\n"
            "11) \"b\"\n12) (integer) 1\n13) \"1\"\n14) \"1\"\n15) \"1\"\n");
  const auto info = run({"TOPK.INFO", "topk:user:42"});
  EXPECT_EQ(info.substr(0, info.find(" 9)")), " 1) \"k\"\n 2) (integer) 3\n 3) \"width\"\n 4) (integer) 8\n 5) \"depth\"\n 6) (integer) 7\n 7) \"decay\"\n 8) \"0.9\"\n");
  EXPECT_NE(info.find("\"ebb_sketch_width\"\n10) (integer) 2048\n"), std::string::npos) << info;
  EXPECT_NE(info.find("\"ebb_candidates\"\n14) (integer) 512\n"), std::string::npos) << info;
  EXPECT_EQ(run({"TYPE", "topk:user:42"}), "TopK-TYPE\n");
  // RESP3: booleans, a map, doubles.
  EXPECT_EQ(run3({"TOPK.QUERY", "topk:user:42", "a", "zz"}), "1) (true)\n2) (false)\n");
  EXPECT_EQ(run3({"TOPK.INFO", "topk:user:42"}).substr(0, 74),
            "1# \"k\" => (integer) 3\n2# \"width\" => (integer) 8\n3# \"depth\" => (integer) 7\n");
  EXPECT_EQ(run3({"TOPK.LIST", "topk:user:42", "WITHBOUNDS"}).substr(0, 61), " 1) \"d\"\n 2) (double) 5\n 3) (double) 5\n 4) (double) 5\n 5) \"a\"\n");
}

TEST_F(Resp, BadArgumentsGetRedisBloomsErrorsAndChangeNothing) {
  ASSERT_EQ(run({"TOPK.RESERVE", "t", "2", "100", "5", "0.5"}), "OK\n");
  const std::string incr_error =
      "(error) TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000\n";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"TOPK.RESERVE", "t", "2"}, "(error) TopK: key already exists\n"},
      {{"TOPK.RESERVE", "u", "0"}, "(error) TopK: invalid k\n"},
      {{"TOPK.RESERVE", "u", "x"}, "(error) TopK: invalid k\n"},
      {{"TOPK.RESERVE", "u", "3", "8"}, "(error) ERR wrong number of arguments for 'topk.reserve' command\n"},
      {{"TOPK.RESERVE", "u", "3", "0", "7", "0.9"}, "(error) TopK: invalid width\n"},
      {{"TOPK.RESERVE", "u", "3", "8", "0", "0.9"}, "(error) TopK: invalid depth\n"},
      {{"TOPK.RESERVE", "u", "3", "8", "7", "1.5"}, "(error) TopK: invalid decay value. must be '<= 1' & '> 0'\n"},
      {{"TOPK.RESERVE", "u", "3", "8", "7", "0"}, "(error) TopK: invalid decay value. must be '<= 1' & '> 0'\n"},
      {{"TOPK.RESERVE", "u", "3", "8", "7", "0.9", "x"}, "(error) ERR wrong number of arguments for 'topk.reserve' command\n"},
      {{"TOPK.RESERVE", "u", "3", "HALFLIFE", "soon"}, "(error) ERR half_lives: bad duration 'soon' (expected a number and a unit: ms, s, m, h, d, w)\n"},
      {{"TOPK.RESERVE", "u", "2000"}, "(error) ERR k: must be in [1, 1000] (got 2000)\n"},
      {{"TOPK.ADD", "nokey", "a"}, "(error) TopK: key does not exist\n"},
      {{"TOPK.ADD", "t"}, "(error) ERR wrong number of arguments for 'topk.add' command\n"},
      {{"TOPK.INCRBY", "t", "a", "5", "b"}, "(error) ERR wrong number of arguments for 'topk.incrby' command\n"},
      {{"TOPK.INCRBY", "t", "a", "5", "b", "100001"}, incr_error},
      {{"TOPK.INCRBY", "t", "a", "5", "b", "-1"}, incr_error},
      {{"TOPK.INCRBY", "t", "a", "5", "b", "1.5"}, incr_error},
      {{"TOPK.QUERY", "t"}, "(error) ERR wrong number of arguments for 'topk.query' command\n"},
      {{"TOPK.COUNT", "nokey", "a"}, "(error) TopK: key does not exist\n"},
      {{"TOPK.LIST", "t", "foo"}, "(error) WITHCOUNT keyword expected\n"},
      {{"TOPK.LIST", "t", "WITHCOUNT", "WITHCOUNT"}, "(error) WITHCOUNT keyword expected\n"},
      {{"TOPK.LIST", "t", "HALFLIFE", "5m"}, "(error) ERR half_life: namespace 't' keeps no half-life 5m view (it keeps: all-time)\n"},
      {{"TOPK.INFO", "t", "x"}, "(error) ERR wrong number of arguments for 'topk.info' command\n"},
      {{"TOPK.ADD", "t", "a", ""}, "(error) ERR item 2: must not be empty\n"},
      {{"TOPK.ADD", "t", "a", "b\xff"}, "(error) ERR item 2: must be UTF-8 text (byte 1 is not)\n"},
      {{"TOPK.INCRBY", "t", "a", "0", "b", "1", std::string(1025, 'x'), "1"}, "(error) ERR item 3: is 1025 bytes, longer than the limit of 1024\n"},
      // (An increment of 0 counts nothing, but its item is checked as one that counts.)
      {{"TOPK.INCRBY", "t", "a", "1", std::string(1025, 'x'), "0"}, "(error) ERR item 2: is 1025 bytes, longer than the limit of 1024\n"},
      {{"TOPK.INCRBY", "t", std::string(1025, 'x'), "0"}, "(error) ERR item 1: is 1025 bytes, longer than the limit of 1024\n"},
      {{"TOPK.COUNT", "t", "a", std::string(1025, 'x')}, "(error) ERR item 2: must be 1 to 1024 bytes\n"},
      {{"TOPK.COUNT", "t", ""}, "(error) ERR item 1: must be 1 to 1024 bytes\n"},
      {{"TOPK.RESERVE", "k\xff", "3"}, "(error) ERR name: must be UTF-8 text (byte 1 is not)\n"},
      {{"TOPK.RESERVE", "a\tb", "3"}, "(error) ERR name: must not hold control characters (byte 1 starts one)\n"},
      {{"TOPK.INFO", "nokey"}, "(error) TopK: key does not exist\n"},
      {{"FOO", "bar", "baz"}, "(error) ERR unknown command 'FOO', with args beginning with: 'bar' 'baz' \n"},
      {{"SELECT", "1"}, "(error) ERR DB index is out of range\n"},
      {{"SELECT", "x"}, "(error) ERR value is not an integer or out of range\n"},
      {{"AUTH", "sometoken"},
       "(error) ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\n"},
      {{"HELLO", "4"}, "(error) NOPROTO sorry, this protocol version is not supported\n"},
  };
  for (const auto& [args, error] : cases) EXPECT_EQ(run(args), error) << args[0] << " " << (args.size() > 1 ? args[1] : "");
  // Nothing of a refused INCRBY was counted (RedisBloom counts the pairs before the bad one).
  EXPECT_EQ(run({"TOPK.COUNT", "t", "a", "b"}), "1) (integer) 0\n2) (integer) 0\n");
  EXPECT_EQ(run({"EXISTS", "u"}), "(integer) 0\n");
  EXPECT_EQ(run({"TYPE", "nokey"}), "none\n");
}

TEST_F(Resp, CmsCommandsAnswerAsRedisBloomDoes) {
  EXPECT_EQ(run({"CMS.INITBYDIM", "c", "10", "5"}), "OK\n");
  EXPECT_EQ(run({"CMS.INITBYPROB", "p", "0.001", "0.01"}), "OK\n");
  // Each pair's count after its own increment; a repeated item sees the earlier pair.
  EXPECT_EQ(run({"CMS.INCRBY", "c", "a", "5", "b", "3", "a", "2"}), "1) (integer) 5\n2) (integer) 3\n3) (integer) 7\n");
  EXPECT_EQ(run({"CMS.INCRBY", "c", "a", "0"}), "1) (integer) 7\n");
  EXPECT_EQ(run({"CMS.QUERY", "c", "a", "b", "z"}), "1) (integer) 7\n2) (integer) 3\n3) (integer) 0\n");
  EXPECT_EQ(run({"CMS.INFO", "c"}), " 1) \"width\"\n 2) (integer) 10\n 3) \"depth\"\n 4) (integer) 5\n 5) \"count\"\n 6) (integer) 10\n"
                                    " 7) \"ebb_sketch_width\"\n 8) (integer) 16\n 9) \"ebb_sketch_depth\"\n10) (integer) 5\n");
  // INITBYPROB's sizing: width ceil(2 / 0.001), depth ceil(log10(0.01) / log10(0.5)).
  const auto p = run({"CMS.INFO", "p"});
  EXPECT_TRUE(p.starts_with(" 1) \"width\"\n 2) (integer) 2000\n 3) \"depth\"\n 4) (integer) 7\n 5) \"count\"")) << p;
  const auto c3 = run3({"CMS.INFO", "c"});
  EXPECT_TRUE(c3.starts_with("1# \"width\" => (integer) 10\n2# \"depth\" => (integer) 5\n")) << c3;
  EXPECT_EQ(run({"TYPE", "c"}), "CMSk-TYPE\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"CMS.INITBYDIM", "c", "10", "5"}, "(error) CMS: key already exists\n"},
      {{"CMS.INITBYDIM", "d", "0", "5"}, "(error) CMS: invalid width\n"},
      {{"CMS.INITBYDIM", "d", "x", "5"}, "(error) CMS: invalid width\n"},
      {{"CMS.INITBYDIM", "d", "10", "0"}, "(error) CMS: invalid depth\n"},
      {{"CMS.INITBYDIM", "d", "10"}, "(error) ERR wrong number of arguments for 'cms.initbydim' command\n"},
      {{"CMS.INITBYDIM", "d", "10", "40"}, "(error) ERR sketch_depth: must be in [1, 32] (got 40)\n"},
      {{"CMS.QUERY", "c", "a", "b", std::string(1025, 'x')}, "(error) ERR item 3: must be 1 to 1024 bytes\n"},
      {{"CMS.INITBYPROB", "d", "0", "0.01"}, "(error) CMS: invalid overestimation value\n"},
      {{"CMS.INITBYPROB", "d", "1", "0.01"}, "(error) CMS: invalid overestimation value\n"},
      {{"CMS.INITBYPROB", "d", "0.01", "0"}, "(error) CMS: invalid prob value\n"},
      {{"CMS.INITBYPROB", "d", "0.01", "1"}, "(error) CMS: invalid prob value\n"},
      {{"CMS.INCRBY", "c", "a", "1", "b", "-1"}, "(error) CMS: Number cannot be negative\n"},
      {{"CMS.INCRBY", "c", "a", "1", "b", "x"}, "(error) CMS: Cannot parse number\n"},
      {{"CMS.INCRBY", "c", "a", "1", "b", "10000000000000000"}, "(error) CMS: INCRBY overflow\n"},
      {{"CMS.INCRBY", "c", "a", "5", "b"}, "(error) ERR wrong number of arguments for 'cms.incrby' command\n"},
      {{"CMS.INCRBY", "nokey", "a", "1"}, "(error) CMS: key does not exist\n"},
      // Refused whole, before a count is read back (it would refuse what was counted).
      {{"CMS.INCRBY", "c", "a", "1", std::string(1025, 'x'), "0"}, "(error) ERR item 2: is 1025 bytes, longer than the limit of 1024\n"},
      {{"CMS.INCRBY", "c", "a", "0", std::string(1025, 'x'), "0"}, "(error) ERR item 2: is 1025 bytes, longer than the limit of 1024\n"},
      {{"CMS.QUERY", "nokey", "a"}, "(error) CMS: key does not exist\n"},
      {{"CMS.INFO", "nokey"}, "(error) CMS: key does not exist\n"},
  };
  for (const auto& [args, error] : cases) EXPECT_EQ(run(args), error) << args[0] << " " << args[1];
  EXPECT_EQ(run({"CMS.QUERY", "c", "a", "b"}), "1) (integer) 7\n2) (integer) 3\n");  // the refused pairs counted nothing
  EXPECT_EQ(run({"EXISTS", "d"}), "(integer) 0\n");
  // A CMS is not a top-K, nor the reverse.
  ASSERT_EQ(run({"TOPK.RESERVE", "t", "3"}), "OK\n");
  const std::string wrong = "(error) WRONGTYPE Operation against a key holding the wrong kind of value\n";
  EXPECT_EQ(run({"TOPK.ADD", "c", "a"}), wrong);
  EXPECT_EQ(run({"TOPK.LIST", "c"}), wrong);
  EXPECT_EQ(run({"CMS.INCRBY", "t", "a", "1"}), wrong);
  EXPECT_EQ(run({"CMS.QUERY", "t", "a"}), wrong);
}

// Counts are exact to 2^53: a CMS.INCRBY (or a POST /events to the key)
// that would take the key's total there is refused whole, not counted and
// rounded (each +1 past 2^53 was acknowledged and lost).
TEST_F(Resp, CmsIncrByPast2To53IsRefusedWhole) {
  ASSERT_EQ(run({"CMS.INITBYDIM", "big", "16", "2"}), "OK\n");
  for (int i = 0; i < 9; ++i) ASSERT_EQ(run({"CMS.INCRBY", "big", "x", "1000000000000000"}).substr(0, 12), "1) (integer)");
  EXPECT_EQ(run({"CMS.INCRBY", "big", "x", "7199254740990", "y", "1"}), "1) (integer) 9007199254740990\n2) (integer) 1\n");  // 2^53 - 1 in all
  EXPECT_EQ(run({"CMS.INCRBY", "big", "z", "1"}), "(error) CMS: INCRBY overflow\n");          // 2^53
  EXPECT_EQ(run({"CMS.INCRBY", "big", "y", "0", "x", "1", "y", "1"}), "(error) CMS: INCRBY overflow\n");
  EXPECT_EQ(run({"CMS.INCRBY", "big", "x", "0"}), "1) (integer) 9007199254740990\n");  // nothing to count: answered
  HttpClient http(server_->port());
  const auto r = http.request("POST", "/events", R"({"namespace":"big","events":[{"item_id":"x","weight":1}]})", "application/json");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("\"count_overflow\""), std::string::npos) << r.body;
  EXPECT_EQ(run({"CMS.QUERY", "big", "x", "y", "z"}), "1) (integer) 9007199254740990\n2) (integer) 1\n3) (integer) 0\n");
  const auto info = run({"CMS.INFO", "big"});
  EXPECT_NE(info.find(" 6) (integer) 9007199254740991\n"), std::string::npos) << info;
}

// CMS.MERGE: the destination becomes the weighted sum (exact here: nothing
// collides in 128 x 5), a source may be the destination; RedisBloom's
// error cases (its tests/flow/test_cms.py as a checklist) change nothing.
TEST_F(Resp, CmsMergeSumsKeysAsRedisBloomDoes) {
  for (const char* key : {"a", "b", "c"}) ASSERT_EQ(run({"CMS.INITBYDIM", key, "100", "5"}), "OK\n");
  ASSERT_EQ(run({"CMS.INITBYDIM", "narrow", "50", "5"}), "OK\n");
  ASSERT_EQ(run({"TOPK.RESERVE", "t", "3"}), "OK\n");
  ASSERT_EQ(run({"CMS.INCRBY", "a", "x", "5", "y", "3"}), "1) (integer) 5\n2) (integer) 3\n");
  ASSERT_EQ(run({"CMS.INCRBY", "b", "x", "2", "z", "4"}), "1) (integer) 2\n2) (integer) 4\n");
  ASSERT_EQ(run({"CMS.INCRBY", "c", "old", "9"}), "1) (integer) 9\n");
  EXPECT_EQ(run({"CMS.MERGE", "c", "2", "a", "b"}), "OK\n");
  EXPECT_EQ(run({"CMS.QUERY", "c", "x", "y", "z", "old"}), "1) (integer) 7\n2) (integer) 3\n3) (integer) 4\n4) (integer) 0\n");
  EXPECT_EQ(run({"CMS.MERGE", "c", "2", "a", "b", "weights", "1", "3"}), "OK\n");
  EXPECT_EQ(run({"CMS.QUERY", "c", "x", "y", "z"}), "1) (integer) 11\n2) (integer) 3\n3) (integer) 12\n");
  const auto info = run({"CMS.INFO", "c"});
  EXPECT_EQ(info.substr(0, info.find(" 7)")), " 1) \"width\"\n 2) (integer) 100\n 3) \"depth\"\n 4) (integer) 5\n 5) \"count\"\n 6) (integer) 26\n");
  EXPECT_EQ(run({"CMS.MERGE", "a", "2", "a", "b"}), "OK\n");  // into a source
  EXPECT_EQ(run({"CMS.QUERY", "a", "x", "y", "z"}), "1) (integer) 7\n2) (integer) 3\n3) (integer) 4\n");

  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"CMS.MERGE", "nokey", "1", "a"}, "(error) CMS: key does not exist\n"},
      {{"CMS.MERGE", "c", "1", "nokey"}, "(error) CMS: key does not exist\n"},
      {{"CMS.MERGE", "c", "2", "a", "nokey"}, "(error) CMS: key does not exist\n"},
      {{"CMS.MERGE", "c", "2", "a", "narrow"}, "(error) CMS: width/depth is not equal\n"},
      {{"CMS.MERGE", "c", "1", "t"}, "(error) WRONGTYPE Operation against a key holding the wrong kind of value\n"},
      {{"CMS.MERGE", "t", "1", "a"}, "(error) WRONGTYPE Operation against a key holding the wrong kind of value\n"},
      {{"CMS.MERGE", "c", "B", "3", "a"}, "(error) CMS: invalid numkeys\n"},
      {{"CMS.MERGE", "c", "0", "a"}, "(error) CMS: Number of keys must be positive\n"},
      {{"CMS.MERGE", "c", "-1", "a", "b"}, "(error) CMS: Number of keys must be positive\n"},
      {{"CMS.MERGE", "c", "2", "a"}, "(error) CMS: wrong number of keys\n"},
      {{"CMS.MERGE", "c", "1", "a", "b"}, "(error) CMS: wrong number of keys\n"},
      {{"CMS.MERGE", "c", "1", "a", "WEIGHTS"}, "(error) CMS: wrong number of keys/weights\n"},
      {{"CMS.MERGE", "c", "2", "a", "b", "WEIGHTS", "1"}, "(error) CMS: wrong number of keys/weights\n"},
      {{"CMS.MERGE", "c", "1", "WEIGHTS", "a", "1"}, "(error) CMS: wrong number of keys/weights\n"},
      {{"CMS.MERGE", "c", "1", "a", "WEIGHTS", "x"}, "(error) CMS: invalid weight value\n"},
      {{"CMS.MERGE", "c", "1", "a", "WEIGHTS", "1.5"}, "(error) CMS: invalid weight value\n"},
      {{"CMS.MERGE", "c", "2", "a", "b", "WEIGHTS", "1", "-1"},
       "(error) CMS: invalid weight value: ebb cannot subtract counts (a weight must be 0 or more)\n"},
      {{"CMS.MERGE", "c", "1", "a", "WEIGHTS", "2000000000000000"}, "(error) CMS: MERGE overflow\n"},
      {{"CMS.MERGE", "c", "1"}, "(error) ERR wrong number of arguments for 'cms.merge' command\n"},
  };
  for (const auto& [args, error] : cases) EXPECT_EQ(run(args), error) << args[1] << " " << args[2] << " " << args[3];
  EXPECT_EQ(run({"CMS.QUERY", "c", "x", "y", "z"}), "1) (integer) 11\n2) (integer) 3\n3) (integer) 12\n");  // unchanged
  // Counts near 2^53 are whole and exact (no slack that cuts whole counts).
  ASSERT_EQ(run({"CMS.INITBYDIM", "big", "100", "5"}), "OK\n");
  ASSERT_EQ(run({"CMS.INCRBY", "big", "x", "1000000000000000", "x", "1000000000000000", "x", "1000000000000000"}),
            "1) (integer) 1000000000000000\n2) (integer) 2000000000000000\n3) (integer) 3000000000000000\n");
  EXPECT_EQ(run({"CMS.MERGE", "big", "2", "big", "big", "WEIGHTS", "1", "2"}), "OK\n");
  EXPECT_EQ(run({"CMS.QUERY", "big", "x"}), "1) (integer) 9000000000000000\n");
  ASSERT_EQ(run({"CMS.INITBYDIM", "one", "100", "5"}), "OK\n");
  ASSERT_EQ(run({"CMS.INCRBY", "one", "x", "1"}), "1) (integer) 1\n");
  EXPECT_EQ(run({"CMS.MERGE", "big", "1", "one", "WEIGHTS", "9007199254740993"}), "(error) CMS: MERGE overflow\n");  // 2^53 + 1
  EXPECT_EQ(run({"CMS.MERGE", "c", "1", "b", "WEIGHTS", "0"}), "OK\n");
  EXPECT_EQ(run({"CMS.QUERY", "c", "x", "z"}), "1) (integer) 0\n2) (integer) 0\n");
}

TEST_F(Resp, ConnectionAndKeyspaceCommands) {
  EXPECT_EQ(run({"PING"}), "PONG\n");
  EXPECT_EQ(run({"PING", "hi"}), "\"hi\"\n");
  EXPECT_EQ(run({"ECHO", "a b"}), "\"a b\"\n");
  EXPECT_EQ(run({"SELECT", "0"}), "OK\n");
  EXPECT_EQ(run({"CLIENT", "SETNAME", "me"}), "OK\n");
  EXPECT_EQ(run3({"HELLO", "3"}).substr(0, 92), "1# \"server\" => \"ebb\"\n2# \"version\" => \"0.1.0\"\n3# \"proto\" => (integer) 3\n4# \"id\" => (integer) ");
  EXPECT_NE(run({"INFO"}).find("redis_version:7.0.0"), std::string::npos);
  EXPECT_EQ(run({"COMMAND", "COUNT"}), "(integer) 29\n");  // 10 connection, 4 keyspace, 9 TOPK, 6 CMS commands
  EXPECT_EQ(run({"COMMAND", "INFO", "topk.list", "nope"}),
            "1)  1) \"topk.list\"\n    2) (integer) -2\n    3) 1) readonly\n    4) (integer) 1\n    5) (integer) 1\n    6) (integer) 1\n"
            "    7) (empty array)\n    8) (empty array)\n    9) (empty array)\n   10) (empty array)\n2) (nil)\n");
  ASSERT_EQ(run({"TOPK.RESERVE", "a", "5"}), "OK\n");
  ASSERT_EQ(run({"TOPK.RESERVE", "b", "5"}), "OK\n");
  EXPECT_EQ(run({"DBSIZE"}), "(integer) 2\n");
  EXPECT_EQ(run({"EXISTS", "a", "b", "a", "c"}), "(integer) 3\n");
  EXPECT_EQ(run({"DEL", "a", "c"}), "(integer) 1\n");
  EXPECT_EQ(run({"EXISTS", "a"}), "(integer) 0\n");
  EXPECT_EQ(run({"TOPK.ADD", "a", "x"}), "(error) TopK: key does not exist\n");
  // A namespace made over HTTP answers TOPK commands; one made by RESERVE is a namespace like any other.
  HttpClient http(server_->port());
  ASSERT_EQ(http.request("POST", "/namespaces", R"({"name":"web","k":2})").status, 201);
  ASSERT_EQ(http.request("POST", "/events", R"({"namespace":"web","events":[{"item_id":"p","weight":3}]})").status, 204);
  EXPECT_EQ(run({"TOPK.LIST", "web", "WITHCOUNT"}), "1) \"p\"\n2) (integer) 3\n");
  EXPECT_EQ(run({"TYPE", "web"}), "TopK-TYPE\n");
  ASSERT_EQ(run({"TOPK.ADD", "b", "q", "q"}), "1) (nil)\n2) (nil)\n");
  const auto b = http.request("GET", "/namespaces/b");
  EXPECT_NE(b.body.find(R"("redis":{"type":"topk","k":5,"width":8,"depth":7,"decay":0.9})"), std::string::npos) << b.body;
  EXPECT_NE(http.request("GET", "/top-k?namespace=b").body.find(R"("item_id":"q")"), std::string::npos);
}

TEST_F(Resp, TimeDecayAndWindowsQuitAndReset) {
  ASSERT_EQ(run({"TOPK.RESERVE", "d", "2", "HALFLIFE", "1h", "WINDOW", "1m"}), "OK\n");
  ASSERT_EQ(run({"TOPK.INCRBY", "d", "a", "4", "b", "2"}), "1) (nil)\n2) (nil)\n");
  EXPECT_EQ(run({"TOPK.LIST", "d", "WINDOW", "1m", "WITHCOUNT"}), "1) \"a\"\n2) (integer) 4\n3) \"b\"\n4) (integer) 2\n");
  // Decayed counts are fractional, a hair under 4 by now: the count is their upper bound rounded up.
  EXPECT_EQ(run({"TOPK.LIST", "d", "HALFLIFE", "1h", "WITHCOUNT"}), "1) \"a\"\n2) (integer) 4\n3) \"b\"\n4) (integer) 2\n");
  EXPECT_EQ(run({"TOPK.LIST", "d", "ALLTIME"}), "(error) ERR window: namespace 'd' keeps no all-time view (it keeps: window 1m, half-life 1h)\n");
  const auto info = run({"TOPK.INFO", "d"});
  EXPECT_NE(info.find("\"ebb_views\"\n18) 1) \"window 1m\"\n    2) \"half_life 1h\"\n"), std::string::npos) << info;
  // PATCH k shows in INFO (RedisBloom's k is the list's length).
  HttpClient http(server_->port());
  ASSERT_EQ(http.request("PATCH", "/namespaces/d", R"({"k":1})").status, 200);
  EXPECT_EQ(run({"TOPK.INFO", "d"}).substr(0, 24), " 1) \"k\"\n 2) (integer) 1\n");
  EXPECT_EQ(run({"TOPK.LIST", "d"}), "1) \"a\"\n");
  // RESP3 nulls; QUIT ends the connection after its OK; RESET goes back to RESP2.
  RawConnection c(port_);
  ASSERT_TRUE(c.send(command({"HELLO", "3"})));
  const auto hello = c.read_bytes(9);
  EXPECT_EQ(hello, "%7\r\n$6\r\ns");
  c.read_until_close(300);
  ASSERT_TRUE(c.send(command({"TOPK.ADD", "d", "a"}) + command({"RESET"}) + command({"TOPK.ADD", "d", "a"}) + "*-1\r\n" +
                     command({"QUIT"}) + command({"TOPK.ADD", "d", "never"})));
  EXPECT_EQ(c.read_until_close(), "*1\r\n_\r\n+RESET\r\n*1\r\n$-1\r\n+OK\r\n");
  EXPECT_TRUE(c.eof());
  EXPECT_EQ(run({"TOPK.COUNT", "d", "never"}), "1) (integer) 0\n");
}

// ebb's own answers: hot keys over a threshold set by RESERVE ... HOTKEYS,
// and trending items, the same as GET /hot-keys and GET /trending give.
TEST_F(Resp, HotKeysAndTrendingAnswerAsTheHttpApiDoes) {
  ASSERT_EQ(run({"TOPK.RESERVE", "h", "5", "HOTKEYS", "1", "10s", "HALFLIFE", "1m"}), "OK\n");
  ASSERT_EQ(run({"TOPK.INCRBY", "h", "hot", "1000", "cold", "1"}), "1) (nil)\n2) (nil)\n");
  HttpClient http(server_->port());
  const auto config = http.request("GET", "/namespaces/h").body;
  EXPECT_NE(config.find(R"("hot_key_threshold":1,"hot_key_half_life":"10s")"), std::string::npos) << config;
  EXPECT_NE(config.find(R"("half_lives":["1m"])"), std::string::npos) << config;
  // hot: 1000 events a moment ago, a rate of at most 1000 ln 2 / 10 s = 69.3/s; cold is under 1/s.
  // The answer is the last evaluation's (every 0.1 s): wait for one after the events.
  std::string hot;
  for (int i = 0; i < 100 && (hot = run3({"TOPK.HOTKEYS", "h"})) == "(empty array)\n"; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string head = "1) 1) \"hot\"\n   2) (double) ";
  ASSERT_EQ(hot.substr(0, head.size()), head) << hot;
  const double rate = std::stod(hot.substr(head.size()));
  EXPECT_GT(rate, 1);
  EXPECT_LE(rate, 1000 * std::log(2.0) / 10);
  EXPECT_EQ(hot.find("cold"), std::string::npos) << hot;
  EXPECT_EQ(hot.find("2) 1)"), std::string::npos) << hot;

  // Trending on a namespace of two half-lives with the event clock (made
  // over HTTP): the scores GET /trending gives, to the last bit.
  ASSERT_EQ(http.request("POST", "/namespaces", R"({"name":"tags","clock":"event","half_lives":["5m","1h"]})").status, 201);
  std::string body = R"({"namespace":"tags","events":[)";
  for (int i = 0; i < 3600; ++i) body += std::string(i ? "," : "") + R"({"item_id":"steady","timestamp":)" + std::to_string(1700000000 + i) + "}";
  for (int i = 0; i < 60; ++i) body += R"(,{"item_id":"new","timestamp":)" + std::to_string(1700003540 + i) + "}";
  ASSERT_EQ(http.request("POST", "/events", body + "]}").status, 204);
  const auto json = http.request("GET", "/trending?namespace=tags&k=5&min_count=2").body;
  const std::string new_score = R"("item_id":"new","rank":1,"score":)";
  const auto score_at = json.find(new_score);
  ASSERT_NE(score_at, std::string::npos) << json;
  const double score = std::stod(json.substr(score_at + new_score.size()));
  const auto trending = run({"TOPK.TRENDING", "tags", "K", "5", "MINCOUNT", "2"});
  ASSERT_EQ(trending.substr(0, 18), "1) 1) \"new\"\n   2) ") << trending;
  EXPECT_EQ(std::stod(trending.substr(trending.find("2) \"") + 4)), score) << trending;
  EXPECT_EQ(run({"TOPK.TRENDING", "tags", "SHORT", "5m", "LONG", "1h", "K", "1"}).substr(0, 18), "1) 1) \"new\"\n   2) ");

  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"TOPK.HOTKEYS", "nokey"}, "(error) TopK: key does not exist\n"},
      {{"TOPK.HOTKEYS", "tags"},
       "(error) ERR hot keys: key 'tags' has no hot-key threshold (TOPK.RESERVE key k HOTKEYS rate, or PATCH /namespaces/{name})\n"},
      {{"TOPK.TRENDING", "nokey"}, "(error) TopK: key does not exist\n"},
      {{"TOPK.TRENDING", "h"},
       "(error) ERR short: trending compares two half-lives; namespace 'h' keeps 1 (add half_lives to a namespace, e.g. [\"5m\", \"1h\"])\n"},
      {{"TOPK.TRENDING", "tags", "K", "0"}, "(error) ERR k: must be a positive integer\n"},
      {{"TOPK.TRENDING", "tags", "K"}, "(error) ERR syntax error: K needs a value\n"},
      {{"TOPK.TRENDING", "tags", "SOON", "1"}, "(error) ERR syntax error: 'SOON' is not K, SHORT, LONG or MINCOUNT\n"},
      {{"TOPK.TRENDING", "tags", "SHORT", "soon"}, "(error) ERR short: bad duration 'soon'\n"},
      {{"TOPK.TRENDING", "tags", "MINCOUNT", "-1"}, "(error) ERR mincount: must be a number >= 0\n"},
      {{"TOPK.RESERVE", "x", "5", "HOTKEYS"}, "(error) ERR hotkeys: needs a rate in events/s, a number > 0\n"},
      {{"TOPK.RESERVE", "x", "5", "HOTKEYS", "0"}, "(error) ERR hotkeys: needs a rate in events/s, a number > 0\n"},
  };
  for (const auto& [args, error] : cases) EXPECT_EQ(run(args), error) << args[0] << " " << args[1];
  EXPECT_EQ(run({"EXISTS", "x"}), "(integer) 0\n");
}

TEST_F(Resp, PipelinesInlineCommandsAndFramingErrors) {
  ASSERT_EQ(run({"TOPK.RESERVE", "p", "10"}), "OK\n");
  RawConnection c(port_);
  // 2000 commands in one write: 2000 replies, in order.
  std::string batch, expected;
  for (int i = 0; i < 2000; ++i) {
    batch += command({"TOPK.ADD", "p", std::string(1, 'k').append(std::to_string(i % 3))});
    expected += "*1\r\n$-1\r\n";
  }
  batch += command({"TOPK.COUNT", "p", "k0", "k1", "k2"});
  expected += "*3\r\n:667\r\n:667\r\n:666\r\n";
  ASSERT_TRUE(c.send(batch));
  EXPECT_EQ(c.read_bytes(expected.size()), expected);
  // Admin commands run off the event loop, yet a pipeline still runs in order.
  ASSERT_TRUE(c.send(command({"TOPK.RESERVE", "q", "3"}) + command({"TOPK.ADD", "q", "a"}) + command({"DEL", "q", "q"}) +
                     command({"TOPK.ADD", "q", "a"}) + command({"CMS.INITBYDIM", "q", "8", "2"}) + command({"CMS.INCRBY", "q", "a", "2"})));
  const std::string admin = "+OK\r\n*1\r\n$-1\r\n:1\r\n-TopK: key does not exist\r\n+OK\r\n*1\r\n:2\r\n";
  EXPECT_EQ(c.read_bytes(admin.size()), admin);
  // One command of 100000 items (a large multi-bulk), then an inline one.
  std::vector<std::string> many = {"TOPK.ADD", "p"};
  for (int i = 0; i < 100000; ++i) many.push_back("m");
  ASSERT_TRUE(c.send(command(many) + "TOPK.COUNT p m\r\n"));
  std::string big;
  for (int i = 0; i < 100000; ++i) big += "$-1\r\n";
  const std::string want = std::string("*100000\r\n").append(big).append("*1\r\n:100000\r\n");
  EXPECT_EQ(c.read_bytes(want.size()), want);
  // A framing error: the error, then the connection closes; nothing after it runs.
  ASSERT_TRUE(c.send(std::string("*2\r\n$8\r\nTOPK.ADD\r\n#1\r\n").append(command({"TOPK.ADD", "p", "zz"}))));
  EXPECT_EQ(c.read_until_close(), "-ERR Protocol error: expected '$', got '#'\r\n");
  EXPECT_TRUE(c.eof());
  EXPECT_EQ(run({"TOPK.COUNT", "p", "zz"}), "1) (integer) 0\n");
}

// A client that sends its commands and then its end (a half-close) still
// gets every reply: the writes' (which wait for the disk, --fsync batch
// being the default), an admin command's (run off the event loop), and
// those of commands held back behind it; then the server closes.
TEST_F(Resp, AClientThatHalfClosesGetsEveryReply) {
  RawConnection c(port_);
  std::string batch = command({"TOPK.RESERVE", "h", "3"});
  std::string expected = "+OK\r\n";
  for (int i = 0; i < 500; ++i) {
    batch += command({"TOPK.ADD", "h", "w"});
    expected += "*1\r\n$-1\r\n";
  }
  batch += command({"TOPK.COUNT", "h", "w"}) + command({"DEL", "h"}) + command({"PING"});
  expected += "*1\r\n:500\r\n:1\r\n+PONG\r\n";
  ASSERT_TRUE(c.send(batch));
  c.finish_sending();
  EXPECT_EQ(c.read_until_close(), expected);
  EXPECT_TRUE(c.eof());
  // A write alone, its reply owed until its record is durable.
  ASSERT_EQ(run({"TOPK.RESERVE", "h", "3"}), "OK\n");
  RawConnection d(port_);
  ASSERT_TRUE(d.send(command({"TOPK.ADD", "h", "v", "v"})));
  d.finish_sending();
  EXPECT_EQ(d.read_until_close(), "*2\r\n$-1\r\n$-1\r\n");
  EXPECT_TRUE(d.eof());
  EXPECT_EQ(run({"TOPK.COUNT", "h", "v"}), "1) (integer) 2\n");
  // A command the end cuts short is not run; the ones before it are.
  RawConnection e(port_);
  ASSERT_TRUE(e.send(command({"TOPK.ADD", "h", "u"}) + "*3\r\n$8\r\nTOPK.ADD\r\n$1\r\nh\r\n$1\r\nu"));
  e.finish_sending();
  EXPECT_EQ(e.read_until_close(), "*1\r\n$-1\r\n");
  EXPECT_TRUE(e.eof());
  EXPECT_EQ(run({"TOPK.COUNT", "h", "u"}), "1) (integer) 1\n");
  // Commands held back behind replies the client has not taken (past the
  // 4 MiB backlog, reading stops) still run after its end. (Sent from a
  // thread: the server reads no further until this side reads.)
  RawConnection f(port_);
  const std::string value((1u << 20) - 64, 'x');
  std::string echoes, replies;
  for (int i = 0; i < 12; ++i) {
    echoes += command({"ECHO", value});
    replies += "$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
  }
  echoes += command({"PING"});
  replies += "+PONG\r\n";
  std::thread sender([&] {
    (void)f.send(echoes);
    f.finish_sending();
  });
  const std::string got = f.read_until_close();
  sender.join();
  EXPECT_EQ(got.size(), replies.size());
  EXPECT_TRUE(got == replies);
  EXPECT_TRUE(f.eof());
}

// Pipelined TOPK.ADD / INCRBY on one key count as one batch: each command
// still gets its own reply (its own error when its arguments are bad,
// counting nothing of it), and the items that left the list over the run
// are named at the adds that entered it.
// The batches a namespace has counted (GET /namespaces/{name}: stats.batches).
std::int64_t batches(unsigned short http_port, const std::string& name) {
  HttpClient http(http_port);
  const auto r = http.request("GET", "/namespaces/" + name);
  simdjson::dom::parser parser;
  return parser.parse(r.body)["stats"]["batches"].get_int64().value();
}

TEST_F(Resp, PipelinedAddsOnOneKeyCountAsOneBatch) {
  ASSERT_EQ(run({"TOPK.RESERVE", "two", "2"}), "OK\n");
  ASSERT_EQ(run({"TOPK.ADD", "two", "a", "b"}), "1) (nil)\n2) (nil)\n");
  const auto before = batches(server_->port(), "two");
  RawConnection c(port_);
  ASSERT_TRUE(c.send(command({"TOPK.ADD", "two", "c"}) + command({"TOPK.INCRBY", "two", "c", "5"}) + command({"TOPK.ADD", "two", "x", ""}) +
                     command({"TOPK.INCRBY", "two", "c", "x"}) + command({"topk.add", "two", "e"}) + command({"TOPK.ADD", "none", "z"}) +
                     command({"TOPK.ADD", "two", "a"}) + command({"TOPK.LIST", "two", "WITHCOUNT"})));
  const std::string want =
      "*1\r\n$1\r\nb\r\n"  // c entered, b left (a and b tied at 1, e came with 1: a ranks first by key)
      "*1\r\n$-1\r\n"
      "-ERR item 2: must not be empty\r\n"
      "-TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000\r\n"
      "*1\r\n$-1\r\n"
      "-TopK: key does not exist\r\n"
      "*1\r\n$-1\r\n"
      "*4\r\n$1\r\nc\r\n:6\r\n$1\r\na\r\n:2\r\n";
  EXPECT_EQ(c.read_bytes(want.size()), want);
  // The refused commands counted nothing; the run was one batch, the last ADD another.
  EXPECT_EQ(run({"TOPK.COUNT", "two", "x", "e", "b"}), "1) (integer) 0\n2) (integer) 1\n3) (integer) 1\n");
  EXPECT_EQ(batches(server_->port(), "two"), before + 2);

  // A run the service refuses (an item over 1024 bytes) runs one by one:
  // only that command is refused, each other counts in its own batch.
  ASSERT_TRUE(c.send(command({"TOPK.ADD", "two", "f"}) + command({"TOPK.ADD", "two", "g", std::string(1025, 'y')}) +
                     command({"TOPK.INCRBY", "two", "h", "2", "f", "0"}) + command({"TOPK.COUNT", "two", "f", "g", "h"})));
  const std::string one_by_one = "*1\r\n$-1\r\n-ERR item 2: is 1025 bytes, longer than the limit of 1024\r\n*2\r\n$-1\r\n$-1\r\n"
                                 "*3\r\n:1\r\n:0\r\n:2\r\n";
  EXPECT_EQ(c.read_bytes(one_by_one.size()), one_by_one);
  EXPECT_EQ(batches(server_->port(), "two"), before + 4);

  // RESP3 replies, batched alike.
  ASSERT_TRUE(c.send(command({"HELLO", "3"}) + command({"PING"})));
  std::string hello;
  while (hello.size() < 7 || hello.compare(hello.size() - 7, 7, "+PONG\r\n") != 0) {
    const std::string byte = c.read_bytes(1);
    ASSERT_EQ(byte.size(), 1u) << hello;
    hello += byte;
  }
  ASSERT_TRUE(c.send(command({"TOPK.ADD", "two", "i"}) + command({"TOPK.ADD", "two", "i", "j"})));
  const std::string resp3 = "*1\r\n_\r\n*2\r\n_\r\n_\r\n";
  EXPECT_EQ(c.read_bytes(resp3.size()), resp3);
  EXPECT_EQ(batches(server_->port(), "two"), before + 5);
}

// While a merge holds its namespaces (a million columns by eight: seconds
// here), what comes for them runs off the event loops (Service::held_long)
// and answers as it would have in place: pipelined adds to a source (one
// run), a query of the destination, HTTP batches and reads of either.
// (Whether a request came during the merge is up to the scheduler; every
// answer below is the same either way.)
TEST_F(Resp, WhatComesForNamespacesAMergeHoldsAnswersAsInPlace) {
  HttpClient http(server_->port());
  for (const char* name : {"a", "b", "d"}) {
    ASSERT_EQ(http.request("POST", "/namespaces", std::string(R"({"name":")") + name + R"(","k":10,"sketch_width":1048576,"sketch_depth":8})").status,
              201);
  }
  ASSERT_EQ(run({"CMS.INCRBY", "a", "x", "5"}), "1) (integer) 5\n");
  ASSERT_EQ(run({"CMS.INCRBY", "d", "x", "5"}), "1) (integer) 5\n");  // (d's x is 5 before the merge and after)
  RawConnection merging(port_);
  ASSERT_TRUE(merging.send(command({"CMS.MERGE", "d", "2", "a", "b"})));
  RawConnection c(port_);
  ASSERT_TRUE(c.send(command({"TOPK.ADD", "a", "p"}) + command({"TOPK.ADD", "a", "p", "q"}) + command({"CMS.QUERY", "d", "x"}) +
                     command({"TOPK.COUNT", "a", "p", "q"})));
  EXPECT_EQ(http.request("POST", "/events", R"({"namespace":"b","events":[{"item_id":"r","weight":3}]})").status, 204);
  EXPECT_EQ(http.request("GET", "/healthz").status, 200);
  const auto count = http.request("GET", "/count?namespace=d&item_id=x");
  EXPECT_EQ(count.status, 200) << count.body;
  EXPECT_NE(count.body.find(R"("upper_bound":5,)"), std::string::npos) << count.body;
  const std::string want = "*1\r\n$-1\r\n*2\r\n$-1\r\n$-1\r\n*1\r\n:5\r\n*2\r\n:2\r\n:1\r\n";
  EXPECT_EQ(c.read_bytes(want.size()), want);
  EXPECT_EQ(merging.read_bytes(5), "+OK\r\n");
  const auto r = http.request("GET", "/count?namespace=b&item_id=r");
  EXPECT_NE(r.body.find(R"("lower_bound":3,"upper_bound":3,)"), std::string::npos) << r.body;
}

TEST(RespLimits, ArgumentsAndBulkLengthAreEnforced) {
  const auto dir = testing::make_temp_dir("ebb-resp");
  EbbServer server(dir, {"--resp-port", "0", "--resp-max-arguments", "5", "--resp-max-bulk-bytes", "16", "--max-batch-events", "2"});
  const auto port = server.resp_port();
  ASSERT_EQ(cli(port, {"TOPK.RESERVE", "l", "2"}), "OK\n");
  {
    RawConnection c(port);
    ASSERT_TRUE(c.send(command({"TOPK.ADD", "l", "a", "b", "c", "d"})));
    EXPECT_EQ(c.read_until_close(), "-ERR Protocol error: invalid multibulk length\r\n");
  }
  {
    RawConnection c(port);
    ASSERT_TRUE(c.send(command({"TOPK.ADD", "l", std::string(17, 'x')})));
    EXPECT_EQ(c.read_until_close(), "-ERR Protocol error: invalid bulk length (17 bytes; the limit is 16)\r\n");
  }
  // The service's limits apply as they do over HTTP.
  EXPECT_EQ(cli(port, {"TOPK.ADD", "l", "a", "b", "c"}), "(error) ERR events: more than 2 events in one batch (--max-batch-events)\n");
  EXPECT_EQ(cli(port, {"TOPK.LIST", "l"}), "(empty array)\n");  // nothing was counted
  {
    // Pipelined adds are batched up to the limit, never past it (an
    // INCRBY's item/increment pairs count one each): [a, a], [b], [c, d].
    const auto before = batches(server.port(), "l");
    RawConnection c(port);
    ASSERT_TRUE(c.send(command({"TOPK.ADD", "l", "a"}) + command({"TOPK.ADD", "l", "a"}) + command({"TOPK.ADD", "l", "b"}) +
                       command({"TOPK.ADD", "l", "a", "b", "c"}) + command({"TOPK.INCRBY", "l", "c", "1"}) + command({"TOPK.ADD", "l", "d"}) +
                       command({"TOPK.COUNT", "l", "a", "b"})));
    const std::string want = "*1\r\n$-1\r\n*1\r\n$-1\r\n*1\r\n$-1\r\n-ERR events: more than 2 events in one batch (--max-batch-events)\r\n"
                             "*1\r\n$-1\r\n*1\r\n$-1\r\n*2\r\n:2\r\n:1\r\n";
    EXPECT_EQ(c.read_bytes(want.size()), want);
    EXPECT_EQ(batches(server.port(), "l"), before + 3);
  }
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// An increment of 0 is no event, yet its pair counts towards the limit on
// a command's items and its item is checked: the command is refused whole.
TEST(RespLimits, IncrementsOfZeroCountTowardsTheLimits) {
  const auto dir = testing::make_temp_dir("ebb-resp");
  EbbServer server(dir, {"--resp-port", "0", "--max-batch-events", "2"});
  const auto port = server.resp_port();
  ASSERT_EQ(cli(port, {"TOPK.RESERVE", "t", "2"}), "OK\n");
  ASSERT_EQ(cli(port, {"CMS.INITBYDIM", "c", "8", "2"}), "OK\n");
  const std::string too_many = "(error) ERR events: more than 2 events in one batch (--max-batch-events)\n";
  EXPECT_EQ(cli(port, {"TOPK.INCRBY", "t", "a", "1", "b", "0", "c", "0"}), too_many);
  EXPECT_EQ(cli(port, {"CMS.INCRBY", "c", "a", "1", "b", "0", "c", "0"}), too_many);
  EXPECT_EQ(cli(port, {"TOPK.INCRBY", "t", "a", "0", "b", "0", "c", "0"}), too_many);  // (no event at all)
  EXPECT_EQ(cli(port, {"CMS.INCRBY", "c", "a", "0", "b", "0", "c", "0"}), too_many);
  EXPECT_EQ(cli(port, {"CMS.QUERY", "c", "a", "b", "c"}), "(error) ERR items: more than 2 items (--max-batch-events)\n");
  // Nothing was counted.
  EXPECT_EQ(cli(port, {"TOPK.LIST", "t"}), "(empty array)\n");
  EXPECT_EQ(cli(port, {"CMS.QUERY", "c", "a", "b"}), "1) (integer) 0\n2) (integer) 0\n");
  EXPECT_EQ(cli(port, {"CMS.INCRBY", "c", "a", "1", "b", "0"}), "1) (integer) 1\n2) (integer) 0\n");
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

TEST(RespAuth, WritesNeedTheTokenReadsDoNotUnlessProtected) {
  const auto dir = testing::make_temp_dir("ebb-resp");
  const auto tokens = dir.string() + ".tokens";
  std::ofstream(tokens) << "resp-token-0123456789abcdef\n";
  std::filesystem::permissions(tokens, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  {
    EbbServer server(dir / "d", {"--resp-port", "0", "--auth-token-file", tokens});
    const auto port = server.resp_port();
    EXPECT_EQ(cli(port, {"TOPK.RESERVE", "a", "5"}), "(error) NOAUTH Authentication required.\n");
    EXPECT_EQ(cli(port, {"AUTH", "wrong-token-0123456789"}), "(error) WRONGPASS invalid username-password pair or user is disabled.\n");
    EXPECT_EQ(cli(port, {"TYPE", "a"}), "none\n");  // reads stay open
    RawConnection c(port);
    ASSERT_TRUE(c.send(command({"AUTH", "default", "resp-token-0123456789abcdef"}) + command({"TOPK.RESERVE", "a", "5"}) +
                       command({"TOPK.ADD", "a", "x"})));
    const std::string want = "+OK\r\n+OK\r\n*1\r\n$-1\r\n";
    EXPECT_EQ(c.read_bytes(want.size()), want);
    // Pipelined adds without the token: each refused, none counted.
    RawConnection anonymous(port);
    ASSERT_TRUE(anonymous.send(command({"TOPK.ADD", "a", "z"}) + command({"TOPK.ADD", "a", "z"}) + command({"TOPK.COUNT", "a", "z"})));
    const std::string refused = "-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n*1\r\n:0\r\n";
    EXPECT_EQ(anonymous.read_bytes(refused.size()), refused);
    // redis-cli's own -a, then HELLO 3 AUTH.
    EXPECT_EQ(cli(port, {"TOPK.ADD", "a", "y"}, {"-a", "resp-token-0123456789abcdef", "--no-auth-warning"}), "1) (nil)\n");
    EXPECT_EQ(cli(port, {"HELLO", "3", "AUTH", "default", "resp-token-0123456789abcdef"}).substr(0, 21), "1# \"server\" => \"ebb\"\n");
    EXPECT_EQ(server.stop(), 0);
  }
  {
    EbbServer server(dir / "d", {"--resp-port", "0", "--auth-token-file", tokens, "--auth-reads"});
    const auto port = server.resp_port();
    EXPECT_EQ(cli(port, {"TOPK.LIST", "a"}), "(error) NOAUTH Authentication required.\n");
    EXPECT_EQ(cli(port, {"TOPK.LIST", "a"}, {"-a", "resp-token-0123456789abcdef", "--no-auth-warning"}), "1) \"x\"\n2) \"y\"\n");
    EXPECT_EQ(cli(port, {"PING"}), "PONG\n");
    // Before AUTH, a connection may send only small commands (Redis 7's limits).
    RawConnection c(port);
    ASSERT_TRUE(c.send(command({"TOPK.ADD", "a", "1", "2", "3", "4", "5", "6", "7", "8", "9"})));
    EXPECT_EQ(c.read_until_close(), "-ERR Protocol error: invalid multibulk length\r\n");
    EXPECT_EQ(server.stop(), 0);
  }
  std::filesystem::remove_all(dir);
  std::filesystem::remove(tokens);
}

TEST(RespDurability, AcknowledgedAddsAndReserveArgumentsSurviveSigkill) {
  const auto dir = testing::make_temp_dir("ebb-resp");
  {
    EbbServer server(dir, {"--resp-port", "0", "--checkpoint-interval", "1h"});
    const auto port = server.resp_port();
    ASSERT_EQ(cli(port, {"TOPK.RESERVE", "d", "4", "2000", "7", "0.925"}), "OK\n");
    RawConnection c(port);
    std::string batch, want;
    for (int i = 0; i < 500; ++i) {
      batch += command({"TOPK.INCRBY", "d", "hot", "2", "cold", "1"});
      want += "*2\r\n$-1\r\n$-1\r\n";
    }
    ASSERT_TRUE(c.send(batch));
    ASSERT_EQ(c.read_bytes(want.size()), want);  // each reply came once its record was on disk (--fsync batch)
    server.stop_hard();
  }
  EbbServer server(dir, {"--resp-port", "0"});
  const auto port = server.resp_port();
  EXPECT_EQ(cli(port, {"TOPK.LIST", "d", "WITHCOUNT"}), "1) \"hot\"\n2) (integer) 1000\n3) \"cold\"\n4) (integer) 500\n");
  const auto info = cli(port, {"TOPK.INFO", "d"});
  EXPECT_EQ(info.substr(0, info.find(" 9)")), " 1) \"k\"\n 2) (integer) 4\n 3) \"width\"\n 4) (integer) 2000\n 5) \"depth\"\n 6) (integer) 7\n 7) \"decay\"\n 8) \"0.925\"\n");
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// A merge is logged as the destination's new state: it survives a crash
// before any checkpoint, and one after a checkpoint, with the counts
// before and after it in order.
TEST(RespDurability, AcknowledgedMergesSurviveSigkill) {
  const auto dir = testing::make_temp_dir("ebb-resp");
  {
    EbbServer server(dir, {"--resp-port", "0", "--checkpoint-interval", "1h"});
    const auto port = server.resp_port();
    ASSERT_EQ(cli(port, {"CMS.INITBYDIM", "s", "64", "3"}), "OK\n");
    ASSERT_EQ(cli(port, {"CMS.INITBYDIM", "d", "64", "3"}), "OK\n");
    ASSERT_EQ(cli(port, {"CMS.INCRBY", "s", "x", "5"}), "1) (integer) 5\n");
    ASSERT_EQ(cli(port, {"CMS.MERGE", "d", "1", "s", "WEIGHTS", "3"}), "OK\n");
    server.stop_hard();
  }
  {
    EbbServer server(dir, {"--resp-port", "0", "--checkpoint-interval", "1h"});
    const auto port = server.resp_port();
    EXPECT_EQ(cli(port, {"CMS.QUERY", "d", "x"}), "1) (integer) 15\n");
    ASSERT_EQ(cli(port, {"CMS.INCRBY", "s", "x", "1"}), "1) (integer) 6\n");
    ASSERT_EQ(cli(port, {"CMS.MERGE", "d", "2", "d", "s"}), "OK\n");  // 15 + 6
    ASSERT_EQ(cli(port, {"CMS.INCRBY", "s", "x", "100"}), "1) (integer) 106\n");
    EXPECT_EQ(server.stop(), 0);  // a checkpoint: s at 106, d at 21
  }
  {
    EbbServer server(dir, {"--resp-port", "0", "--checkpoint-interval", "1h"});
    const auto port = server.resp_port();
    ASSERT_EQ(cli(port, {"CMS.MERGE", "d", "2", "d", "s", "WEIGHTS", "1", "2"}), "OK\n");  // 21 + 212
    server.stop_hard();
  }
  EbbServer server(dir, {"--resp-port", "0"});
  const auto port = server.resp_port();
  EXPECT_EQ(cli(port, {"CMS.QUERY", "d", "x"}), "1) (integer) 233\n");
  EXPECT_EQ(cli(port, {"CMS.QUERY", "s", "x"}), "1) (integer) 106\n");
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// A data directory with CMS keys (specs with their "redis" arguments) and a
// state record (type 6), checked in: written by
//   CMS.INITBYDIM g 64 2; CMS.INCRBY g a 5 b 3; CMS.INITBYDIM h 64 2;
//   CMS.INCRBY h a 1; SIGTERM (checkpoint: records 1-4); restart;
//   CMS.MERGE h 2 g h WEIGHTS 2 1; SIGKILL (record 5 in the log only).
TEST(RespDurability, ADataDirectoryWithAMergedCmsKeyLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden-v8");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v8", dir, std::filesystem::copy_options::recursive);
  EbbServer server(dir, {"--resp-port", "0", "--checkpoint-interval", "1h"});
  const auto port = server.resp_port();
  EXPECT_EQ(cli(port, {"CMS.QUERY", "h", "a", "b", "c"}), "1) (integer) 11\n2) (integer) 6\n3) (integer) 0\n");
  EXPECT_EQ(cli(port, {"CMS.QUERY", "g", "a", "b"}), "1) (integer) 5\n2) (integer) 3\n");
  EXPECT_EQ(cli(port, {"CMS.INFO", "h"}), " 1) \"width\"\n 2) (integer) 64\n 3) \"depth\"\n 4) (integer) 2\n 5) \"count\"\n 6) (integer) 17\n"
                                          " 7) \"ebb_sketch_width\"\n 8) (integer) 64\n 9) \"ebb_sketch_depth\"\n10) (integer) 2\n");
  EXPECT_EQ(cli(port, {"TYPE", "h"}), "CMSk-TYPE\n");
  HttpClient c(server.port());
  const auto metrics = c.request("GET", "/metrics").body;
  EXPECT_NE(metrics.find("\nebb_recovery_records_replayed 1\n"), std::string::npos) << metrics;
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// The items ADD names as pushed out are exactly those that left the list
// (the server tells cheaply whether a command changed the list; LIST
// computes it whole): random commands, three list sizes, and a summary
// hardly larger than its list.
TEST_F(Resp, AddNamesExactlyTheItemsThatLeftTheList) {
  HttpClient http(server_->port());
  for (const char* seed : {"1", "2"}) {
    // One key over HTTP with as many candidates as its list holds: listed keys are let go of.
    ASSERT_EQ(http.request("POST", "/namespaces", R"({"name":"prop:d","k":5,"candidates":5,"sketch_width":16,"sketch_depth":1})").status, 201);
    const auto r = testing::run_process(
        {"/usr/bin/python3", std::string(EBB_SOURCE_DIR) + "/tests/resp/topk_add_property.py", std::to_string(port_), seed, "prop:d:5"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "ok\n") << r.err;
    ASSERT_EQ(run({"DEL", "prop:a", "prop:b", "prop:c", "prop:d", "prop:h"}), "(integer) 5\n");
  }
}

// A command whose item takes a candidate's place without entering the list
// can still push a listed key out: the summary (2 candidates, k = 1) lets
// "e" go for "m", and "l", held already, now ranks first. Nobody entered
// from the command, yet "e" left: it is named at "m" (it was not named at
// all before the fix).
TEST_F(Resp, AKeyPushedOutWithNoArgumentEnteringIsNamed) {
  HttpClient http(server_->port());
  ASSERT_EQ(http.request("POST", "/namespaces", R"({"name":"few","k":1,"candidates":2,"sketch_width":16,"sketch_depth":1})").status, 201);
  for (const auto& [item, n] : std::vector<std::pair<std::string, std::string>>{
           {"e", "5"}, {"e", "1"}, {"r", "1"}, {"v", "1"}, {"r", "3"}, {"d", "1"}, {"y", "1"}, {"w", "1"}, {"f", "5"}, {"l", "5"},
           {"k", "1"}, {"n", "3"}, {"g", "1"}, {"e", "1"}, {"s", "1"}, {"o", "1"}}) {
    ASSERT_EQ(run({"TOPK.INCRBY", "few", item, n}).substr(0, 3), "1) ") << item;
  }
  ASSERT_EQ(run({"TOPK.LIST", "few"}), "1) \"e\"\n");
  EXPECT_EQ(run({"TOPK.INCRBY", "few", "m", "3"}), "1) \"e\"\n");
  EXPECT_EQ(run({"TOPK.LIST", "few"}), "1) \"l\"\n");
  // An increment of 0 names nothing, and nothing left.
  EXPECT_EQ(run({"TOPK.INCRBY", "few", "m", "0", "z", "1"}), "1) (nil)\n2) (nil)\n");
}

// A window's list empties as time passes, with no command: the next ADD
// compares with the list as it is then (empty), so it names nobody. (It
// named "a", from the list the last ADD left, before the fix.)
TEST_F(Resp, AddAfterAWindowEmptiedNamesNobody) {
  ASSERT_EQ(run({"TOPK.RESERVE", "w", "3", "WINDOW", "1s"}), "OK\n");
  ASSERT_EQ(run({"TOPK.ADD", "w", "a", "a", "a", "b", "b", "c"}), "1) (nil)\n2) (nil)\n3) (nil)\n4) (nil)\n5) (nil)\n6) (nil)\n");
  std::string listed = run({"TOPK.LIST", "w"});
  for (int i = 0; i < 100 && listed != "(empty array)\n"; ++i) {  // (1 s and a bucket: passes in about 2 s)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    listed = run({"TOPK.LIST", "w"});
  }
  ASSERT_EQ(listed, "(empty array)\n");
  EXPECT_EQ(run({"TOPK.ADD", "w", "d"}), "1) (nil)\n");
  EXPECT_EQ(run({"TOPK.LIST", "w"}), "1) \"d\"\n");
}

TEST_F(Resp, RedisPyClientWorksUnchanged) {
  const auto r = testing::run_process({"/usr/bin/python3", std::string(EBB_SOURCE_DIR) + "/tests/resp/redis_py_check.py", std::to_string(port_)});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "ok\n") << r.err;
}

}  // namespace
}  // namespace ebb
