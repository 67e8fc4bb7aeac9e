#include <gtest/gtest.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <vector>
#include <thread>

#include "ebb/core/error.hpp"
#include "ebb/io/find_byte.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/io/line_reader.hpp"
#include "ebb/io/record_parser.hpp"
#include "ebb/io/time_format.hpp"
#include "ebb/core/utf8.hpp"

namespace ebb::io {
namespace {

// Every line a reader gives until the end: (text, oversized).
std::vector<std::pair<std::string, bool>> read_all(LineReader& reader) {
  std::vector<Line> lines;
  std::vector<char> buffer;
  std::vector<std::pair<std::string, bool>> got;
  while (reader.next(buffer, lines)) {
    for (const auto& l : lines) got.emplace_back(std::string(l.text), l.oversized);
  }
  return got;
}

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

// Auto mode reads each value by its own shape; a number's unit is its
// magnitude's (10 digits seconds, 13 ms, 16 us, 19 ns).
TEST(TimeFormat, AutoReadsEachValueByItsShape) {
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "1708632000"), 1708632000.0);
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "1708632000.5"), 1708632000.5);
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "1708632000123"), 1708632000.123);
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "1708632000250000"), 1708632000.25);
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "1708632000500000000"), 1708632000.5);
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "99999999999"), 99999999999.0);  // below 1e11: seconds
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "100000000000"), 100000000.0);   // 1e11: milliseconds
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "99999999999999"), 99999999999.999);  // below 1e14: still ms
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "3600"), 3600.0);                  // small numbers are seconds
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "2024-02-22T20:00:00Z"), 1708632000.0);
  EXPECT_EQ(parse_time(TimeFormat::auto_detect, "22/Feb/2024:20:00:00 +0000"), 1708632000.0);
  EXPECT_FALSE(parse_time(TimeFormat::auto_detect, "yesterday"));
  EXPECT_FALSE(parse_time(TimeFormat::auto_detect, ""));
  // A format given explicitly is not second-guessed.
  EXPECT_EQ(parse_time(TimeFormat::unix_seconds, "1708632000123"), 1708632000123.0);
  EXPECT_EQ(parse_time(TimeFormat::unix_ms, "1708632000"), 1708632.0);
}

TEST(TimeFormat, NumbersTakeTheUnitOfTheirSize) {
  EXPECT_EQ(unix_seconds_from_number(99999999999), 99999999999.0);
  EXPECT_EQ(unix_seconds_from_number(1e11), 1e8);
  EXPECT_EQ(unix_seconds_from_number(1e14), 1e8);
  EXPECT_EQ(unix_seconds_from_number(1e17), 1e8);
  EXPECT_EQ(unix_seconds_from_number(1708632000.5), 1708632000.5);
  EXPECT_EQ(unix_seconds_from_number(-5), -5.0);
}

// Plain decimals are read without from_chars (Clinger's fast path) where
// that is exact: every shape must give from_chars' very bits, and the ones
// it refuses ("1.", ".5", signs, exponents, 16+ digits) still go to it.
TEST(TimeFormat, PlainDecimalsReadExactlyAsFromCharsReadsThem) {
  std::mt19937_64 rng(11);
  auto expect_same = [](const std::string& text) {
    double want = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), want);
    const bool ok = ec == std::errc() && end == text.data() + text.size() && std::isfinite(want);
    const auto got = parse_unix_seconds(text);
    ASSERT_EQ(got.has_value(), ok) << text;
    if (ok) {
      std::uint64_t a, b;
      std::memcpy(&a, &want, 8);
      std::memcpy(&b, &*got, 8);
      ASSERT_EQ(a, b) << text;
    }
  };
  for (const char* t : {"0", "0.0", "1700000000.000", "1700000000.001", "999999999999999", "9999999999999999", "99999999999999.9",
                        "0.000000000000001", "0.1", "0.3", "00000000000000000001", "1.", ".5", "-1.5", "+1", "1e3", "1.5e-3",
                        "12345678", "123456789012345", "1234567890123456", "12345678.12345678", "1234567.1234567", " 1", "1 ", ""}) {
    expect_same(t);
  }
  for (int i = 0; i < 200000; ++i) {
    std::string text;
    const int int_digits = static_cast<int>(rng() % 18);
    const int frac_digits = rng() % 3 == 0 ? -1 : static_cast<int>(rng() % 18);
    for (int d = 0; d < int_digits; ++d) text += static_cast<char>('0' + rng() % 10);
    if (frac_digits >= 0) {
      text += '.';
      for (int d = 0; d < frac_digits; ++d) text += static_cast<char>('0' + rng() % 10);
    }
    if (rng() % 50 == 0 && !text.empty()) text[rng() % text.size()] = "x/:-e"[rng() % 5];
    expect_same(text);
  }
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

// The first timestamp does not fix the unit for the stream: a millisecond
// time first, then seconds, then micro- and nanoseconds, all read right,
// in text columns and in JSON numbers alike.
TEST(RecordParser, EveryTimestampIsReadInItsOwnUnit) {
  KeyArena arena;
  auto tsv = make_record_parser(InputFormat::tsv, {"2", "1", ""}, TimeFormat::auto_detect, arena);
  EXPECT_EQ(parse_one(*tsv, "1708632000000\ta").rec.time, 1708632000.0);
  EXPECT_EQ(parse_one(*tsv, "1708632001\tb").rec.time, 1708632001.0);
  EXPECT_EQ(parse_one(*tsv, "1708632002000000\tc").rec.time, 1708632002.0);
  EXPECT_EQ(parse_one(*tsv, "1708632003000000000\td").rec.time, 1708632003.0);
  EXPECT_EQ(parse_one(*tsv, "2024-02-22T20:00:04Z\te").rec.time, 1708632004.0);
  EXPECT_EQ(parse_one(*tsv, "1708632005\tf").rec.time, 1708632005.0);
  auto json = make_record_parser(InputFormat::json, {"k", "ts", ""}, TimeFormat::auto_detect, arena);
  EXPECT_EQ(parse_one(*json, R"({"k":"a","ts":1708632000000})").rec.time, 1708632000.0);
  EXPECT_EQ(parse_one(*json, R"({"k":"a","ts":1708632001})").rec.time, 1708632001.0);
  EXPECT_EQ(parse_one(*json, R"({"k":"a","ts":"1708632002000"})").rec.time, 1708632002.0);
  auto r = parse_one(*tsv, "soon\tg");
  EXPECT_EQ(r.status, ParseStatus::malformed);
  EXPECT_EQ(r.error, "time 'soon' is not a timestamp (Unix s, ms, us or ns, rfc3339 or clf)");
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

// A TSV line of 16 to 64 bytes has its tabs found in one mask, a shorter or
// longer one field by field: the same columns, the same errors, at every
// length around both edges.
TEST(RecordParser, TsvColumnsAreTheSameAtEveryLineLength) {
  KeyArena arena;
  for (const int key_column : {1, 2, 3}) {
    auto p = make_record_parser(InputFormat::tsv, {std::to_string(key_column), "", ""}, TimeFormat::auto_detect, arena);
    for (std::size_t n = 1; n <= 70; ++n) {
      for (std::size_t layout = 0; layout < 6; ++layout) {
        // Tabs every (layout + 1) * 3 bytes, none when layout is 5.
        std::string line(n, 'k');
        for (std::size_t i = (layout + 1) * 3; layout < 5 && i < n; i += (layout + 1) * 3) line[i] = '\t';
        if (layout == 4 && n > 2) line[1] = '\t';  // an empty second column
        std::vector<std::string_view> fields;
        for (std::size_t at = 0;;) {
          const std::size_t tab = std::min(line.find('\t', at), n);
          fields.push_back(std::string_view(line).substr(at, tab - at));
          if (tab == n) break;
          at = tab + 1;
        }
        const auto r = parse_one(*p, line);
        const std::string where = "n=" + std::to_string(n) + " layout=" + std::to_string(layout) + " key=" + std::to_string(key_column);
        // A block of lines (`ebb top`'s path) reads the line the same way.
        const Line block[] = {{line, false}};
        ParsedLine parsed;
        std::string block_error;
        ASSERT_EQ(p->parse_lines(block, &parsed, block_error), 1u) << where;
        EXPECT_EQ(parsed.status, r.status) << where;
        EXPECT_EQ(block_error, r.error) << where;
        if (r.status == ParseStatus::record) {
          EXPECT_EQ(parsed.record.key, r.rec.key) << where;
        }
        if (static_cast<int>(fields.size()) < key_column) {
          ASSERT_EQ(r.status, ParseStatus::malformed) << where;
          EXPECT_EQ(r.error, "has " + std::to_string(fields.size()) + " columns, needs " + std::to_string(key_column)) << where;
        } else if (fields[key_column - 1].empty()) {
          ASSERT_EQ(r.status, ParseStatus::malformed) << where;
        } else {
          ASSERT_EQ(r.status, ParseStatus::record) << where << " " << r.error;
          EXPECT_EQ(r.rec.key, fields[key_column - 1]) << where;
        }
      }
    }
  }
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

// parse_lines() is parse() line after line, for every format, and stops
// right after a malformed or oversized line (which it leaves unparsed), so
// a header line after it is not resolved before the bad line is reported.
TEST(RecordParser, ParseLinesIsParseLineAfterLineAndStopsAtABadLine) {
  struct Case {
    InputFormat format;
    FieldSpec fields;
    std::vector<std::string> lines;
  };
  const std::vector<Case> cases = {
      {InputFormat::tsv, {"1", "", ""}, {"a\t1", "", "b", "\tx", "c\td\te", "dd"}},
      {InputFormat::tsv, {"2", "1", "3"}, {"1708632000\tapple\t2", "noon\tpear\t1", "1708632001\tfig", "1708632002\tfig\t0",
                                           "1708632003000\tkiwi\t-", "1708632004\t\t1", "", "1.5\tx\t3"}},
      {InputFormat::tsv, {"k", "t", ""}, {"t\tk", "1708632000\ta", "x\tb", "1708632001\tc"}},
      {InputFormat::csv, {"2", "1", ""}, {"1708632000,a", "1708632001,\"b,c\"", "oops", "1708632002,\"d"}},
      {InputFormat::json, {"k", "", ""}, {R"({"k":"a"})", R"({"k":1})", "{", R"({"j":1})", "  ", R"({"k":"b"})"}},
      {InputFormat::plain, {}, {"a", "", "b c"}},
      {InputFormat::clf, {}, {R"(1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.0" 200 5)", "junk"}},
  };
  std::mt19937_64 rng(3);
  for (const auto& c : cases) {
    for (int round = 0; round < 50; ++round) {
      std::vector<std::string> texts;
      std::vector<Line> lines;
      for (int i = 0; i < 300; ++i) texts.push_back(c.lines[i == 0 ? 0 : rng() % c.lines.size()]);
      for (std::size_t i = 0; i < texts.size(); ++i) lines.push_back({texts[i], i > 0 && rng() % 40 == 0});  // not the header
      KeyArena arena_a, arena_b;
      auto one = make_record_parser(c.format, c.fields, TimeFormat::auto_detect, arena_a);
      auto batch = make_record_parser(c.format, c.fields, TimeFormat::auto_detect, arena_b);
      std::vector<ParsedLine> out(lines.size());
      std::size_t at = 0;
      while (at < lines.size()) {
        const std::size_t block = std::min<std::size_t>(1 + rng() % 64, lines.size() - at);
        std::string error;
        const std::size_t n = batch->parse_lines(std::span<const Line>(lines).subspan(at, block), out.data(), error);
        ASSERT_GE(n, 1u);
        ASSERT_LE(n, block);
        for (std::size_t j = 0; j < n; ++j) {
          const Line& line = lines[at + j];
          if (line.oversized) {
            ASSERT_EQ(out[j].status, ParseStatus::malformed);
            ASSERT_EQ(j + 1, n) << "went on past an oversized line";
            continue;
          }
          Record want;
          std::string want_error;
          const ParseStatus status = one->parse(line.text, want, want_error);
          ASSERT_EQ(out[j].status, status) << line.text;
          if (status == ParseStatus::malformed) {
            ASSERT_EQ(error, want_error);
            ASSERT_EQ(j + 1, n) << "went on past a malformed line";
          }
          if (status == ParseStatus::record) {
            ASSERT_EQ(out[j].record.key, want.key);
            ASSERT_EQ(out[j].record.time, want.time);
            ASSERT_EQ(out[j].record.weight, want.weight);
          }
        }
        if (n < block) {
          ASSERT_TRUE(lines[at + n - 1].oversized || out[n - 1].status == ParseStatus::malformed);
        }
        at += n;
      }
    }
  }
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
  const auto got = read_all(reader);
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
  const auto got = read_all(reader);
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

// A line of exactly max_line_bytes whose CRLF is split between two reads
// (the '\r' last in one, the '\n' first in the next) is a line of the limit,
// not an oversized one. Found by fuzz/fuzz_line_reader: the reader judged
// the read's unfinished tail, '\r' included, against the limit.
TEST(LineReader, LineOfTheLimitWithItsCrlfSplitBetweenReadsIsNotOversized) {
  char path[] = "/tmp/ebb-line-reader-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  // Regular files are read kReadBytes at a time: put the '\r' at the last
  // byte of the first read.
  constexpr std::size_t kRead = io::LineReader::kReadBytes;
  std::string input;
  std::size_t a_lines = 0;
  for (; input.size() + 100 <= kRead - 1001; ++a_lines) input += std::string(99, 'a') + "\n";
  const std::size_t b_bytes = kRead - 1001 - input.size() - 1;
  input += std::string(b_bytes, 'b') + "\n";
  ASSERT_EQ(input.size(), kRead - 1001);
  input += std::string(1000, 'y') + "\r\n" + "after\r\n";
  ASSERT_EQ(input[kRead - 1], '\r');
  ASSERT_EQ(write(fd, input.data(), input.size()), static_cast<ssize_t>(input.size()));
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  LineReader reader(fd, 1000);
  const auto got = read_all(reader);
  close(fd);
  unlink(path);
  ASSERT_EQ(got.size(), a_lines + 3);  // the lines of 'a', then 'b', 'y' and "after"
  EXPECT_EQ(got[a_lines - 1], std::make_pair(std::string(99, 'a'), false));
  EXPECT_EQ(got[a_lines], std::make_pair(std::string(b_bytes, 'b'), false));
  EXPECT_EQ(got[a_lines + 1], std::make_pair(std::string(1000, 'y'), false));
  EXPECT_EQ(got[a_lines + 2], std::make_pair(std::string("after"), false));
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
  // Several matches (the first wins) and bytes with the high bit set around
  // them, in the 8-byte tail words too.
  for (std::size_t n = 0; n < 40; ++n) {
    for (std::size_t at = 0; at < n; ++at) {
      std::string t(n + 8, '\x89');
      for (std::size_t i = 0; i < n; i += 3) t[i] = static_cast<char>(0x80 + i);
      t[at] = '\t';
      for (std::size_t later = at + 1; later < n; later += 5) t[later] = '\t';
      ASSERT_EQ(find_byte(t.data(), n, '\t'), at) << n << " " << at;
      ASSERT_EQ(find_byte8(t.data() + (at / 8) * 8, '\t'), at % 8);
    }
  }
  // Every separator of a line of 16 to 64 bytes, and none past its end.
  for (std::size_t n = 16; n <= 64; ++n) {
    for (std::size_t at = 0; at < n; ++at) {
      // Exactly n bytes on the heap: a read past them is AddressSanitizer's.
      const auto t = std::make_unique<char[]>(n);
      std::fill_n(t.get(), n, '\x89');
      std::uint64_t want = 0;
      for (std::size_t i = at; i < n; i += 7) {
        t[i] = '\t';
        want |= std::uint64_t{1} << i;
      }
      ASSERT_EQ(byte_mask_upto64(t.get(), n, '\t'), want) << n << " " << at;
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

// Doubles from 2^53 on are written with an exponent, so that every JSON
// parser reads them as numbers: 2.18e20 used to come out as 21 bare digits,
// an integer past 64 bits that simdjson refuses, so a namespace stored with
// that hot_key_threshold did not load again. Found by fuzz/fuzz_namespace_spec.
TEST(JsonWriter, LargeNumbersCarryAnExponentAndReadBackExactly) {
  const double values[] = {9007199254740991.0, 9007199254740992.0, 2.1844674407370955e20, -3e19, 1e300, 18446744073709551616.0};
  const char* written[] = {"9007199254740991", "9.007199254740992e+15", "2.1844674407370955e+20", "-3e+19", "1e+300", "1.8446744073709552e+19"};
  simdjson::dom::parser parser;
  for (std::size_t i = 0; i < std::size(values); ++i) {
    JsonWriter w;
    w.begin_array().value(values[i]).end_array();
    EXPECT_EQ(w.str(), std::string(1, '[').append(written[i]).append("]"));  // (not "[" + string: g++ 12 -O3 -Wrestrict)
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(w.str()).get(doc), simdjson::SUCCESS) << w.str();
    EXPECT_EQ(double(doc.at(0)), values[i]) << w.str();
  }
}

// A number written again straight after is copied from the last one's text
// (an item's estimate and bounds are often the same count): the copy must
// be that number's own text, whatever came between, and a different number
// (-0 after 0, bit for bit) is formatted afresh.
TEST(JsonWriter, ARepeatedNumberIsWrittenAsItsOwnText) {
  JsonWriter w;
  w.begin_array().value(2.5).value(2.5).begin_object().key("k").value(2.5).end_object().value(-0.0).value(0.0).value(INFINITY).value(INFINITY).value(7.0);
  w.value(std::uint64_t{7}).value(7.0).value(1e300).value(1e300).value("s").value(0.1).value(0.1).end_array();
  EXPECT_EQ(w.str(), R"([2.5,2.5,{"k":2.5},0,0,null,null,7,7,7,1e+300,1e+300,"s",0.1,0.1])");
}

// Strings are written into room made for the worst case (6 bytes an input
// byte): every byte a control character or an invalid subpart, long enough
// to cross any growth step, comes out whole.
TEST(JsonWriter, WorstCaseStringsFitTheRoomMadeForThem) {
  for (const char fill : {'\x01', '\xFF', '"', 'a'}) {
    for (const std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{4097}}) {
      const std::string s(n, fill);
      JsonWriter w;
      w.begin_object().key(s).value(s).end_object();
      const std::string one = fill == '\x01' ? "\\u0001" : fill == '\xFF' ? "\\ufffd" : fill == '"' ? "\\\"" : "a";
      std::string lit = "\"";
      for (std::size_t i = 0; i < n; ++i) lit += one;
      lit += '"';
      EXPECT_EQ(w.str(), "{" + lit + ":" + lit + "}") << int(fill) << " x " << n;
    }
  }
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

// The Unicode Standard's examples of maximal subparts (section 3.9, tables
// 3-8 to 3-11): one U+FFFD per maximal invalid subpart, as \ufffd.
TEST(JsonWriter, InvalidUtf8BecomesOneReplacementPerMaximalSubpart) {
  EXPECT_EQ(json_string("a\xFF" "b"), R"("a\ufffdb")");
  EXPECT_EQ(json_string("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            R"("a\ufffd\ufffd\ufffdb\ufffdc\ufffd\ufffdd")");
  EXPECT_EQ(json_string("\xC0\xAF\xE0\x80\xBF\xF0\x81\x82\x41"), R"("\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffdA")");  // overlong
  EXPECT_EQ(json_string("\xED\xA0\x80\xED\xBF\xBF\xED\xAF\x41"), R"("\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffdA")");  // surrogates
  EXPECT_EQ(json_string("\xF4\x91\x92\x93\xFF\x41\x80\xBF\x42"), R"("\ufffd\ufffd\ufffd\ufffd\ufffdA\ufffd\ufffdB")");  // > U+10FFFF
  EXPECT_EQ(json_string("\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41"), R"("\ufffd\ufffd\ufffd\ufffdA")");  // truncated sequences
  EXPECT_EQ(json_string("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5 \xF4\x8F\xBF\xBF"), "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5 \xF4\x8F\xBF\xBF\"");
  EXPECT_EQ(json_string("x\xE2\x82"), R"("x\ufffd")");  // cut off at the end
  EXPECT_EQ(json_string("\x7F\x1F"), "\"\x7F\\u001f\"");
}

// The reference: decode by arithmetic (lead byte's length, payload bits,
// then the range rules), independently of utf8_step's table of byte ranges.
std::optional<std::size_t> reference_sequence(const unsigned char* p, std::size_t n) {
  const unsigned c = p[0];
  const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len == 0 || len > n) return std::nullopt;
  std::uint32_t cp = len == 1 ? c : c & (0x7Fu >> len);
  for (std::size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return std::nullopt;
  return len;
}
// Whether p[0, k) begins some well-formed sequence: try every second byte,
// complete with 0x80 (the later bytes of a sequence have no range rule).
bool reference_prefix(const unsigned char* p, std::size_t k) {
  unsigned char buf[4];
  for (unsigned second = 0x80; second <= 0xBF; ++second) {
    for (std::size_t i = 0; i < 4; ++i) buf[i] = i < k ? p[i] : i == 1 ? static_cast<unsigned char>(second) : 0x80;
    auto len = reference_sequence(buf, 4);
    if (len && *len > k) return true;
  }
  return false;
}
std::string reference_sanitized(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (auto len = reference_sequence(p + i, s.size() - i)) {
      out.append(s.substr(i, *len));
      i += *len;
      continue;
    }
    std::size_t k = 1;  // the maximal subpart: the longest proper prefix of a well-formed sequence
    while (k < 3 && i + k < s.size() && reference_prefix(p + i, k + 1)) ++k;
    out += "\xEF\xBF\xBD";
    i += k;
  }
  return out;
}

// Random strings made of the bytes near the edges of the rules: ASCII,
// quotes and controls, every kind of lead byte, continuation bytes at the
// range limits; most of them are not UTF-8.
std::string random_edge_bytes(std::mt19937_64& rng) {
  static constexpr unsigned char kEdges[] = {'a', '"', '\\', 0x01, 0x1F, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1,
                                             0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF};
  std::string s(rng() % 40, '\0');
  for (auto& c : s) c = static_cast<char>(rng() % 3 == 0 ? rng() % 256 : kEdges[rng() % sizeof kEdges]);
  return s;
}

// Valid UTF-8: random code points (surrogates excluded) of every length.
std::string random_utf8(std::mt19937_64& rng) {
  std::string s;
  for (int n = static_cast<int>(rng() % 20); n > 0; --n) {
    std::uint32_t cp;
    do {
      static constexpr std::uint32_t kTop[] = {0x80, 0x800, 0x10000, 0x110000};
      cp = static_cast<std::uint32_t>(rng() % kTop[rng() % 4]);
    } while (cp >= 0xD800 && cp <= 0xDFFF);
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return s;
}

// Property: whatever the bytes, the output is JSON that simdjson (which
// validates UTF-8) parses, to exactly the input with each maximal invalid
// subpart replaced by U+FFFD; valid UTF-8 comes back unchanged.
TEST(JsonWriter, AnyBytesGiveValidJsonAndValidUtf8RoundTrips) {
  std::mt19937_64 rng(2024);
  simdjson::dom::parser parser;
  int invalid = 0;
  for (int round = 0; round < 20000; ++round) {
    const std::string s = random_edge_bytes(rng);
    const std::string json = json_string(s);
    std::string_view parsed;
    ASSERT_EQ(parser.parse(json).get(parsed), simdjson::SUCCESS) << json;
    const std::string expected = reference_sanitized(s);
    ASSERT_EQ(parsed, expected) << json;
    invalid += expected != s;
  }
  EXPECT_GT(invalid, 10000);  // the generator does make invalid input most of the time
  for (int round = 0; round < 5000; ++round) {
    const std::string s = random_utf8(rng);
    const std::string json = json_string(s);
    std::string_view parsed;
    ASSERT_EQ(parser.parse(json).get(parsed), simdjson::SUCCESS) << json;
    ASSERT_EQ(parsed, s);
  }
}

TEST(Utf8, AllNonemptyAsciiSeesEveryByteOfEveryKey) {
  // Every length up to 40 (the short paths, the overlapping 8-byte loads,
  // the middle loop), a high bit at each position of one key among others,
  // and an empty key anywhere: each is found. Each key is viewed in a heap
  // block of exactly its length, so a load past a key's end is
  // AddressSanitizer's (a std::string's inline buffer would hide it).
  for (std::size_t n = 1; n <= 40; ++n) {
    std::vector<std::string> keys = {"a", std::string(n, 'b'), "ccccccccc"};
    std::vector<std::unique_ptr<char[]>> blocks;
    auto views = [&] {
      blocks.clear();
      std::vector<std::string_view> out;
      for (const auto& k : keys) {
        blocks.push_back(std::make_unique<char[]>(k.size()));
        std::memcpy(blocks.back().get(), k.data(), k.size());
        out.emplace_back(blocks.back().get(), k.size());
      }
      return out;
    };
    EXPECT_TRUE(all_nonempty_ascii(views())) << n;
    for (std::size_t at = 0; at < n; ++at) {
      for (const char bad : {'\x80', '\xC3', '\xFF'}) {
        keys[1].assign(n, 'b');
        keys[1][at] = bad;
        EXPECT_FALSE(all_nonempty_ascii(views())) << n << " " << at;
      }
    }
    keys[1].assign(n, '\x7F');  // the highest ASCII byte
    EXPECT_TRUE(all_nonempty_ascii(views())) << n;
    keys[1].clear();
    EXPECT_FALSE(all_nonempty_ascii(views())) << n;
  }
  EXPECT_TRUE(all_nonempty_ascii({}));
  // It agrees with the full check on random keys.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20000; ++round) {
    std::vector<std::string> keys(1 + rng() % 4);
    for (auto& k : keys) {
      k.resize(rng() % 30);
      for (auto& c : k) c = static_cast<char>(rng() % 100 == 0 ? 0x80 + rng() % 128 : rng() % 128);
    }
    const std::vector<std::string_view> views(keys.begin(), keys.end());
    bool expected = true;
    for (const auto& k : keys) expected = expected && !k.empty() && std::all_of(k.begin(), k.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    ASSERT_EQ(all_nonempty_ascii(views), expected) << round;
  }
}

TEST(Utf8, ValidPrefixEndsAtTheFirstInvalidSequence) {
  EXPECT_EQ(utf8_valid_prefix("abc\xC3\xA9"), 5u);
  EXPECT_EQ(utf8_valid_prefix("abcdefgh\xC3\xA9\xFFxyz"), 10u);
  EXPECT_EQ(utf8_valid_prefix("abcdefghijklmnop\xE2\x82"), 16u);  // truncated after an 8-byte block
  EXPECT_EQ(utf8_valid_prefix("\xED\xA0\x80"), 0u);  // a surrogate
  EXPECT_EQ(utf8_valid_prefix("\xF4\x8F\xBF\xBF\xF4\x90\x80\x80"), 4u);  // U+10FFFF, then beyond
  EXPECT_EQ(utf8_valid_prefix(""), 0u);
  // A bad byte anywhere in a short key, or in the tail after 8-byte blocks
  // (read in overlapping loads), is found where it is.
  for (std::size_t n = 1; n <= 24; ++n) {
    EXPECT_EQ(utf8_valid_prefix(std::string(n, 'a')), n);
    for (std::size_t at = 0; at < n; ++at) {
      std::string s(n, 'a');
      s[at] = '\xFF';
      EXPECT_EQ(utf8_valid_prefix(s), at) << n << " " << at;
    }
  }
  // Against the reference: the prefix is valid, and no well-formed
  // sequence starts where it ends (decoding from the start stops there).
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20000; ++round) {
    const std::string s = round % 2 ? random_edge_bytes(rng) : random_utf8(rng);
    const std::size_t cut = utf8_valid_prefix(s);
    ASSERT_LE(cut, s.size());
    ASSERT_EQ(reference_sanitized(s.substr(0, cut)), s.substr(0, cut)) << round;
    if (cut < s.size()) {
      ASSERT_FALSE(reference_sequence(reinterpret_cast<const unsigned char*>(s.data()) + cut, s.size() - cut)) << round;
    } else {
      ASSERT_EQ(reference_sanitized(s), s) << round;
    }
  }
}

}  // namespace
}  // namespace ebb::io
