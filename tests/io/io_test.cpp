#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "ebb/core/error.hpp"
#include "ebb/io/find_byte.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/io/line_reader.hpp"
#include "ebb/io/record_parser.hpp"
#include "ebb/io/time_format.hpp"

namespace ebb::io {
namespace {

TEST(TimeFormat, ParsesEveryFormat) {
  EXPECT_EQ(parse_unix_seconds("1708632000"), 1708632000.0);
  EXPECT_EQ(parse_unix_seconds("1708632000.5"), 1708632000.5);
  EXPECT_EQ(parse_unix_ms("1708632000500"), 1708632000.5);
  EXPECT_EQ(parse_rfc3339("2024-02-22T20:00:00Z"), 1708632000.0);
  EXPECT_EQ(parse_rfc3339("2024-02-22T21:00:00+01:00"), 1708632000.0);
  EXPECT_EQ(parse_rfc3339("2024-02-22 20:00:00.25"), 1708632000.25);
  EXPECT_EQ(parse_clf_time("22/Feb/2024:20:00:00 +0000"), 1708632000.0);
  EXPECT_EQ(parse_clf_time("10/Oct/2000:13:55:36 -0700"), 971211336.0);
  EXPECT_EQ(parse_rfc3339("2024-02-29T00:00:00Z"), 1709164800.0);  // leap day
}

TEST(TimeFormat, RejectsNonTimestamps) {
  EXPECT_FALSE(parse_unix_seconds("12abc"));
  EXPECT_FALSE(parse_rfc3339("2024-13-01T00:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2023-02-29T00:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2024-02-22T20:00:00Zjunk"));
  EXPECT_FALSE(parse_clf_time("22/Foo/2024:20:00:00 +0000"));
  EXPECT_THROW(parse_time_format("iso"), InvalidArgument);
}

TEST(TimeFormat, DetectsTheFormatFromASample) {
  EXPECT_EQ(detect_time_format("1708632000"), TimeFormat::unix_seconds);
  EXPECT_EQ(detect_time_format("1708632000123"), TimeFormat::unix_ms);
  EXPECT_EQ(detect_time_format("2024-02-22T20:00:00Z"), TimeFormat::rfc3339);
  EXPECT_EQ(detect_time_format("22/Feb/2024:20:00:00 +0000"), TimeFormat::clf);
  EXPECT_FALSE(detect_time_format("yesterday"));
}

struct Parsed {
  ParseStatus status;
  Record rec;
  std::string error;
};

Parsed parse_one(RecordParser& p, std::string_view line) {
  Parsed out;
  out.status = p.parse(line, out.rec, out.error);
  return out;
}

TEST(RecordParser, Tsv) {
  KeyArena arena;
  auto p = make_record_parser(InputFormat::tsv, {"2", "1", "3"}, TimeFormat::auto_detect, arena);
  EXPECT_TRUE(p->has_time());
  auto r = parse_one(*p, "1708632000\tapple\t2.5");
  ASSERT_EQ(r.status, ParseStatus::record);
  EXPECT_EQ(r.rec.key, "apple");
  EXPECT_EQ(r.rec.time, 1708632000.0);
  EXPECT_EQ(r.rec.weight, 2.5);
  EXPECT_EQ(parse_one(*p, "1708632000\tapple").status, ParseStatus::malformed);
  EXPECT_EQ(parse_one(*p, "1708632000\tapple\tlots").status, ParseStatus::malformed);
  EXPECT_EQ(parse_one(*p, "1708632000\tapple\t0").status, ParseStatus::zero_weight);
  EXPECT_EQ(parse_one(*p, "noon\tapple\t1").status, ParseStatus::malformed);
  EXPECT_EQ(parse_one(*p, "").status, ParseStatus::skipped);
}

TEST(RecordParser, TsvKeyOnlyFastPath) {
  KeyArena arena;
  auto p = make_record_parser(InputFormat::tsv, {"2", "", ""}, TimeFormat::auto_detect, arena);
  EXPECT_FALSE(p->has_time());
  auto r = parse_one(*p, "1708632000\tapple\t2.5");
  ASSERT_EQ(r.status, ParseStatus::record);
  EXPECT_EQ(r.rec.key, "apple");
  EXPECT_EQ(r.rec.weight, 1);
  EXPECT_FALSE(r.rec.time);
  EXPECT_EQ(parse_one(*p, "x\tlast-column").rec.key, "last-column");
  r = parse_one(*p, "only-one-column");
  EXPECT_EQ(r.status, ParseStatus::malformed);
  EXPECT_NE(r.error.find("has 1 columns, needs 2"), std::string::npos) << r.error;
  EXPECT_EQ(parse_one(*p, "x\t\ty").status, ParseStatus::malformed);  // empty key
  auto first = make_record_parser(InputFormat::tsv, {}, TimeFormat::auto_detect, arena);
  EXPECT_EQ(parse_one(*first, "k1\tmore").rec.key, "k1");
  EXPECT_EQ(parse_one(*first, "solo").rec.key, "solo");
}

TEST(RecordParser, CsvWithHeaderNamesAndQuotes) {
  KeyArena arena;
  auto p = make_record_parser(InputFormat::csv, {"product", "ts", "amount"}, TimeFormat::auto_detect, arena);
  EXPECT_EQ(parse_one(*p, "ts,product,amount").status, ParseStatus::skipped);
  auto r = parse_one(*p, "2024-02-22T20:00:00Z,\"Widget, \"\"Deluxe\"\"\",3");
  ASSERT_EQ(r.status, ParseStatus::record) << r.error;
  EXPECT_EQ(r.rec.key, "Widget, \"Deluxe\"");
  EXPECT_EQ(r.rec.time, 1708632000.0);
  EXPECT_EQ(r.rec.weight, 3);
  r = parse_one(*p, "2024-02-22T20:00:00Z,\"unterminated,3");
  EXPECT_EQ(r.status, ParseStatus::malformed);
  EXPECT_NE(r.error.find("unterminated"), std::string::npos);
  auto missing = make_record_parser(InputFormat::csv, {"nope", "", ""}, TimeFormat::auto_detect, arena);
  Record rec;
  std::string err;
  EXPECT_THROW(missing->parse("a,b", rec, err), InvalidArgument);
}

TEST(RecordParser, JsonDottedPaths) {
  KeyArena arena;
  auto p = make_record_parser(InputFormat::json, {"user.country", "ts", "n"}, TimeFormat::auto_detect, arena);
  auto r = parse_one(*p, R"({"user":{"country":"NZ"},"ts":1708632000123,"n":2})");
  ASSERT_EQ(r.status, ParseStatus::record) << r.error;
  EXPECT_EQ(r.rec.key, "NZ");
  EXPECT_EQ(r.rec.time, 1708632000.123);
  EXPECT_EQ(r.rec.weight, 2);
  r = parse_one(*p, R"({"user":{},"ts":1,"n":2})");
  EXPECT_EQ(r.status, ParseStatus::malformed);
  EXPECT_NE(r.error.find("user.country"), std::string::npos);
  EXPECT_EQ(parse_one(*p, R"({"user":)").status, ParseStatus::malformed);
  auto defaults = make_record_parser(InputFormat::json, {}, TimeFormat::auto_detect, arena);
  EXPECT_FALSE(defaults->has_time());
  r = parse_one(*defaults, R"({"item_id":42})");
  ASSERT_EQ(r.status, ParseStatus::record);
  EXPECT_EQ(r.rec.key, "42");
}

TEST(RecordParser, CommonAndCombinedLogFormat) {
  KeyArena arena;
  auto p = make_record_parser(InputFormat::clf, {"", "", "bytes"}, TimeFormat::auto_detect, arena);
  auto r = parse_one(*p, R"(127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://x/" "Mozilla/4.08")");
  ASSERT_EQ(r.status, ParseStatus::record) << r.error;
  EXPECT_EQ(r.rec.key, "/apache_pb.gif");
  EXPECT_EQ(r.rec.time, 971211336.0);
  EXPECT_EQ(r.rec.weight, 2326);
  EXPECT_EQ(parse_one(*p, R"(1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 304 -)").status, ParseStatus::zero_weight);
  EXPECT_EQ(parse_one(*p, "garbage line").status, ParseStatus::malformed);
  auto by_host = make_record_parser(InputFormat::clf, {"host", "", ""}, TimeFormat::auto_detect, arena);
  r = parse_one(*by_host, R"(10.0.0.9 - - [10/Oct/2000:13:55:36 -0700] "POST /login HTTP/1.1" 401 12)");
  ASSERT_EQ(r.status, ParseStatus::record);
  EXPECT_EQ(r.rec.key, "10.0.0.9");
  EXPECT_THROW(make_record_parser(InputFormat::clf, {"colour", "", ""}, TimeFormat::auto_detect, arena), InvalidArgument);
  EXPECT_THROW(make_record_parser(InputFormat::plain, {"1", "", ""}, TimeFormat::auto_detect, arena), InvalidArgument);
}

// Lines split across reads, CRLF, a last line without a newline, and an
// oversized line reported once and skipped.
TEST(LineReader, HandlesChunkBoundariesAndOversizedLines) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string big(5000, 'x');
  const std::string input = "alpha\r\nbeta\n\n" + big + "\ngamma\ndelta";
  std::thread writer([&] {
    for (std::size_t i = 0; i < input.size(); i += 7) {
      ASSERT_GT(write(fds[1], input.data() + i, std::min<std::size_t>(7, input.size() - i)), 0);
    }
    close(fds[1]);
  });
  LineReader reader(fds[0], 1000);
  std::vector<Line> lines;
  std::vector<char> buffer;
  std::vector<std::pair<std::string, bool>> got;
  while (reader.next(buffer, lines)) {
    for (const auto& l : lines) got.emplace_back(std::string(l.text), l.oversized);
  }
  writer.join();
  close(fds[0]);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0], std::make_pair(std::string("alpha"), false));
  EXPECT_EQ(got[1], std::make_pair(std::string("beta"), false));
  EXPECT_EQ(got[2], std::make_pair(std::string(""), false));
  EXPECT_TRUE(got[3].second);
  EXPECT_EQ(got[3].first.size(), 1000u);
  EXPECT_EQ(got[4], std::make_pair(std::string("gamma"), false));
  EXPECT_EQ(got[5], std::make_pair(std::string("delta"), false));
  EXPECT_EQ(reader.bytes_read(), input.size());
}

// Regular files: lines longer and shorter than a 64-byte scan block and
// than one read, CRLF, blank lines, an oversized line, and a last line
// without a terminator that ends off a block boundary.
TEST(LineReader, RegularFilesGiveTheSameLines) {
  char path[] = "/tmp/ebb-line-reader-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::vector<std::string> expected;
  std::string input;
  for (int i = 0; i < 6000; ++i) {
    std::string line(static_cast<std::size_t>(i * 7 % 150), static_cast<char>('a' + i % 26));
    expected.push_back(line);
    input += line + (i % 5 == 0 ? "\r\n" : "\n");
  }
  input += std::string(5000, 'x') + "\n";
  input += "last-line";
  ASSERT_EQ(write(fd, input.data(), input.size()), static_cast<ssize_t>(input.size()));
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  LineReader reader(fd, 1000);
  EXPECT_EQ(reader.expected_bytes(), input.size());
  std::vector<Line> lines;
  std::vector<char> buffer;
  std::vector<std::pair<std::string, bool>> got;
  while (reader.next(buffer, lines)) {
    for (const auto& l : lines) got.emplace_back(std::string(l.text), l.oversized);
  }
  close(fd);
  unlink(path);
  ASSERT_EQ(got.size(), expected.size() + 2);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(got[i].first, expected[i]) << i;
    ASSERT_FALSE(got[i].second);
  }
  EXPECT_TRUE(got[expected.size()].second);
  EXPECT_EQ(got[expected.size()].first.size(), 1000u);
  EXPECT_EQ(got.back(), std::make_pair(std::string("last-line"), false));
  EXPECT_EQ(reader.bytes_read(), input.size());
  EXPECT_FALSE(reader.shrank());
}

// A file truncated while it is read (logrotate's copytruncate) ends at its
// new size: every complete line before the cut, not the fragment at the
// cut, and shrank() says so. (A memory-mapped reader died of SIGBUS here.)
TEST(LineReader, FileTruncatedWhileReadEndsAtTheCutAndSaysSo) {
  char path[] = "/tmp/ebb-line-reader-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string input;
  char line[16];
  for (int i = 0; i < 100000; ++i) {
    std::snprintf(line, sizeof line, "line-%06d\n", i);  // 12 bytes
    input += line;
  }
  ASSERT_EQ(write(fd, input.data(), input.size()), static_cast<ssize_t>(input.size()));
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  LineReader reader(fd, 1000);
  std::vector<Line> lines;
  std::vector<char> buffer;
  std::vector<std::string> got;
  ASSERT_TRUE(reader.next(buffer, lines));
  for (const auto& l : lines) got.emplace_back(l.text);
  ASSERT_LT(reader.bytes_read(), 480000u);  // the cut is ahead of what was read
  // Cut 40000 lines and 5 bytes of the next one in: "line-" is a fragment.
  ASSERT_EQ(ftruncate(fd, 40000 * 12 + 5), 0);
  while (reader.next(buffer, lines)) {
    for (const auto& l : lines) got.emplace_back(l.text);
  }
  close(fd);
  unlink(path);
  ASSERT_EQ(got.size(), 40000u);
  for (int i = 0; i < 40000; ++i) {
    std::snprintf(line, sizeof line, "line-%06d", i);
    ASSERT_EQ(got[static_cast<std::size_t>(i)], line) << i;
  }
  EXPECT_TRUE(reader.shrank());
  EXPECT_EQ(reader.bytes_read(), 40000u * 12 + 5);
  EXPECT_EQ(reader.expected_bytes(), input.size());
}

TEST(FindByte, AgreesWithMemchrAtEveryLengthAndPosition) {
  std::string s(300, 'a');
  for (std::size_t n = 0; n < 200; ++n) {
    EXPECT_EQ(find_byte(s.data(), n, '\t'), n);
    for (std::size_t at : {std::size_t{0}, n / 2, n > 0 ? n - 1 : 0}) {
      if (at >= n) continue;
      std::string t = s;
      t[at] = '\t';
      t[n + 1] = '\t';  // beyond n: must not be found
      ASSERT_EQ(find_byte(t.data(), n, '\t'), at) << n << " " << at;
    }
  }
  std::string block(64, '-');
  block[0] = block[17] = block[63] = '\n';
  EXPECT_EQ(byte_mask64(block.data(), '\n'), (1ULL << 0) | (1ULL << 17) | (1ULL << 63));
}

TEST(JsonWriter, EscapesAndFormats) {
  JsonWriter w;
  w.begin_object().key("s").value("a\"b\\c\n\x01").key("n").value(3.0).key("f").value(0.1).key("x").value(NAN);
  w.key("a").begin_array().value(true).null().end_array().end_object();
  EXPECT_EQ(w.str(), R"({"s":"a\"b\\c\n\u0001","n":3,"f":0.1,"x":null,"a":[true,null]})");
}

}  // namespace
}  // namespace ebb::io
