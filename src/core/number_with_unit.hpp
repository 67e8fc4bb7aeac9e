#pragma once
// What durations ("90s", "1.5h") and byte sizes ("512MiB") share: a number
// with an optional unit suffix. Private to core.
#include <charconv>
#include <optional>
#include <span>
#include <string_view>

namespace ebb {

struct UnitScale {
  std::string_view suffix;
  double scale;  // what one of the unit is worth in the caller's base unit
};

// `text` as a number, times the scale of the first unit in `units` that
// ends it (list "ms" before "m" and "KiB" before "B"), or `bare` with none;
// nullopt when the rest is not a number. Range checks are the caller's.
inline std::optional<double> parse_number_with_unit(std::string_view text, std::span<const UnitScale> units, double bare) {
  double scale = bare;
  std::string_view number = text;
  for (const auto& u : units) {
    if (text.size() > u.suffix.size() && text.ends_with(u.suffix)) {
      number = text.substr(0, text.size() - u.suffix.size());
      scale = u.scale;
      break;
    }
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
  return value * scale;
}

}  // namespace ebb
