// The RESP command reader and reply writer on their own: every framing a
// client may send, split at every byte, the limits, and each reply type in
// RESP2 and RESP3.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ebb/resp/protocol.hpp"
#include "ebb/resp/reply.hpp"

namespace ebb::resp {
namespace {

using Status = CommandReader::Status;

std::vector<std::string> words(const CommandReader& r) { return {r.args().begin(), r.args().end()}; }

TEST(RespReader, ReadsMultiBulkAndInlineCommands) {
  CommandReader r({});
  const std::string two = "*3\r\n$8\r\nTOPK.ADD\r\n$1\r\nk\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n";
  ASSERT_EQ(r.read(two), Status::complete);
  EXPECT_EQ(words(r), (std::vector<std::string>{"TOPK.ADD", "k", ""}));
  ASSERT_EQ(r.consumed(), 31u);
  ASSERT_EQ(r.read(std::string_view(two).substr(31)), Status::complete);
  EXPECT_EQ(words(r), (std::vector<std::string>{"PING"}));

  ASSERT_EQ(r.read("TOPK.ADD  k \"a b\" 'c\\'d' \"\\x41\\n\"\r\n"), Status::complete);
  EXPECT_EQ(words(r), (std::vector<std::string>{"TOPK.ADD", "k", "a b", "c'd", "A\n"}));
  ASSERT_EQ(r.read("\r\n"), Status::complete);  // an empty line: nothing to run
  EXPECT_TRUE(r.args().empty());
  EXPECT_EQ(r.consumed(), 2u);
  ASSERT_EQ(r.read("*0\r\n"), Status::complete);
  EXPECT_TRUE(r.args().empty());
}

TEST(RespReader, ACommandSplitAtAnyByteReadsTheSame) {
  using namespace std::string_literals;  // (keeps the NUL)
  const std::string bytes = "*4\r\n$13\r\nTOPK.INCRBY\r\n\r\n$3\r\nk:1\r\n$5\r\na\r\nb\0\r\n$6\r\n100000\r\n"s;
  for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
    CommandReader r({});
    std::string buffer = bytes.substr(0, cut);
    auto status = r.read(buffer);
    if (cut < bytes.size()) {
      ASSERT_EQ(status, Status::incomplete) << cut;
      buffer = bytes;  // the rest arrives (the buffer may have moved: the reader keeps offsets)
      status = r.read(buffer);
    }
    ASSERT_EQ(status, Status::complete) << cut;
    EXPECT_EQ(words(r), (std::vector<std::string>{"TOPK.INCRBY\r\n", "k:1", std::string("a\r\nb\0", 5), "100000"})) << cut;
    EXPECT_EQ(r.consumed(), bytes.size());
  }
}

// A bulk's length line of plain digits is read by a quicker path than the
// rest (a sign, ten digits or more, a missing LF): both read the same
// lengths and refuse the same things with the same words.
TEST(RespReader, EveryLengthSpellingReadsAsFromChars) {
  struct Case {
    std::string bytes;
    Status status;
    std::vector<std::string> args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"*1\r\n$003\r\nabc\r\n", Status::complete, {"abc"}, ""},
      {"*1\r\n$-0\r\n\r\n", Status::complete, {""}, ""},
      {"*1\r\n$000000000000000003\r\nabc\r\n", Status::complete, {"abc"}, ""},  // 18 digits: the general path
      {"*1\r\n$+3\r\nabc\r\n", Status::error, {}, "Protocol error: invalid bulk length"},
      {"*1\r\n$3 \r\nabc\r\n", Status::error, {}, "Protocol error: invalid bulk length"},
      {"*1\r\n$\r\n\r\n", Status::error, {}, "Protocol error: invalid bulk length"},
      {"*1\r\n$3\rxab", Status::incomplete, {}, ""},  // no CRLF yet (as any line still arriving)
      {"*1\r\n$3\rxabc\r\n", Status::error, {}, "Protocol error: invalid bulk length"},  // the line ends at the later CRLF
      {"*1\r\n$3\rxabcdefghijklmnopqrstuvwxyz0123456789\r\n", Status::error, {}, "Protocol error: invalid bulk length"},
      {"*1\r\n$123456789\r\nab", Status::error, {}, "Protocol error: invalid bulk length (123456789 bytes; the limit is 1048576)"},
      {"*1\r\n$1234567890\r\nab", Status::error, {}, "Protocol error: invalid bulk length (1234567890 bytes; the limit is 1048576)"},
      {"*1\r\n$99999999999999999999\r\n", Status::error, {}, "Protocol error: invalid bulk length"},  // past long long
      // 2^64 + 3, the bytes there: a quick path reading past 9 digits would
      // wrap it to 3 and take "abc".
      {"*1\r\n$18446744073709551619\r\nabc\r\n", Status::error, {}, "Protocol error: invalid bulk length"},
      {"*2\r\n$1\r\na\r\n$2\r\nb", Status::incomplete, {}, ""},
      {"*1\r\n$1\r\nab\r\n", Status::error, {}, "Protocol error: a bulk string is longer than its stated length"},
  };
  for (const auto& c : cases) {
    CommandReader r({});
    EXPECT_EQ(r.read(c.bytes), c.status) << c.bytes;
    if (c.status == Status::complete) {
      EXPECT_EQ(words(r), c.args) << c.bytes;
      EXPECT_EQ(r.consumed(), c.bytes.size()) << c.bytes;
    }
    if (c.status == Status::error) {
      EXPECT_EQ(r.error(), c.error) << c.bytes;
    }
  }
  // The limits hold on the quick path too: a bulk of 5 bytes against 4, a
  // command one byte past its limit.
  ProtocolLimits limits;
  limits.max_bulk_bytes = 4;
  limits.max_command_bytes = 20;
  CommandReader r(limits);
  EXPECT_EQ(r.read("*1\r\n$5\r\nabcde\r\n"), Status::error);
  EXPECT_EQ(r.error(), "Protocol error: invalid bulk length (5 bytes; the limit is 4)");
  CommandReader s(limits);
  EXPECT_EQ(s.read("*2\r\n$1\r\na\r\n$4\r\nabcd\r\n"), Status::error);  // 21 bytes
  EXPECT_EQ(s.error(), "Protocol error: a command of more than 20 bytes");
  CommandReader t(limits);
  EXPECT_EQ(t.read("*2\r\n$1\r\na\r\n$3\r\nabc\r\n"), Status::complete);  // 20 bytes: within
}

TEST(RespReader, LimitsAndMalformedFramingAreProtocolErrors) {
  ProtocolLimits limits;
  limits.max_arguments = 3;
  limits.max_bulk_bytes = 4;
  limits.max_inline_bytes = 16;
  limits.max_command_bytes = 30;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"*4\r\n", "Protocol error: invalid multibulk length"},
      {"*x\r\n", "Protocol error: invalid multibulk length"},
      {"*1\r\n$5\r\n", "Protocol error: invalid bulk length (5 bytes; the limit is 4)"},
      {"*1\r\n$-1\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$ab\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n:1\r\n", "Protocol error: expected '$', got ':'"},
      {"*1\r\n$2\r\nabc\r\n", "Protocol error: a bulk string is longer than its stated length"},
      {"*3\r\n$4\r\nabcd\r\n$4\r\nabcd\r\n$4\r\nabcd\r\n", "Protocol error: a command of more than 30 bytes"},
      {"PING \"unclosed\r\n", "Protocol error: unbalanced quotes in request"},
      {"PING \"a\"b\r\n", "Protocol error: unbalanced quotes in request"},
      {"PING aaaaaaaaaaaaaaaaaaaaaaaa", "Protocol error: too big inline request"},
      {"a b c d\r\n", "Protocol error: invalid multibulk length"},
      {"*11111111111111111111111111111111111", "Protocol error: too big mbulk count string"},
  };
  for (const auto& [bytes, message] : cases) {
    CommandReader r(limits);
    EXPECT_EQ(r.read(bytes), Status::error) << bytes;
    EXPECT_EQ(r.error(), message) << bytes;
  }
  CommandReader r(limits);
  EXPECT_EQ(r.read("*3\r\n$4\r\nabcd\r\n$4\r\nabcd\r\n$0\r\n\r\n"), Status::complete);  // 30 bytes: within
}

// A command of many arguments leaves its tables behind once the next read
// starts (an idle connection held 16 MiB each after a million arguments).
TEST(RespReader, ALargeCommandsTablesAreGivenBack) {
  CommandReader r(ProtocolLimits{});
  std::string big = "*100001\r\n$10\r\nTOPK.QUERY\r\n";
  for (int i = 0; i < 100000; ++i) big += "$1\r\na\r\n";
  ASSERT_EQ(r.read(big), CommandReader::Status::complete);
  ASSERT_EQ(r.args().size(), 100001u);
  EXPECT_GE(r.table_bytes(), 100001 * sizeof(std::string_view));  // (its own arguments, while they are read)
  ASSERT_EQ(r.read("*1\r\n$4\r\nPING\r\n"), CommandReader::Status::complete);
  EXPECT_EQ(r.args(), std::vector<std::string_view>{"PING"});
  EXPECT_LE(r.table_bytes(), 2 * 4096 * sizeof(std::pair<std::size_t, std::size_t>));
  // Commands of up to 4096 arguments keep theirs for the next.
  std::string mid = "*4000\r\n$8\r\nTOPK.ADD\r\n";
  for (int i = 1; i < 4000; ++i) mid += "$1\r\nb\r\n";
  ASSERT_EQ(r.read(mid), CommandReader::Status::complete);
  const std::size_t kept = r.table_bytes();
  ASSERT_EQ(r.read("*1\r\n$4\r\nPING\r\n"), CommandReader::Status::complete);
  EXPECT_EQ(r.table_bytes(), kept);
  // An inline command's words too.
  std::string words = "TOPK.QUERY";
  for (int i = 0; i < 30000; ++i) words += " a";
  ASSERT_EQ(r.read(words + "\r\n"), CommandReader::Status::complete);
  ASSERT_EQ(r.args().size(), 30001u);
  EXPECT_GE(r.table_bytes(), 30001 * sizeof(std::string));
  ASSERT_EQ(r.read("*1\r\n$4\r\nPING\r\n"), CommandReader::Status::complete);
  EXPECT_LE(r.table_bytes(), kept);
}

TEST(RespReply, EachTypeInBothProtocols) {
  auto both = [](auto write) {
    std::string two, three;
    ReplyWriter r2(two, 2), r3(three, 3);
    write(r2);
    write(r3);
    return std::pair{two, three};
  };
  EXPECT_EQ(both([](ReplyWriter& r) { r.simple("OK"); }), (std::pair<std::string, std::string>{"+OK\r\n", "+OK\r\n"}));
  EXPECT_EQ(both([](ReplyWriter& r) { r.error("ERR a\r\nb"); }), (std::pair<std::string, std::string>{"-ERR a  b\r\n", "-ERR a  b\r\n"}));
  EXPECT_EQ(both([](ReplyWriter& r) { r.integer(-42); }), (std::pair<std::string, std::string>{":-42\r\n", ":-42\r\n"}));
  EXPECT_EQ(both([](ReplyWriter& r) { r.bulk(std::string("a\0b", 3)); }),
            (std::pair<std::string, std::string>{std::string("$3\r\na\0b\r\n", 9), std::string("$3\r\na\0b\r\n", 9)}));
  EXPECT_EQ(both([](ReplyWriter& r) { r.null(); }), (std::pair<std::string, std::string>{"$-1\r\n", "_\r\n"}));
  EXPECT_EQ(both([](ReplyWriter& r) { r.map(2); }), (std::pair<std::string, std::string>{"*4\r\n", "%2\r\n"}));
  EXPECT_EQ(both([](ReplyWriter& r) { r.boolean(true); }), (std::pair<std::string, std::string>{":1\r\n", "#t\r\n"}));
  EXPECT_EQ(both([](ReplyWriter& r) { r.number(0.9); }), (std::pair<std::string, std::string>{"$3\r\n0.9\r\n", ",0.9\r\n"}));
  EXPECT_EQ(both([](ReplyWriter& r) { r.number(1e300 * 1e300); }), (std::pair<std::string, std::string>{"$3\r\ninf\r\n", ",inf\r\n"}));
  EXPECT_EQ(both([](ReplyWriter& r) { r.verbatim("a:1"); }), (std::pair<std::string, std::string>{"$3\r\na:1\r\n", "=7\r\ntxt:a:1\r\n"}));
}

// nulls(n) is n null()s, after what the reply holds already.
TEST(RespReply, NullsAreThatManyNulls) {
  for (const int protocol : {2, 3}) {
    const std::string one = protocol == 3 ? "_\r\n" : "$-1\r\n";
    for (const std::size_t n : {0u, 1u, 2u, 7u, 100u, 129u}) {
      std::string got = "*9\r\n", want = got;
      ReplyWriter(got, protocol).nulls(n);
      for (std::size_t i = 0; i < n; ++i) want += one;
      EXPECT_EQ(got, want) << "RESP" << protocol << ", " << n << " nulls";
    }
  }
}

}  // namespace
}  // namespace ebb::resp
