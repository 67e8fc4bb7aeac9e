#pragma once
// Timestamps as they appear in logs and streams, to Unix seconds.
#include <optional>
#include <string>
#include <string_view>

namespace ebb::io {

enum class TimeFormat { auto_detect, unix_seconds, unix_ms, rfc3339, clf };

// "unix", "unix_ms", "rfc3339", "clf", "auto"; throws InvalidArgument otherwise.
TimeFormat parse_time_format(std::string_view name);
const char* time_format_name(TimeFormat f) noexcept;

// nullopt when the text is not a timestamp of that format.
std::optional<double> parse_unix_seconds(std::string_view text) noexcept;
std::optional<double> parse_unix_ms(std::string_view text) noexcept;
// 2024-02-22T18:00:00Z, 2024-02-22 18:00:00.25+01:00, ... (offset required
// unless it is a plain date-time, which is read as UTC).
std::optional<double> parse_rfc3339(std::string_view text) noexcept;
// 10/Oct/2000:13:55:36 -0700 (the Common Log Format's bracketed date).
std::optional<double> parse_clf_time(std::string_view text) noexcept;

// A Unix time given as a bare number, in the unit its magnitude says:
// below 1e11 seconds (1e11 s is the year 5138), below 1e14 milliseconds,
// below 1e17 microseconds, above that nanoseconds. So a 10-digit time is
// seconds, 13 digits milliseconds, 16 microseconds, 19 nanoseconds, for
// any date from 1973 to 5138 whatever unit it is written in.
inline double unix_seconds_from_number(double v) noexcept {
  const double magnitude = v < 0 ? -v : v;
  if (magnitude < 1e11) return v;
  if (magnitude < 1e14) return v / 1e3;
  if (magnitude < 1e17) return v / 1e6;
  return v / 1e9;
}

// Parses one timestamp. auto_detect reads each value by its own shape: a
// number by its magnitude (unix_seconds_from_number), else rfc3339, else
// clf. Deciding per value, not once from the first timestamp, means a
// stream mixing seconds and milliseconds is read right throughout.
std::optional<double> parse_time(TimeFormat format, std::string_view text) noexcept;

}  // namespace ebb::io
