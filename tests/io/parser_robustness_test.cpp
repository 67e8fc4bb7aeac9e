// Bad input never crashes a parser: random bytes, truncations and mutations
// of valid lines go through every format under ASan and UBSan; each line is
// a record, skipped, zero-weight or malformed with a reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <regex>

#include "ebb/io/record_parser.hpp"
#include "ebb/io/time_format.hpp"
#include "support/utc_reference.hpp"

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

// Independent references for the time parsers: a regular expression for
// the shape, the calendar checks spelled out, libc's timegm for the date.
std::optional<double> reference_unix(const std::string& s) {
  static const std::regex kNumber(R"(-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)");
  if (!std::regex_match(s, kNumber)) return std::nullopt;
  const double v = std::strtod(s.c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

bool real_date(int y, int mo, int d, int h, int mi, int sec) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return mo >= 1 && mo <= 12 && d >= 1 && d <= kDays[mo - 1] + (mo == 2 && leap) && h <= 23 && mi <= 59 && sec <= 60;
}

std::optional<double> reference_rfc3339(const std::string& s) {
  static const std::regex kShape(R"((\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))?)");
  std::smatch m;
  if (!std::regex_match(s, m, kShape)) return std::nullopt;
  auto num = [&](int i) { return std::stoi(m[i].str()); };
  if (!real_date(num(1), num(2), num(3), num(4), num(5), num(6))) return std::nullopt;
  double offset = 0;
  if (m[9].matched) {
    if (num(10) > 23 || num(11) > 59) return std::nullopt;
    offset = (m[9].str() == "+" ? 1 : -1) * (num(10) * 3600.0 + num(11) * 60.0);
  }
  const double frac = m[7].matched ? std::strtod(("0" + m[7].str()).c_str(), nullptr) : 0;
  return testing::utc_seconds(num(1), num(2), num(3), num(4), num(5), num(6)) + frac - offset;
}

std::optional<double> reference_clf(const std::string& s) {
  static const std::regex kShape(R"((\d{2})/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2}))");
  static const std::string kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  std::smatch m;
  if (!std::regex_match(s, m, kShape)) return std::nullopt;
  auto num = [&](int i) { return std::stoi(m[i].str()); };
  const int mo = static_cast<int>(kMonths.find(m[2].str()) / 3) + 1;
  if (!real_date(num(3), mo, num(1), num(4), num(5), num(6)) || num(8) > 23 || num(9) > 59) return std::nullopt;
  return testing::utc_seconds(num(3), mo, num(1), num(4), num(5), num(6)) - (m[7].str() == "+" ? 1 : -1) * (num(8) * 3600.0 + num(9) * 60.0);
}

// Every mutation of a valid timestamp is accepted exactly when the
// reference accepts it, with the reference's value: garbage is refused,
// and whatever still is a timestamp reads as the date it spells.
TEST(ParserRobustness, TimeParsersAgreeWithAReferenceOnMutatedTimestamps) {
  std::mt19937_64 rng(7);
  const std::string seeds[] = {"2024-02-22T20:00:00.123+01:00", "22/Feb/2024:20:00:00 +0000", "1708632000.5"};
  int accepted[3] = {0, 0, 0};
  for (int i = 0; i < 20000; ++i) {
    const std::string s = mutate(seeds[i % 3], rng);
    const auto unix_ref = reference_unix(s), rfc_ref = reference_rfc3339(s), clf_ref = reference_clf(s);
    EXPECT_EQ(parse_unix_seconds(s), unix_ref) << s;
    EXPECT_EQ(parse_clf_time(s), clf_ref) << s;
    const auto rfc = parse_rfc3339(s);
    ASSERT_EQ(rfc.has_value(), rfc_ref.has_value()) << s;
    // The parser sums the fraction digit by digit, the reference with
    // strtod: the two may differ in the last bit of a ~1.7e9 double.
    if (rfc) {
      EXPECT_NEAR(*rfc, *rfc_ref, 1e-6) << s;
    }
    // Auto: a number by its magnitude, else rfc3339, else clf.
    const auto any = parse_time(TimeFormat::auto_detect, s);
    if (unix_ref) {
      EXPECT_EQ(any, unix_seconds_from_number(*unix_ref)) << s;
    } else if (rfc_ref) {
      ASSERT_TRUE(any) << s;
      EXPECT_NEAR(*any, *rfc_ref, 1e-6) << s;
    } else {
      EXPECT_EQ(any, clf_ref) << s;
    }
    accepted[i % 3] += unix_ref || rfc_ref || clf_ref;
  }
  // The unmutated seeds, and that the mutations left some valid ones.
  EXPECT_NEAR(*parse_rfc3339(seeds[0]), 1708628400.123, 1e-6);
  EXPECT_EQ(parse_clf_time(seeds[1]), 1708632000.0);
  EXPECT_EQ(parse_unix_seconds(seeds[2]), 1708632000.5);
  for (int a : accepted) EXPECT_GT(a, 0);
}

}  // namespace
}  // namespace ebb::io
