#pragma once
// UTF-8 as RFC 3629 defines it (the Unicode Standard's table 3-7 of
// well-formed byte sequences): no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequence. JSON
// text must be UTF-8 (RFC 8259), and keys read from files are arbitrary
// bytes, so whatever puts a key into JSON checks it with these.
#include <cstddef>
#include <span>
#include <string_view>

namespace ebb {

struct Utf8Step {
  std::size_t length;  // of the well-formed sequence at p, or of its maximal invalid subpart (>= 1)
  bool valid;
};

// The sequence that starts at p[0], n >= 1 bytes being readable. An invalid
// one has the length of its "maximal subpart" (Unicode 15, section 3.9:
// the longest prefix of some well-formed sequence, or 1 byte), the unit the
// standard's recommended practice replaces with one U+FFFD.
inline Utf8Step utf8_step(const unsigned char* p, std::size_t n) noexcept {
  const unsigned lead = p[0];
  if (lead < 0x80) return {1, true};
  std::size_t continuations;
  unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuations = 1;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    continuations = 2;
    if (lead == 0xE0) lo = 0xA0;       // below: overlong
    else if (lead == 0xED) hi = 0x9F;  // above: surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    continuations = 3;
    if (lead == 0xF0) lo = 0x90;       // below: overlong
    else if (lead == 0xF4) hi = 0x8F;  // above: beyond U+10FFFF
  } else {
    return {1, false};  // a continuation byte, C0/C1 (always overlong) or F5..FF
  }
  for (std::size_t i = 1; i <= continuations; ++i) {
    if (i >= n || p[i] < lo || p[i] > hi) return {i, false};
    lo = 0x80;
    hi = 0xBF;
  }
  return {continuations + 1, true};
}

// The length of the longest prefix of s that is valid UTF-8: s.size() when
// all of it is.
std::size_t utf8_valid_prefix(std::string_view s) noexcept;

// Whether every string is non-empty and all its bytes ASCII: then each is
// valid UTF-8. One pass over many short keys with no branch on their
// contents (a key's bytes are or-ed together in at most a few loads), for
// the usual batch; a false answer sends the caller to the checks above,
// which say which key and byte.
bool all_nonempty_ascii(std::span<const std::string_view> strings) noexcept;

}  // namespace ebb
