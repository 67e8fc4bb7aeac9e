#pragma once
// Shared by the fuzz targets: reading the fuzzer's bytes, failing loudly
// on a broken invariant (abort: libFuzzer saves the input), and making
// checksummed blobs pass their checksums so the fuzzer reaches the parsers
// behind them.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "ebb/core/binary_io.hpp"

namespace ebb::fuzz {

// Reports a broken invariant and aborts (a crash, as far as libFuzzer is concerned).
[[noreturn]] inline void fail(const char* file, int line, const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "%s:%d: invariant broken: %s", file, line, what);
  if (!detail.empty()) std::fprintf(stderr, " (%.*s)", static_cast<int>(std::min<std::size_t>(detail.size(), 400)), detail.data());
  std::fprintf(stderr, "\n");
  std::abort();
}
#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) ::ebb::fuzz::fail(__FILE__, __LINE__, #cond); \
  } while (0)
#define FUZZ_CHECK_MSG(cond, detail) \
  do {                               \
    if (!(cond)) ::ebb::fuzz::fail(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)

// The fuzzer's bytes, read front to back: option bytes first, then the rest.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}
  // The next byte (0 once the input is used up).
  std::uint8_t byte() {
    if (rest_.empty()) return 0;
    const auto b = static_cast<std::uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  // The next byte counted from '0', so that handwritten seeds can spell
  // options as digits ('0' is 0, '9' is 9, ':' is 10 ...).
  std::uint8_t digit() { return static_cast<std::uint8_t>(byte() - '0'); }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

// Every blob envelope found in `s` (core/binary_io.hpp: "EBB\0", u16 kind,
// u16 version, u64 payload length, payload, u64 checksum) whose length fits
// is re-sealed with a correct checksum, innermost first, so the mutations
// the fuzzer makes inside a checkpoint state reach the code that parses its
// payload instead of stopping at the checksum. Kind, version and length are
// left as they are, so those checks are still exercised.
inline void fix_envelopes(std::string& s, std::size_t begin, std::size_t end) {
  constexpr std::size_t kHeader = 16, kTrailer = 8;
  std::size_t p = begin;
  while (p + kHeader + kTrailer <= end) {
    if (std::memcmp(s.data() + p, "EBB\0", 4) != 0) {
      ++p;
      continue;
    }
    std::uint16_t kind, version;
    std::uint64_t length;
    std::memcpy(&kind, s.data() + p + 4, 2);
    std::memcpy(&version, s.data() + p + 6, 2);
    std::memcpy(&length, s.data() + p + 8, 8);
    if (length > end - p - kHeader - kTrailer) {
      ++p;
      continue;
    }
    fix_envelopes(s, p + kHeader, p + kHeader + length);
    const std::string sealed =
        seal_blob(static_cast<BlobKind>(kind), version, std::string_view(s).substr(p + kHeader, length));
    s.replace(p, sealed.size(), sealed);
    p += sealed.size();
  }
}
inline std::string fixed_envelopes(std::string_view in) {
  std::string s(in);
  fix_envelopes(s, 0, s.size());
  return s;
}

}  // namespace ebb::fuzz
