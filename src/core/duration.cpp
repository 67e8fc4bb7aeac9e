#include "ebb/core/duration.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "ebb/core/error.hpp"

namespace ebb {
namespace {

struct Unit {
  std::string_view suffix;
  double seconds;
};
// Longest suffixes first so "ms" is not read as "m" + garbage.
constexpr Unit kUnits[] = {{"ms", 1e-3}, {"s", 1},         {"m", 60},
                           {"h", 3600},  {"d", 86400},     {"w", 7 * 86400}};

}  // namespace

double parse_duration(std::string_view text) {
  // Built by append: GCC 12 warns falsely (-Wrestrict, PR 105329) on "'" + std::string + "'".
  std::string quoted(1, '\'');
  quoted.append(text).push_back('\'');
  if (text.empty()) throw InvalidArgument("empty duration (expected e.g. 90s, 5m, 1h, 1d)");
  double unit = 1;
  std::string_view number = text;
  for (const auto& u : kUnits) {
    if (text.size() > u.suffix.size() && text.ends_with(u.suffix)) {
      number = text.substr(0, text.size() - u.suffix.size());
      unit = u.seconds;
      break;
    }
  }
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size()) {
    throw InvalidArgument("bad duration " + quoted + " (expected a number and a unit: ms, s, m, h, d, w)");
  }
  // Durations have millisecond resolution, fixed the moment they are read:
  // "4.1m" is 246000 ms exactly, not 245.99999999999997 s, so a duration
  // stored as text and read back is the same number (a half-life names a view).
  const double ms = value * unit * 1000;
  if (!std::isfinite(ms) || ms < 0.5 || ms > 9.2e15) {
    throw InvalidArgument("bad duration " + quoted + " (must be finite and > 0, at least 1ms)");
  }
  return static_cast<double>(std::llround(ms)) / 1000;
}

std::string format_duration(double seconds) {
  constexpr Unit kLargestFirst[] = {{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}};
  for (const auto& u : kLargestFirst) {
    const double n = seconds / u.seconds;
    if (n >= 1 && n == std::floor(n)) {
      return std::to_string(static_cast<long long>(n)) + std::string(u.suffix);
    }
  }
  // Not a whole number of seconds: whole milliseconds (what parse_duration keeps).
  return std::to_string(std::llround(seconds * 1000)) + "ms";
}

}  // namespace ebb
