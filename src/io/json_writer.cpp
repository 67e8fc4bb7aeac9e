#include "ebb/io/json_writer.hpp"

#include <charconv>
#include <cmath>

namespace ebb::io {

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (Unicode Table 3-7), or
// 0 with `bad` set to the length of its maximal ill-formed prefix (at least
// 1), which is replaced by one U+FFFD as Unicode recommends. Overlongs,
// surrogates (ED A0..BF) and code points past U+10FFFF are ill-formed.
std::size_t utf8_sequence(std::string_view s, std::size_t i, std::size_t& bad) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    bad = 1;  // a continuation byte without a lead, C0, C1, F5..FF
    return 0;
  }
  for (std::size_t k = 1; k < n; ++k) {
    const std::size_t at = i + k;
    const unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
    if (at >= s.size() || byte(at) < min || byte(at) > max) {
      bad = k;
      return 0;
    }
  }
  return n;
}

}  // namespace

// Strings reach here from requests (percent-decoded parameters, paths) and
// files: bytes that are not UTF-8 would make the document invalid JSON, so
// each ill-formed sequence is written as \ufffd (the replacement character).
void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      std::size_t bad = 0;
      const std::size_t n = utf8_sequence(s, i, bad);
      if (n > 0) {
        out.append(s.data() + i, n);
        i += n - 1;
      } else {
        out += "\\ufffd";
        i += bad - 1;
      }
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
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
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
  // Integral values print without a fraction (counts); others round-trip exactly.
  auto res = (d == std::floor(d) && std::fabs(d) < 9007199254740992.0)
                 ? std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(d))
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
