#include "ebb/io/json_writer.hpp"

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

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  // JSON text must be valid UTF-8 (RFC 8259), and a key read from a file
  // is any bytes: each maximal invalid subpart (utf8_step) becomes one
  // U+FFFD, written as an escape so the output stays ASCII-safe there.
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  out += '"';
  std::size_t i = 0;
  while (i < n) {
    // The common case, printable ASCII, is found 8 bytes at a time and
    // copied in one append.
    const std::size_t run = i;
    while (i + 8 <= n && plain8(p + i)) i += 8;
    while (i < n && plain(p[i])) ++i;
    out.append(s.data() + run, i - run);
    if (i == n) break;
    const unsigned char c = p[i];
    if (c >= 0x80) {
      const Utf8Step step = utf8_step(p + i, n - i);
      if (step.valid) {
        out.append(s.data() + i, step.length);
      } else {
        out += "\\ufffd";
      }
      i += step.length;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:  // the other control characters
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
    ++i;
  }
  out += '"';
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
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
  separate();
  append_json_string(out_, k);
  out_ += ':';
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view s) {
  separate();
  append_json_string(out_, s);
  return *this;
}
JsonWriter& JsonWriter::value(double d) {
  separate();
  if (!std::isfinite(d)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  // Integral values below 2^53 print without a fraction (counts); others
  // in their shortest form that reads back exactly. From 2^53 on always
  // with an exponent: the shortest form of 2.18e20 is 21 digits with no
  // point, an integer past 64 bits that strict parsers (simdjson among
  // them, so ebb itself) refuse: a namespace stored with such a
  // hot_key_threshold could not be read back at restart.
  const double magnitude = std::fabs(d);
  auto res = magnitude >= 9007199254740992.0 ? std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific)
             : d == std::floor(d)            ? std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(d))
                                             : std::to_chars(buf, buf + sizeof buf, d);
  out_.append(buf, res.ptr);
  return *this;
}
JsonWriter& JsonWriter::value(std::uint64_t n) {
  separate();
  out_ += std::to_string(n);
  return *this;
}
JsonWriter& JsonWriter::value(std::int64_t n) {
  separate();
  out_ += std::to_string(n);
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
