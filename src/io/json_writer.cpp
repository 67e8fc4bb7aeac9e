#include "ebb/io/json_writer.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "ebb/core/utf8.hpp"

namespace ebb::io {

namespace {

constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighs = 0x8080808080808080ULL;

// Whether any byte of the word is below n (n <= 128; exact as a yes/no).
constexpr std::uint64_t has_byte_below(std::uint64_t x, unsigned n) noexcept { return (x - kOnes * n) & ~x & kHighs; }

// Whether 8 bytes can be copied as they are: printable ASCII other than
// the quote and the backslash.
inline bool plain8(const unsigned char* p) noexcept {
  std::uint64_t x;
  std::memcpy(&x, p, 8);
  return ((x & kHighs) | has_byte_below(x, 0x20) | has_byte_below(x ^ (kOnes * '"'), 1) | has_byte_below(x ^ (kOnes * '\\'), 1)) == 0;
}

inline bool plain(unsigned char c) noexcept { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

// Room for at most n more bytes at the end of out, written through a raw
// pointer, then trimmed to what `write` wrote (it returns its end): one
// capacity check per string or number, where appending character by
// character checked each (an uncached GET /top-k k=100 spent half its JSON
// time in those appends and their copies).
template <typename Write>
void append_at_most(std::string& out, std::size_t n, Write write) {
  const std::size_t used = out.size();
  if (out.capacity() - used < n) out.reserve(std::max(out.capacity() * 2, used + n));
  out.resize(used + n);
  char* const end = write(out.data() + used);
  out.resize(static_cast<std::size_t>(end - out.data()));
}

// The most bytes a string literal takes: quotes, and at most 6 bytes an
// input byte (a control character or an invalid subpart as an escape).
constexpr std::size_t max_literal_bytes(std::size_t n) noexcept { return 6 * n + 2; }

// s as a JSON string literal at p (room for max_literal_bytes(s.size())); returns its end.
char* write_json_string(char* p, std::string_view s) noexcept {
  // JSON text must be valid UTF-8 (RFC 8259), and a key read from a file
  // is any bytes: each maximal invalid subpart (utf8_step) becomes one
  // U+FFFD, written as an escape so the output stays ASCII-safe there.
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* in = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  auto put = [&p](std::string_view text) {
    std::memcpy(p, text.data(), text.size());
    p += text.size();
  };
  *p++ = '"';
  std::size_t i = 0;
  while (i < n) {
    // The common case, printable ASCII, is found 8 bytes at a time and
    // copied in one go.
    const std::size_t run = i;
    while (i + 8 <= n && plain8(in + i)) i += 8;
    while (i < n && plain(in[i])) ++i;
    std::memcpy(p, s.data() + run, i - run);
    p += i - run;
    if (i == n) break;
    const unsigned char c = in[i];
    if (c >= 0x80) {
      const Utf8Step step = utf8_step(in + i, n - i);
      if (step.valid) {
        std::memcpy(p, s.data() + i, step.length);
        p += step.length;
      } else {
        put("\\ufffd");
      }
      i += step.length;
      continue;
    }
    switch (c) {
      case '"': put("\\\""); break;
      case '\\': put("\\\\"); break;
      case '\n': put("\\n"); break;
      case '\r': put("\\r"); break;
      case '\t': put("\\t"); break;
      case '\b': put("\\b"); break;
      case '\f': put("\\f"); break;
      default:  // the other control characters
        put("\\u00");
        *p++ = kHex[c >> 4];
        *p++ = kHex[c & 15];
    }
    ++i;
  }
  *p++ = '"';
  return p;
}

// The most bytes a number takes (to_chars' longest double, 24, or a
// 64-bit integer, 20), with a separator before it.
constexpr std::size_t kMaxNumberBytes = 1 + 32;

// A value's separator at p, when it takes one: the ',' is written either
// way (its room is made) and overwritten by the value when it takes none.
inline char* after_separator(char* p, bool comma) noexcept {
  *p = ',';
  return p + comma;
}

template <typename Int>
void append_integer(std::string& out, bool comma, Int n) {
  append_at_most(out, kMaxNumberBytes, [n, comma](char* p) {
    p = after_separator(p, comma);
    return std::to_chars(p, p + kMaxNumberBytes - 1, n).ptr;
  });
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  append_at_most(out, max_literal_bytes(s.size()), [s](char* p) { return write_json_string(p, s); });
}

bool JsonWriter::needs_comma() noexcept {
  if (after_key_) {
    after_key_ = false;
    return false;
  }
  if (first_.empty()) return false;
  const bool comma = !first_.back();
  first_.back() = false;
  return comma;
}

void JsonWriter::separate() {
  if (needs_comma()) out_ += ',';
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_ += '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  separate();
  out_ += '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view k) {
  const bool comma = needs_comma();
  append_at_most(out_, 2 + max_literal_bytes(k.size()), [k, comma](char* p) {
    p = write_json_string(after_separator(p, comma), k);
    *p++ = ':';
    return p;
  });
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view s) {
  const bool comma = needs_comma();
  append_at_most(out_, 1 + max_literal_bytes(s.size()), [s, comma](char* p) { return write_json_string(after_separator(p, comma), s); });
  return *this;
}
JsonWriter& JsonWriter::value(double d) {
  const bool comma = needs_comma();
  const auto bits = std::bit_cast<std::uint64_t>(d);
  append_at_most(out_, kMaxNumberBytes, [this, d, bits, comma](char* p) {
    p = after_separator(p, comma);
    if (memo_size_ != 0 && bits == memo_bits_) {
      std::memcpy(p, memo_, memo_size_);
      return p + memo_size_;
    }
    char* end;
    if (!std::isfinite(d)) {
      std::memcpy(p, "null", 4);
      end = p + 4;
    } else {
      // Integral values below 2^53 print without a fraction (counts); others
      // in their shortest form that reads back exactly. From 2^53 on always
      // with an exponent: the shortest form of 2.18e20 is 21 digits with no
      // point, an integer past 64 bits that strict parsers (simdjson among
      // them, so ebb itself) refuse: a namespace stored with such a
      // hot_key_threshold could not be read back at restart.
      char* const limit = p + sizeof memo_;
      const double magnitude = std::fabs(d);
      end = magnitude >= 9007199254740992.0 ? std::to_chars(p, limit, d, std::chars_format::scientific).ptr
            : d == std::floor(d)            ? std::to_chars(p, limit, static_cast<std::int64_t>(d)).ptr
                                            : std::to_chars(p, limit, d).ptr;
    }
    memo_bits_ = bits;
    memo_size_ = static_cast<std::uint8_t>(end - p);
    std::memcpy(memo_, p, memo_size_);
    return end;
  });
  return *this;
}
JsonWriter& JsonWriter::value(std::uint64_t n) {
  append_integer(out_, needs_comma(), n);
  return *this;
}
JsonWriter& JsonWriter::value(std::int64_t n) {
  append_integer(out_, needs_comma(), n);
  return *this;
}
JsonWriter& JsonWriter::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

}  // namespace ebb::io
