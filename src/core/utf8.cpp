#include "ebb/core/utf8.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ebb {

std::size_t utf8_valid_prefix(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // Keys are mostly ASCII: skip 8 bytes at a time while no high bit is set.
    while (i + 8 <= n) {
      std::uint64_t block;
      std::memcpy(&block, p + i, 8);
      if ((block & 0x8080808080808080ULL) != 0) break;
      i += 8;
    }
    if (i == n) break;
    // An ASCII tail of 1-7 bytes in one or two loads (overlapping, within
    // the string): short keys end here without a byte-by-byte loop.
    if (const std::size_t rest = n - i; rest < 8) {
      std::uint32_t a = 0, b = 0;
      if (rest >= 4) {
        std::memcpy(&a, p + i, 4);
        std::memcpy(&b, p + n - 4, 4);
      } else {
        a = p[i] | p[i + rest / 2] | p[n - 1];
      }
      if (((a | b) & 0x80808080U) == 0) break;
    }
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step step = utf8_step(p + i, n - i);
    if (!step.valid) return i;
    i += step.length;
  }
  return n;
}

bool all_nonempty_ascii(std::span<const std::string_view> strings) noexcept {
  std::uint64_t high = 0;  // the high bits seen
  bool empty = false;
  for (const std::string_view s : strings) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::uint64_t a = 0, b = 0;
    if (n >= 8) {
      // The first and last 8 bytes (overlapping when n < 16) and, up to 24
      // bytes, the 8 from byte min(8, n - 8): three loads, the same for
      // every length there (no branch on it to mispredict); longer ones
      // 8 at a time in between.
      std::uint64_t m;
      std::memcpy(&a, p, 8);
      std::memcpy(&b, p + n - 8, 8);
      std::memcpy(&m, p + std::min<std::size_t>(8, n - 8), 8);
      a |= m;
      for (std::size_t i = 16; i + 8 < n; i += 8) {
        std::memcpy(&m, p + i, 8);
        a |= m;
      }
    } else if (n >= 4) {
      std::uint32_t x, y;
      std::memcpy(&x, p, 4);
      std::memcpy(&y, p + n - 4, 4);
      a = x | y;
    } else if (n > 0) {
      a = p[0] | p[n / 2] | p[n - 1];
    }
    empty |= n == 0;
    high |= a | b;
  }
  return !empty && (high & 0x8080808080808080ULL) == 0;
}

}  // namespace ebb
