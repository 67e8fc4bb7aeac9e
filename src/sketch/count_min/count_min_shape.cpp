#include "ebb/sketch/count_min/count_min_shape.hpp"

#include <bit>
#include <cmath>
#include <string>

#include "ebb/core/error.hpp"

namespace ebb {

CountMinShape CountMinShape::with_dimensions(std::uint64_t width, std::uint64_t depth) {
  if (width < kMinWidth || width > kMaxWidth || !std::has_single_bit(width)) {
    throw InvalidArgument("sketch width must be a power of two in [" + std::to_string(kMinWidth) + ", " +
                          std::to_string(kMaxWidth) + "] (got " + std::to_string(width) + ")");
  }
  if (depth < 1 || depth > kMaxDepth) {
    throw InvalidArgument("sketch depth must be in [1, " + std::to_string(kMaxDepth) + "] (got " + std::to_string(depth) + ")");
  }
  return CountMinShape{static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(depth)};
}

CountMinShape CountMinShape::for_error(double epsilon, double delta) {
  if (!(epsilon > 0 && epsilon < 1)) throw InvalidArgument("epsilon must be in (0, 1) (got " + std::to_string(epsilon) + ")");
  if (!(delta > 0 && delta < 1)) throw InvalidArgument("delta must be in (0, 1) (got " + std::to_string(delta) + ")");
  const double raw_width = std::ceil(std::exp(1.0) / epsilon);
  if (raw_width > kMaxWidth) {
    throw InvalidArgument("epsilon " + std::to_string(epsilon) + " needs a sketch wider than " + std::to_string(kMaxWidth));
  }
  const auto width = std::bit_ceil(std::max<std::uint64_t>(kMinWidth, static_cast<std::uint64_t>(raw_width)));
  const auto depth = static_cast<std::uint64_t>(std::ceil(std::log(1.0 / delta)));
  return with_dimensions(width, std::max<std::uint64_t>(1, depth));
}

double CountMinShape::epsilon() const noexcept { return std::exp(1.0) / width; }
double CountMinShape::confidence() const noexcept { return 1.0 - std::exp(-static_cast<double>(depth)); }

}  // namespace ebb
