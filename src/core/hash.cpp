#include "ebb/core/hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ebb {

std::uint64_t hash_key(std::string_view key) noexcept {
  return XXH3_64bits_withSeed(key.data(), key.size(), kHashSeed);
}

}  // namespace ebb
