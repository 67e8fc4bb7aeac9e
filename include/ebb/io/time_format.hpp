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

// Which format a sample looks like (auto-detection on the first timestamp
// of a stream): clf, rfc3339, or a number (> 1e11 reads as milliseconds:
// 1e11 seconds is the year 5138).
std::optional<TimeFormat> detect_time_format(std::string_view sample) noexcept;

// Parses one timestamp of a known (not auto) format.
std::optional<double> parse_time(TimeFormat format, std::string_view text) noexcept;

}  // namespace ebb::io
