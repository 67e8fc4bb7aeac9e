// Durations (core/duration.hpp: ?half_life=, "half_lives", the CLI's flags)
// and byte sizes (core/byte_size.hpp: --max-memory). Input: a digit ('0'
// duration, '1' byte size), then the text.
// Checks: a refused text is an InvalidArgument, nothing else; a duration is
// a whole number of milliseconds >= 1 ms, and format_duration() of it
// parses back to the same double (a stored half-life names its view, so it
// must survive a restart); a size is the number the text denotes, rounded
// to a whole byte.
#include <charconv>
#include <cmath>
#include <optional>

#include "ebb/core/byte_size.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb;

// What a size text denotes, read independently: a number, then an optional unit.
std::optional<double> denoted_bytes(std::string_view text) {
  static const std::pair<std::string_view, double> kUnits[] = {{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
                                                               {"TiB", 1099511627776.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
                                                               {"TB", 1e12}, {"B", 1}};
  double unit = 1;
  for (const auto& [suffix, bytes] : kUnits) {
    if (text.size() > suffix.size() && text.ends_with(suffix)) {
      text.remove_suffix(suffix.size());
      unit = bytes;
      break;
    }
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v * unit;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const bool bytes = in.digit() & 1;
  const std::string_view text = in.rest();
  try {
    if (!bytes) {
      const double d = parse_duration(text);
      FUZZ_CHECK(std::isfinite(d) && d >= 0.001);
      FUZZ_CHECK(std::nearbyint(d * 1000) / 1000 == d);
      const std::string spelled = format_duration(d);
      FUZZ_CHECK_MSG(parse_duration(spelled) == d, spelled);
      FUZZ_CHECK(format_duration(parse_duration(spelled)) == spelled);
    } else {
      const std::uint64_t n = parse_byte_size(text);
      const auto want = denoted_bytes(text);
      FUZZ_CHECK(want.has_value());
      FUZZ_CHECK_MSG(std::fabs(static_cast<double>(n) - std::nearbyint(*want)) <= std::max(1.0, *want * 1e-15), std::to_string(n));
    }
  } catch (const InvalidArgument&) {
  }
  return 0;
}
