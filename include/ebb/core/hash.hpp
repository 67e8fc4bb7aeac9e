#pragma once
// One 64-bit XXH3 hash per key. Every structure derives what it needs from
// it (CMS row indices, summary table slots), so a key is hashed once per
// event whatever the number of views. The seed is fixed: the same events
// always give the same state (replays and replicas agree).
#include <cstdint>
#include <string>
#include <string_view>

namespace ebb {

inline constexpr std::uint64_t kHashSeed = 0x65626221'5eed0001ULL;

std::uint64_t hash_key(std::string_view key) noexcept;

// hash_key() as 16 lower-case hex digits: a key's fixed-width stand-in
// where the key itself would not do (metric labels: raw keys would make a
// series per key).
std::string key_hash_hex(std::string_view key);

// A cheap bijective mixer (splitmix64 finaliser) to derive a second,
// independent-looking hash from the first.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace ebb
