#pragma once
// Reading the plain decimals a Unix time column holds ("1700000000.001")
// without std::from_chars, exactly as from_chars reads them.
//
// Digits, optionally '.' and more digits, at most 15 significant digits in
// all: the value is m / 10^f for an integer m < 2^53 and f <= 15, both exact
// in a double, so one correctly rounded division gives the correctly
// rounded value of the decimal, which is what from_chars returns (Clinger's
// fast path). Anything else (a sign, an exponent, more digits, "1.", ".5")
// is left to from_chars. Digits are read eight at a time (SWAR) where eight
// remain.
#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace ebb::io::detail {

// Whether the eight bytes are all '0'..'9'.
inline bool eight_digits(std::uint64_t v) noexcept {
  return ((v & 0xF0F0F0F0F0F0F0F0ULL) | (((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) == 0x3333333333333333ULL;
}

// The value of eight ASCII digits, the first one most significant (little-endian loads).
inline std::uint32_t eight_digits_value(std::uint64_t v) noexcept {
  v = (v & 0x0F0F0F0F0F0F0F0FULL) * 2561 >> 8;
  v = (v & 0x00FF00FF00FF00FFULL) * 6553601 >> 16;
  return static_cast<std::uint32_t>((v & 0x0000FFFF0000FFFFULL) * 42949672960001ULL >> 32);
}

// Appends the digits at text[i...] to m; returns how many there were.
inline std::size_t read_digits(std::string_view text, std::size_t& i, std::uint64_t& m) noexcept {
  const std::size_t start = i;
  const std::size_t n = text.size();
  while (i + 8 <= n) {
    std::uint64_t v;
    std::memcpy(&v, text.data() + i, 8);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);  // the first digit in the low byte
    if (!eight_digits(v)) break;
    m = m * 100000000 + eight_digits_value(v);
    i += 8;
  }
  for (; i < n && text[i] >= '0' && text[i] <= '9'; ++i) m = m * 10 + static_cast<unsigned>(text[i] - '0');
  return i - start;
}

// true and `out` set when text is a plain decimal of the shape above.
inline bool parse_plain_decimal(std::string_view text, double& out) noexcept {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  std::uint64_t m = 0;  // wraps harmlessly past 19 digits: such text is refused below
  std::size_t i = 0;
  const std::size_t digits = read_digits(text, i, m);
  if (digits == 0 || digits > 15) return false;
  std::size_t frac = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    frac = read_digits(text, i, m);
    if (frac == 0 || digits + frac > 15) return false;
  }
  if (i != text.size()) return false;
  out = static_cast<double>(m) / kPow10[frac];
  return true;
}

}  // namespace ebb::io::detail
