#include "ebb/io/time_format.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "ebb/core/error.hpp"
#include "plain_decimal.hpp"

namespace ebb::io {
namespace {

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
// (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) noexcept {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

unsigned days_in_month(int y, int m) noexcept {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

std::optional<double> civil_seconds(int y, int mo, int d, int h, int mi, int s) noexcept {
  if (mo < 1 || mo > 12 || d < 1 || static_cast<unsigned>(d) > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60) {
    return std::nullopt;
  }
  return static_cast<double>(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s);
}

std::optional<double> parse_number(std::string_view text) noexcept {
  double v = 0;
  if (detail::parse_plain_decimal(text, v)) return v;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

TimeFormat parse_time_format(std::string_view name) {
  if (name == "auto") return TimeFormat::auto_detect;
  if (name == "unix") return TimeFormat::unix_seconds;
  if (name == "unix_ms") return TimeFormat::unix_ms;
  if (name == "rfc3339") return TimeFormat::rfc3339;
  if (name == "clf") return TimeFormat::clf;
  throw InvalidArgument("unknown time format '" + std::string(name) + "' (expected unix, unix_ms, rfc3339, clf or auto)");
}

const char* time_format_name(TimeFormat f) noexcept {
  switch (f) {
    case TimeFormat::auto_detect: return "auto";
    case TimeFormat::unix_seconds: return "unix";
    case TimeFormat::unix_ms: return "unix_ms";
    case TimeFormat::rfc3339: return "rfc3339";
    case TimeFormat::clf: return "clf";
  }
  return "?";
}

std::optional<double> parse_unix_seconds(std::string_view text) noexcept { return parse_number(text); }

std::optional<double> parse_unix_ms(std::string_view text) noexcept {
  auto v = parse_number(text);
  if (v) *v /= 1000.0;
  return v;
}

std::optional<double> parse_rfc3339(std::string_view s) noexcept {
  int y, mo, d, h, mi, sec;
  if (!digits(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' || !digits(s, 8, 2, d) ||
      (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s, 11, 2, h) || s[13] != ':' || !digits(s, 14, 2, mi) ||
      s[16] != ':' || !digits(s, 17, 2, sec)) {
    return std::nullopt;
  }
  auto base = civil_seconds(y, mo, d, h, mi, sec);
  if (!base) return std::nullopt;
  std::size_t pos = 19;
  double frac = 0;
  if (pos < s.size() && s[pos] == '.') {
    double scale = 0.1;
    std::size_t start = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      frac += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  double offset = 0;
  if (pos == s.size()) {
    // no zone: read as UTC
  } else if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh, om;
    if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !digits(s, pos + 4, 2, om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset = (s[pos] == '+' ? 1 : -1) * (oh * 3600.0 + om * 60.0);
    pos += 6;
  }
  if (pos != s.size()) return std::nullopt;
  return *base + frac - offset;
}

std::optional<double> parse_clf_time(std::string_view s) noexcept {
  // dd/Mon/yyyy:HH:MM:SS +zzzz
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  int d, y, h, mi, sec, zh, zm;
  if (s.size() != 26 || !digits(s, 0, 2, d) || s[2] != '/' || s[6] != '/' || !digits(s, 7, 4, y) || s[11] != ':' ||
      !digits(s, 12, 2, h) || s[14] != ':' || !digits(s, 15, 2, mi) || s[17] != ':' || !digits(s, 18, 2, sec) ||
      s[20] != ' ' || (s[21] != '+' && s[21] != '-') || !digits(s, 22, 2, zh) || !digits(s, 24, 2, zm) || zh > 23 || zm > 59) {
    return std::nullopt;
  }
  int mo = 0;
  for (int i = 0; i < 12; ++i) {
    if (s.substr(3, 3) == kMonths[i]) mo = i + 1;
  }
  if (mo == 0) return std::nullopt;
  auto base = civil_seconds(y, mo, d, h, mi, sec);
  if (!base) return std::nullopt;
  return *base - (s[21] == '+' ? 1 : -1) * (zh * 3600.0 + zm * 60.0);
}

std::optional<double> parse_time(TimeFormat format, std::string_view text) noexcept {
  switch (format) {
    case TimeFormat::unix_seconds: return parse_unix_seconds(text);
    case TimeFormat::unix_ms: return parse_unix_ms(text);
    case TimeFormat::rfc3339: return parse_rfc3339(text);
    case TimeFormat::clf: return parse_clf_time(text);
    case TimeFormat::auto_detect: break;
  }
  // Each attempt gives up at the first character that does not fit.
  if (auto v = parse_number(text)) return unix_seconds_from_number(*v);
  if (auto t = parse_rfc3339(text)) return t;
  return parse_clf_time(text);
}

}  // namespace ebb::io
