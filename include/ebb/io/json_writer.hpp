#pragma once
// A small streaming JSON writer: correct escaping, shortest round-trip
// numbers, no DOM. Shared by the CLI's --json output and the server.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::io {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);  // non-finite values are written as null
  JsonWriter& value(std::uint64_t n);
  JsonWriter& value(std::int64_t n);
  JsonWriter& value(int n) { return value(static_cast<std::int64_t>(n)); }
  JsonWriter& value(std::uint32_t n) { return value(static_cast<std::uint64_t>(n)); }
  JsonWriter& value(bool b);
  JsonWriter& null();

  const std::string& str() const noexcept { return out_; }
  std::string take() { return std::move(out_); }

 // Room for n bytes up front, for a caller that knows about how long its
  // text will be (one allocation instead of a doubling series).
  void reserve(std::size_t n) { out_.reserve(n); }

 private:
  // Whether the next value or key takes a ',' before it (and notes that
  // the open container is no longer empty).
  bool needs_comma() noexcept;
  void separate();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool after_key_ = false;
  // The last number written, as text: an answer's item often has the same
  // count three times (estimate and both bounds, for a key counted
  // exactly), and the shortest round-trip form takes ~30 ns to find.
  std::uint64_t memo_bits_ = 0;
  std::uint8_t memo_size_ = 0;  // 0: none yet
  char memo_[32];
};

// Appends s to out as a JSON string literal. Valid UTF-8 is copied as it
// is; each maximal invalid subpart (io/utf8.hpp) becomes \ufffd (U+FFFD),
// so whatever bytes s holds, the output is valid JSON.
void append_json_string(std::string& out, std::string_view s);

}  // namespace ebb::io
