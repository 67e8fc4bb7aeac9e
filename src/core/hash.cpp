#include "ebb/core/hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ebb {

std::uint64_t hash_key(std::string_view key) noexcept {
  return XXH3_64bits_withSeed(key.data(), key.size(), kHashSeed);
}

std::string key_hash_hex(std::string_view key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::uint64_t h = hash_key(key);
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = kDigits[h & 15];
  return out;
}

}  // namespace ebb
