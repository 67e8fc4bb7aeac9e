#include "ebb/core/duration.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "ebb/core/error.hpp"
#include "number_with_unit.hpp"

namespace ebb {
namespace {

// Scales in milliseconds, so that "1234ms" is read without a rounding.
// Longest suffixes first so "ms" is not read as "m" + garbage.
constexpr UnitScale kUnits[] = {{"ms", 1},        {"s", 1e3},        {"m", 60e3},
                                {"h", 3600e3},    {"d", 86400e3},    {"w", 7 * 86400e3}};
// Up to here (about 31,700 years) a whole number of milliseconds k and its
// seconds k / 1000 convert both ways exactly, which the round trip needs.
constexpr double kMaxMs = 1e15;

}  // namespace

double parse_duration(std::string_view text) {
  // Built by append: GCC 12 warns falsely (-Wrestrict, PR 105329) on "'" + std::string + "'".
  std::string quoted(1, '\'');
  quoted.append(message_text(text)).push_back('\'');
  if (text.empty()) throw InvalidArgument("empty duration (expected e.g. 90s, 5m, 1h, 1d)");
  const std::optional<double> scaled = parse_number_with_unit(text, kUnits, 1e3);  // a bare number is seconds
  if (!scaled) throw InvalidArgument("bad duration " + quoted + " (expected a number and a unit: ms, s, m, h, d, w)");
  // Durations have millisecond resolution, fixed the moment they are read:
  // "4.1m" is 246000 ms exactly, not 245.99999999999997 s, so a duration
  // stored as text and read back is the same number (a half-life names a view).
  const double ms = *scaled;
  if (!std::isfinite(ms) || ms < 0.5 || ms > kMaxMs) {
    throw InvalidArgument("bad duration " + quoted + " (must be finite and > 0, at least 1ms, at most 11574074d)");
  }
  return static_cast<double>(std::llround(ms)) / 1000;
}

std::string format_duration(double seconds) {
  constexpr UnitScale kLargestFirst[] = {{"d", 86400e3}, {"h", 3600e3}, {"m", 60e3}, {"s", 1e3}};
  for (const auto& u : kLargestFirst) {
    const double n = seconds / (u.scale / 1000);
    if (n >= 1 && n == std::floor(n)) {
      return std::to_string(static_cast<long long>(n)) + std::string(u.suffix);
    }
  }
  // Not a whole number of seconds: whole milliseconds (what parse_duration keeps).
  return std::to_string(std::llround(seconds * 1000)) + "ms";
}

}  // namespace ebb
