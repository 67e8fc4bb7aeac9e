#include "ebb/io/json_writer.hpp"

#include <charconv>
#include <cmath>

namespace ebb::io {

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (unsigned char c : s) {
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
