#pragma once
// Helpers shared by the record parsers: reading a time and a weight out of
// a field's text with the stream's time format (auto: each value by its shape).
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "ebb/io/record_parser.hpp"
#include "ebb/io/time_format.hpp"
#include "plain_decimal.hpp"

namespace ebb::io::detail {

class TimeReader {
 public:
  explicit TimeReader(TimeFormat format) : format_(format) {}

  // Converts text to seconds or explains why not. In auto mode each value
  // is read by its own shape (parse_time), never by the first one's.
  std::optional<double> read(std::string_view text, std::string& error) const {
    double t = 0;
    if (!read(text, t, error)) return std::nullopt;
    return t;
  }
  // The same into `out` (false: not a time): no std::optional on the hot
  // path, whose byte-wide flag GCC stores and then reloads eight bytes wide.
  bool read(std::string_view text, double& out, std::string& error) const {
    // A plain decimal (a Unix time column) is read here, inline; the rest,
    // and every format without numbers, by parse_time (the same values).
    if (format_ == TimeFormat::auto_detect && parse_plain_decimal(text, out)) {
      out = unix_seconds_from_number(out);
      return true;
    }
    if (auto t = parse_time(format_, text)) {
      out = *t;
      return true;
    }
    return not_a_time(text, error);
  }
  // Numeric JSON times: seconds or milliseconds by format, by magnitude when auto.
  double from_number(double v) const noexcept {
    if (format_ == TimeFormat::auto_detect) return unix_seconds_from_number(v);
    return format_ == TimeFormat::unix_ms ? v / 1000.0 : v;
  }

 private:
  [[gnu::cold, gnu::noinline]] bool not_a_time(std::string_view text, std::string& error) const {
    error = "time '" + std::string(text.substr(0, 64)) + "' is not a " +
            (format_ == TimeFormat::auto_detect ? std::string("timestamp (Unix s, ms, us or ns, rfc3339 or clf)")
                                                : time_format_name(format_) + std::string(" timestamp"));
    return false;
  }

  TimeFormat format_;
};

// "-" and 0 are zero weights; anything else must be a finite number > 0.
inline ParseStatus read_weight(std::string_view text, double& out, std::string& error) {
  if (text == "-") return ParseStatus::zero_weight;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0) {
    error = "weight '" + std::string(text.substr(0, 64)) + "' is not a finite number >= 0";
    return ParseStatus::malformed;
  }
  if (v == 0) return ParseStatus::zero_weight;
  out = v;
  return ParseStatus::record;
}

}  // namespace ebb::io::detail
