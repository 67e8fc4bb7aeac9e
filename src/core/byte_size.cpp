#include "ebb/core/byte_size.hpp"

#include <charconv>
#include <cmath>

#include "ebb/core/error.hpp"
#include "number_with_unit.hpp"

namespace ebb {
namespace {

constexpr UnitScale kUnits[] = {{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
                                {"KB", 1e3},      {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
                                {"B", 1}};

}  // namespace

std::uint64_t parse_byte_size(std::string_view text) {
  // Appended, not "'" + std::string(...): g++ 12 -O3 warns (-Wrestrict) on that chain.
  std::string quoted = "'";
  quoted.append(message_text(text)).push_back('\'');
  const std::optional<double> scaled = parse_number_with_unit(text, kUnits, 1);
  if (!scaled) throw InvalidArgument("bad size " + quoted + " (expected a number of bytes, or one with a unit: B, KiB, MiB, GiB, TiB, or decimal KB, MB, GB, TB)");
  const double bytes = *scaled;
  if (!std::isfinite(bytes) || bytes < 0 || bytes > 1.8e19) throw InvalidArgument("bad size " + quoted + " (out of range)");
  // Not llround: past 2^63 its long long overflows (1.6e19 read 2^63).
  return static_cast<std::uint64_t>(std::round(bytes));
}

std::string format_byte_size(std::uint64_t bytes) {
  constexpr UnitScale kLargestFirst[] = {{"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0}};
  for (const auto& u : kLargestFirst) {
    const double n = static_cast<double>(bytes) / u.scale;
    if (n >= 1 && n == std::floor(n)) return std::to_string(static_cast<std::uint64_t>(n)) + std::string(u.suffix);
  }
  return std::to_string(bytes);
}

}  // namespace ebb
