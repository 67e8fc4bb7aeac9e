#pragma once
// Finding a delimiter in a short field or line. Keys and log lines are
// mostly tens of bytes, where a call to libc's memchr costs more than the
// scan itself: look at 16 bytes at a time inline (SSE2 is part of x86-64),
// and hand long remainders to memchr.
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ebb::io {

// Index of the first c in p[0, n), or n.
inline std::size_t find_byte(const char* p, std::size_t n, char c) noexcept {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i needle = _mm_set1_epi8(c);
  for (; i + 16 <= n && i < 64; i += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(block, needle));
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
  if (n - i > 16) {
    const void* hit = std::memchr(p + i, c, n - i);
    return hit != nullptr ? static_cast<std::size_t>(static_cast<const char*>(hit) - p) : n;
  }
#endif
  for (; i < n; ++i) {
    if (p[i] == c) return i;
  }
  return n;
}

// Bit i set where p[i] == c, for the 64 bytes at p (all readable).
inline std::uint64_t byte_mask64(const char* p, char c) noexcept {
#if defined(__SSE2__)
  const __m128i needle = _mm_set1_epi8(c);
  std::uint64_t mask = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    mask |= static_cast<std::uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, needle)))) << (16 * k);
  }
  return mask;
#else
  std::uint64_t mask = 0;
  for (int i = 0; i < 64; ++i) mask |= static_cast<std::uint64_t>(p[i] == c) << i;
  return mask;
#endif
}

}  // namespace ebb::io
