// Bad input never crashes a parser: random bytes, truncations and mutations
// of valid lines go through every format under ASan and UBSan; each line is
// a record, skipped, zero-weight or malformed with a reason.
#include <gtest/gtest.h>

#include <random>

#include "ebb/io/record_parser.hpp"
#include "ebb/io/time_format.hpp"

namespace ebb::io {
namespace {

std::string mutate(std::string s, std::mt19937_64& rng) {
  static const char kBytes[] = "\t,\"[]{}:- \\/\n\r0123456789abcxyz.e+";
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 4) {
      case 0: s[at] = kBytes[rng() % (sizeof kBytes - 1)]; break;
      case 1: s.erase(at, 1 + rng() % 3); break;
      case 2: s.insert(at, 1, static_cast<char>(rng() % 256)); break;
      case 3: s.resize(at); break;
    }
  }
  return s;
}

TEST(ParserRobustness, MutatedAndRandomLinesNeverCrash) {
  struct Case {
    InputFormat format;
    FieldSpec fields;
    std::string valid;
  };
  const std::vector<Case> cases = {
      {InputFormat::plain, {}, "hashtag"},
      {InputFormat::tsv, {"2", "1", "3"}, "1708632000\tapple\t2.5"},
      {InputFormat::tsv, {"1", "", ""}, "apple\tmore"},
      {InputFormat::csv, {"2", "1", "3"}, "2024-02-22T20:00:00Z,\"Widget, \"\"D\"\"\",3"},
      {InputFormat::json, {"a.b", "ts", "w"}, R"({"a":{"b":"x"},"ts":1708632000123,"w":2})"},
      {InputFormat::clf, {"path", "", "bytes"}, R"(1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /x HTTP/1.0" 200 2326 "r" "a")"},
  };
  std::mt19937_64 rng(99);
  for (const auto& c : cases) {
    KeyArena arena;
    auto parser = make_record_parser(c.format, c.fields, TimeFormat::auto_detect, arena);
    Record rec;
    std::string error;
    ASSERT_EQ(parser->parse(c.valid, rec, error), ParseStatus::record) << c.valid << ": " << error;
    for (int i = 0; i < 3000; ++i) {
      std::string line = i % 10 == 0 ? std::string(rng() % 64, '\0') : mutate(c.valid, rng);
      if (i % 10 == 0) {
        for (auto& ch : line) ch = static_cast<char>(rng() % 256);
      }
      error.clear();
      const auto status = parser->parse(line, rec, error);
      if (status == ParseStatus::malformed) {
        EXPECT_FALSE(error.empty()) << line;
      }
      if (status == ParseStatus::record) {
        EXPECT_FALSE(rec.key.empty()) << line;
        EXPECT_GT(rec.weight, 0) << line;
      }
      arena.reset();
    }
  }
}

TEST(ParserRobustness, TimeParsersRejectGarbageWithoutCrashing) {
  std::mt19937_64 rng(7);
  const std::string seeds[] = {"2024-02-22T20:00:00.123+01:00", "22/Feb/2024:20:00:00 +0000", "1708632000.5"};
  for (int i = 0; i < 20000; ++i) {
    const std::string s = mutate(seeds[i % 3], rng);
    (void)parse_time(TimeFormat::auto_detect, s);
    (void)parse_rfc3339(s);
    (void)parse_clf_time(s);
    (void)parse_unix_seconds(s);
  }
}

}  // namespace
}  // namespace ebb::io
