#include "ebb/sketch/common/keyed_min_heap.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "ebb/core/hash.hpp"

namespace ebb {
namespace {

// Random inserts, raises and evictions against a std::map reference: the
// minimum is always the true minimum, every held key is found, every
// evicted key is gone, and no key is ever held twice.
TEST(KeyedMinHeap, MatchesAReferenceUnderRandomOperations) {
  std::mt19937_64 rng(7);
  KeyedMinHeap heap(64);
  std::map<std::string, double> ref;
  for (int step = 0; step < 50000; ++step) {
    const std::string key = "k" + std::to_string(rng() % 300);
    const auto h = hash_key(key);
    const auto slot = heap.find(key, h);
    ASSERT_EQ(slot != KeyedMinHeap::kNone, ref.contains(key)) << key;
    const double inc = 1 + static_cast<double>(rng() % 100);
    if (slot != KeyedMinHeap::kNone) {
      heap.raise(slot, heap.at(slot).value + inc, 0);
      ref[key] += inc;
    } else if (!heap.full()) {
      heap.insert(key, h, inc, 0);
      ref[key] = inc;
    } else {
      const std::string evicted = heap.min().key;
      const double min_value = heap.min().value;
      double ref_min = 1e300;
      for (const auto& [_, v] : ref) ref_min = std::min(ref_min, v);
      ASSERT_EQ(min_value, ref_min);
      ref.erase(evicted);
      heap.replace_min(key, h, min_value + inc, min_value);
      ref[key] = min_value + inc;
      ASSERT_EQ(heap.find(evicted, hash_key(evicted)), KeyedMinHeap::kNone);
    }
    ASSERT_EQ(heap.size(), ref.size());
  }
  std::set<std::string> seen;
  for (const auto& e : heap.entries()) {
    ASSERT_TRUE(seen.insert(e.key).second) << "duplicate " << e.key;
    ASSERT_EQ(ref.at(e.key), e.value);
  }
}

TEST(KeyedMinHeap, FromEntriesKeepsTheLargest) {
  std::vector<KeyedMinHeap::Entry> entries;
  for (int i = 0; i < 10; ++i) entries.push_back({"k" + std::to_string(i), hash_key("k" + std::to_string(i)), double(i), 0});
  auto heap = KeyedMinHeap::from_entries(4, entries);
  EXPECT_EQ(heap.size(), 4u);
  EXPECT_EQ(heap.min().value, 6);
  EXPECT_NE(heap.find("k9", hash_key("k9")), KeyedMinHeap::kNone);
  EXPECT_EQ(heap.find("k5", hash_key("k5")), KeyedMinHeap::kNone);
}

// Keys compare word-wide with overlapping last words: equal keys of every
// length are equal, and a difference in any one byte, or in the length, is
// seen.
TEST(KeyedMinHeap, SameKeySeesEveryByteAtEveryLength) {
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string held;
    for (std::size_t i = 0; i < n; ++i) held += static_cast<char>('a' + i % 26);
    const std::string copy = held;
    EXPECT_TRUE(same_key(held, copy)) << n;
    for (std::size_t i = 0; i < n; ++i) {
      std::string other = held;
      other[i] = static_cast<char>(other[i] ^ 0x80);
      EXPECT_FALSE(same_key(held, other)) << n << " " << i;
    }
    EXPECT_FALSE(same_key(held, copy + "x")) << n;
    if (n > 0) {
      EXPECT_FALSE(same_key(held, std::string_view(copy).substr(0, n - 1))) << n;
    }
  }
}

}  // namespace
}  // namespace ebb
