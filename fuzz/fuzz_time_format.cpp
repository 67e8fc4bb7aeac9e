// Timestamps in input lines (io/time_format.hpp). Input: the text of one
// timestamp.
// Checks: no parser throws (they are noexcept) and every accepted value is
// finite; parse_time(format) is the format's own parser; auto reads a number
// by its magnitude (unix_seconds_from_number), else RFC 3339, else CLF;
// unix_ms is unix / 1000; and an accepted RFC 3339 or CLF time is what
// libc's timegm() makes of the same fields (within the fraction's rounding).
#include <cmath>

#include "ebb/io/time_format.hpp"
#include "fuzz_support.hpp"
#include "support/utc_reference.hpp"

namespace {

using namespace ebb;
using io::TimeFormat;

int num(std::string_view s, std::size_t pos, std::size_t n) {
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

bool same(std::optional<double> a, std::optional<double> b) { return a.has_value() == b.has_value() && (!a || *a == *b); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto unix_s = io::parse_unix_seconds(text);
  const auto unix_ms = io::parse_unix_ms(text);
  const auto rfc = io::parse_rfc3339(text);
  const auto clf = io::parse_clf_time(text);
  for (const auto& v : {unix_s, unix_ms, rfc, clf}) {
    if (v) FUZZ_CHECK(std::isfinite(*v));
  }
  FUZZ_CHECK(same(io::parse_time(TimeFormat::unix_seconds, text), unix_s));
  FUZZ_CHECK(same(io::parse_time(TimeFormat::unix_ms, text), unix_ms));
  FUZZ_CHECK(same(io::parse_time(TimeFormat::rfc3339, text), rfc));
  FUZZ_CHECK(same(io::parse_time(TimeFormat::clf, text), clf));
  FUZZ_CHECK(unix_s.has_value() == unix_ms.has_value());
  if (unix_s) FUZZ_CHECK(*unix_ms == *unix_s / 1000.0);

  const auto autodetected = io::parse_time(TimeFormat::auto_detect, text);
  if (unix_s) FUZZ_CHECK(same(autodetected, io::unix_seconds_from_number(*unix_s)));
  else if (rfc) FUZZ_CHECK(same(autodetected, rfc));
  else FUZZ_CHECK(same(autodetected, clf));

  if (rfc) {
    // YYYY-MM-DDTHH:MM:SS[.frac][Z|+HH:MM|-HH:MM], already validated.
    double want = ebb::testing::utc_seconds(num(text, 0, 4), num(text, 5, 2), num(text, 8, 2), num(text, 11, 2), num(text, 14, 2), num(text, 17, 2));
    std::size_t pos = 19;
    if (pos < text.size() && text[pos] == '.') {
      const std::size_t start = ++pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
      want += std::strtod(("0." + std::string(text.substr(start, pos - start))).c_str(), nullptr);
    }
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      want -= (text[pos] == '+' ? 1 : -1) * (num(text, pos + 1, 2) * 3600.0 + num(text, pos + 4, 2) * 60.0);
    }
    FUZZ_CHECK_MSG(std::fabs(*rfc - want) <= 1e-6 + std::fabs(want) * 1e-15, text);
  }
  if (clf) {
    // dd/Mon/yyyy:HH:MM:SS +zzzz
    static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
    const int mo = static_cast<int>(kMonths.find(text.substr(3, 3))) / 3 + 1;
    double want = ebb::testing::utc_seconds(num(text, 7, 4), mo, num(text, 0, 2), num(text, 12, 2), num(text, 15, 2), num(text, 18, 2));
    want -= (text[21] == '+' ? 1 : -1) * (num(text, 22, 2) * 3600.0 + num(text, 24, 2) * 60.0);
    FUZZ_CHECK_MSG(*clf == want, text);
  }
  return 0;
}
