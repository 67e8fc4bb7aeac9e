#pragma once
// Finding a delimiter in a short field or line. Keys and log lines are
// mostly tens of bytes, where a call to libc's memchr costs more than the
// scan itself: look at 16 bytes at a time inline (SSE2 is part of x86-64),
// and hand long remainders to memchr.
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ebb::io {

// Index of the first c in the eight bytes at p, or 8 (SWAR: the lowest
// byte flagged by the has-zero test is always a true match, since borrows
// only run upward).
inline std::size_t find_byte8(const char* p, char c) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  if constexpr (std::endian::native != std::endian::little) w = __builtin_bswap64(w);
  const std::uint64_t x = w ^ (0x0101010101010101ULL * static_cast<unsigned char>(c));
  const std::uint64_t hit = (x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL;
  return hit == 0 ? 8 : static_cast<std::size_t>(__builtin_ctzll(hit)) / 8;
}

// Index of the first c in p[0, n), or n.
inline std::size_t find_byte(const char* p, std::size_t n, char c) noexcept {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i needle = _mm_set1_epi8(c);
  if (n >= 16 && n <= 32) {
    // The first and the last 16 bytes (overlapping): one mask, no branch on
    // where in a short field or line the byte is.
    const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i tail = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16));
    const auto head_mask = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(head, needle)));
    const auto tail_mask = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(tail, needle)));
    const std::uint32_t mask = head_mask | (tail_mask << (n - 16));
    return mask != 0 ? static_cast<std::size_t>(__builtin_ctz(mask)) : n;
  }
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
  // Without SSE2 (other machines), eight bytes at a time up to the last 16.
  for (; n - i > 16; i += 8) {
    if (const std::size_t hit = find_byte8(p + i, c); hit < 8) return i + hit;
  }
  // A tail of 8 to 16 bytes (a short last field, a timestamp): two words,
  // the last one overlapping, instead of a branch per byte.
  if (n - i >= 8) {
    const std::size_t head = find_byte8(p + i, c);
    const std::size_t tail = find_byte8(p + n - 8, c);
    return head < 8 ? i + head : tail < 8 ? n - 8 + tail : n;
  }
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

// Bit i set where p[i] == c, for i < n, 16 <= n <= 64: whole 16-byte
// blocks, then the last 16 bytes (overlapping), never reading past p + n.
// A line's every separator in one go: a field after the first then costs
// no scan of its own (a short one, under 8 bytes, went byte by byte).
inline std::uint64_t byte_mask_upto64(const char* p, std::size_t n, char c) noexcept {
  assert(n >= 16 && n <= 64);
  std::uint64_t mask = 0;
#if defined(__SSE2__)
  const __m128i needle = _mm_set1_epi8(c);
  auto block = [&](std::size_t at) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
    return static_cast<std::uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(b, needle))));
  };
  std::size_t at = 0;
  for (; at + 16 <= n; at += 16) mask |= block(at) << at;
  if (at < n) mask |= block(n - 16) << (n - 16);
#else
  for (std::size_t i = 0; i < n; ++i) mask |= static_cast<std::uint64_t>(p[i] == c) << i;
#endif
  return mask;
}

}  // namespace ebb::io
