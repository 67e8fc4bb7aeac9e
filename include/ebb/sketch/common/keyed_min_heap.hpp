#pragma once
// A fixed-capacity min-heap of keyed entries with O(1) lookup by key: the
// storage both top-K summaries share.
//
// Keys live in slots; an open-addressing table (linear probing, backward-
// shift deletion) maps a key's hash to its slot and full keys are compared,
// so two keys can never share an entry (RedisBloom #330 reported duplicates
// from a heap searched by linear scan). Values only ever grow while an entry
// is held, so raise() is a sift-down; the minimum is evicted by
// replace_min(). All values share one coordinate system, so scale() keeps
// the heap order.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/string_bytes.hpp"

namespace ebb {

// Equality of a held key and a candidate, inline: keys are mostly a few
// tens of bytes, where a call to memcmp costs more than the comparison.
// Word-wide throughout, the last word overlapping the one before, so no
// branch depends on how many bytes are left.
inline bool same_key(const std::string& held, std::string_view key) noexcept {
  const std::size_t n = key.size();
  if (held.size() != n) return false;
  const char* p = held.data();
  const char* q = key.data();
  auto word = [](const char* at) {
    std::uint64_t w;
    std::memcpy(&w, at, 8);
    return w;
  };
  auto half = [](const char* at) {
    std::uint32_t w;
    std::memcpy(&w, at, 4);
    return w;
  };
  if (n >= 8) {
    std::uint64_t diff = word(p + n - 8) ^ word(q + n - 8);
    for (std::size_t i = 0; i + 8 < n; i += 8) diff |= word(p + i) ^ word(q + i);
    return diff == 0;
  }
  if (n >= 4) return ((half(p) ^ half(q)) | (half(p + n - 4) ^ half(q + n - 4))) == 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != q[i]) return false;
  }
  return true;
}

// A prefetch the compiler must keep (GCC 12 drops __builtin_prefetch from
// some loops as dead code; see count_min.cpp).
inline void prefetch_hint(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 3);
#endif
}

class KeyedMinHeap {
 public:
  struct Entry {
    std::string key;
    std::uint64_t hash = 0;
    double value = 0;  // the heap's priority
    double aux = 0;    // a second per-entry figure the owner keeps (error, exact count since entry)
  };
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr std::uint32_t kMaxCapacity = 1u << 24;

  // The key table has table_factor cells a slot (rounded up to a power of
  // two): 2 keeps probe runs short; a summary that looks up every event,
  // most of them absent keys (AugmentedHeap), takes 4, whose shorter runs
  // for absent keys were worth 8% of its ingest at 128 KiB.
  explicit KeyedMinHeap(std::uint32_t capacity, std::uint32_t table_factor = 2);

  std::uint32_t capacity() const noexcept { return capacity_; }
  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(slots_.size()); }
  bool full() const noexcept { return size() == capacity_; }
  bool empty() const noexcept { return slots_.empty(); }

  // Slot of the key, or kNone. Inline: it runs for most events of a skewed
  // stream.
  std::uint32_t find(std::string_view key, std::uint64_t hash) const noexcept {
    const std::uint64_t fingerprint = hash & 0xffffffff00000000ULL;
    for (std::uint64_t i = hash & table_mask_;; i = (i + 1) & table_mask_) {
      const std::uint64_t v = table_[i];
      if (v == 0) return kNone;
      if ((v & 0xffffffff00000000ULL) != fingerprint) continue;
      const Entry& e = slots_[table_slot(v)];
      if (e.hash == hash && same_key(e.key, key)) return table_slot(v);
    }
  }
  // Cache hints for a caller that will find() a batch of keys in turn: the
  // table line a key's probe starts at, some events ahead; then, once that
  // line is in cache, the entry its first table cell names (the one find()
  // compares first). Neither changes anything.
  void prefetch_probe(std::uint64_t hash) const noexcept { prefetch_hint(&table_[hash & table_mask_]); }
  void prefetch_entry(std::uint64_t hash) const noexcept {
    const std::uint32_t slot = first_slot(hash);
    if (slot == kNone) return;  // an empty cell: find() compares no entry
    const char* e = reinterpret_cast<const char*>(slots_.data() + slot);
    prefetch_hint(e);
    prefetch_hint(e + sizeof(Entry) - 1);  // an entry may straddle two lines
  }
  // Then, once that entry is in cache, the bytes of its key when they live
  // outside it (past std::string's inline capacity).
  void prefetch_key(std::uint64_t hash) const noexcept {
    const std::uint32_t slot = first_slot(hash);
    if (slot == kNone) return;
    const std::string& key = slots_[slot].key;
    if (key.capacity() > kInlineStringChars) prefetch_hint(key.data());
  }
  // The slot the first table cell of a key's probe names (the one find()
  // compares first), or kNone: for an owner's own per-slot hints.
  std::uint32_t first_slot(std::uint64_t hash) const noexcept {
    const std::uint64_t v = table_[hash & table_mask_];
    return v == 0 ? kNone : table_slot(v);
  }
  const Entry& at(std::uint32_t slot) const noexcept { return slots_[slot]; }
  const Entry& min() const noexcept { return slots_[heap_[0]]; }
  std::span<const Entry> entries() const noexcept { return slots_; }
  // Slot ids in heap order: the order write_to() writes entries in, so
  // read_from() gives the i-th of them slot i (owners that keep a figure
  // per slot beside the heap serialise it in this order).
  std::span<const std::uint32_t> heap_order() const noexcept { return {heap_.data(), heap_.size()}; }

  // Requires !full() and the key absent.
  std::uint32_t insert(std::string_view key, std::uint64_t hash, double value, double aux);
  // Requires full() and the key absent: evicts the minimum.
  std::uint32_t replace_min(std::string_view key, std::uint64_t hash, double value, double aux);
  // Requires !empty(): removes the minimum. Slots stay dense: the entry of
  // the last slot moves into the freed one. Returns {freed, moved from}
  // (equal when the minimum held the last slot), so an owner keeping a
  // figure per slot can move it too.
  std::pair<std::uint32_t, std::uint32_t> pop_min();
  // Sets a held entry's value (>= its current value) and aux.
  // Inline: a hot item of a skewed stream sits at a leaf (large values are
  // at the bottom of a min-heap), where there is nothing to sift.
  void raise(std::uint32_t slot, double value, double aux) noexcept {
    slots_[slot].value = value;
    slots_[slot].aux = aux;
    const std::uint32_t i = pos_[slot];
    if (2 * i + 1 < size()) sift_down(i);
  }
  void scale(double factor) noexcept;
  void clear() noexcept;

  std::size_t memory_bytes() const noexcept;
  // What a heap of this capacity reserves up front, before any key bytes.
  static std::size_t reserved_bytes(std::uint32_t capacity, std::uint32_t table_factor = 2) noexcept;

  // Bound on the value of any key not held, for summaries whose held values
  // only grow and whose minimum is only ever replaced by a larger value:
  // once full, the minimum; `floor` carries what merges established.
  double bound_outside(double floor) const noexcept { return full() ? std::max(floor, min().value) : floor; }

  // The k entries with the largest values, largest first (ties by key), as
  // pointers: a query selects before it copies any key.
  std::vector<const Entry*> largest(std::size_t k) const;

  // Builds a heap of `capacity` from entries, keeping the largest values
  // when there are more (merges). Entries must have distinct keys.
  static KeyedMinHeap from_entries(std::uint32_t capacity, std::vector<Entry> entries);

  // Serialisation of the entries (hashes are recomputed on read, so a blob
  // cannot smuggle in an entry the table would never find). A reader that
  // knows the capacity it needs gives it, and another one is refused before
  // the table is allocated for it (2^24 slots are ~1.3 GiB).
  void write_to(BinaryWriter& w) const;
  static KeyedMinHeap read_from(BinaryReader& r, std::optional<std::uint32_t> expected_capacity = std::nullopt,
                                std::uint32_t table_factor = 2);

 private:
  bool less(std::uint32_t a, std::uint32_t b) const noexcept { return slots_[a].value < slots_[b].value; }
  void sift_up(std::uint32_t i) noexcept;
  void sift_down(std::uint32_t i) noexcept;
  void place(std::uint32_t heap_index, std::uint32_t slot) noexcept {
    heap_[heap_index] = slot;
    pos_[slot] = heap_index;
  }
  void table_insert(std::uint64_t hash, std::uint32_t slot) noexcept;
  void table_erase(std::uint32_t slot) noexcept;

  std::uint32_t capacity_;
  std::vector<Entry> slots_;
  std::vector<std::uint32_t> heap_;   // slot ids, min-heap by value
  std::vector<std::uint32_t> pos_;    // slot id -> index in heap_
  // Open addressing: (upper 32 bits of the key's hash) << 32 | (slot id + 1);
  // 0 = empty. A probe compares the fingerprint before it touches a slot.
  std::vector<std::uint64_t> table_;
  static std::uint64_t table_entry(std::uint64_t hash, std::uint32_t slot) noexcept {
    return (hash & 0xffffffff00000000ULL) | (std::uint64_t{slot} + 1);
  }
  static std::uint32_t table_slot(std::uint64_t entry) noexcept { return static_cast<std::uint32_t>(entry) - 1; }
  std::uint64_t table_mask_;
};

}  // namespace ebb
