#pragma once
// The dimensions of a Count-Min sketch and the guarantee they buy
// (Cormode & Muthukrishnan 2005): with width w and depth d,
//   true <= estimate <= true + (e / w) * N   with probability >= 1 - e^-d.
#include <cstddef>
#include <cstdint>

namespace ebb {

struct CountMinShape {
  static constexpr std::uint32_t kMinWidth = 16;
  static constexpr std::uint32_t kMaxWidth = 1u << 30;
  static constexpr std::uint32_t kMaxDepth = 32;

  std::uint32_t width = 1u << 16;  // a power of two: row index = top bits of a hash
  std::uint32_t depth = 4;

  // Exact dimensions; throws InvalidArgument unless width is a power of two
  // in [kMinWidth, kMaxWidth] and depth is in [1, kMaxDepth].
  static CountMinShape with_dimensions(std::uint64_t width, std::uint64_t depth);
  // The smallest shape meeting the error target: w = ceil(e / epsilon)
  // rounded up to a power of two (so the effective epsilon is never worse
  // than asked), d = ceil(ln(1 / delta)).
  static CountMinShape for_error(double epsilon, double delta);

  double epsilon() const noexcept;     // e / width: the bound actually provided
  double confidence() const noexcept;  // 1 - e^-depth
  std::size_t counter_bytes() const noexcept { return std::size_t{width} * depth * sizeof(double); }

  friend bool operator==(const CountMinShape&, const CountMinShape&) = default;
};

}  // namespace ebb
