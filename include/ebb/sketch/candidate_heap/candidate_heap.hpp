#pragma once
// The CMS-fed candidate heap (seeds 002/004, Cormode & Muthukrishnan): keep
// the m items with the highest Count-Min estimate.
//
// A newcomer enters with its CMS estimate (its whole history), not min + 1,
// so counts stay tight. Per candidate:
// - upper bound: the CMS estimate at its last event (a CMS never
//   under-counts, and the item's true count has not changed since);
// - lower bound: the weight it received since it entered (exact).
// The heap minimum only grows once the heap is full, so an item outside the
// heap has true count <= its last estimate <= threshold(): every item with
// true count above threshold() is a candidate, deterministically.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/sketch/common/counted_item.hpp"
#include "ebb/sketch/common/keyed_min_heap.hpp"

namespace ebb {

class CountMin;

class CandidateHeap {
 public:
  explicit CandidateHeap(std::uint32_t capacity) : heap_(capacity) {}

  std::uint32_t capacity() const noexcept { return heap_.capacity(); }
  std::uint32_t size() const noexcept { return heap_.size(); }
  // The candidates as held: key, hash, value = upper bound (CMS estimate at
  // the last event), aux = weight since entry (lower bound). For callers
  // that combine several heaps (window buckets) without re-hashing keys.
  std::span<const KeyedMinHeap::Entry> entries() const noexcept { return heap_.entries(); }

  // One event of `weight` for the key, whose CMS estimate after the event's
  // own CMS update is `estimate`.
  void offer(std::string_view key, std::uint64_t hash, double weight, double estimate) {
    // A held key's CMS estimate is never below its cached value (cells only
    // grow, and rebases scale both alike), which is >= the minimum. So below
    // the minimum the key is not held and cannot enter: nothing to do. On a
    // Zipf stream that is many events (a third on bench/compare_top.sh's),
    // so this test is inline.
    if (heap_.full() && estimate < heap_.min().value) return;
    offer_candidate(key, hash, weight, estimate);
  }

  // offer() for n events in turn (columns: keys, hashes, weights, each
  // event's estimate after its own CMS update). An event whose estimate is
  // below the admission floor at the start is below the minimum now (which
  // only grows): offer() would do nothing. Leaving those out without a
  // branch each (on a Zipf stream which events those are is a coin toss)
  // and prefetching the lookups of the others, in turn, is what makes the
  // heap cheap. `scratch` has room for n indices.
  void offer_batch(const std::string_view* keys, const std::uint64_t* hashes, const double* weights, const double* estimates,
                   std::size_t n, std::uint32_t* scratch) {
    const double floor = admission_floor();
    std::size_t m = 0;
    for (std::size_t i = 0; i < n; ++i) {
      scratch[m] = static_cast<std::uint32_t>(i);
      m += estimates[i] >= floor;
    }
    constexpr std::size_t kProbeAhead = 16, kEntryAhead = 8;
    for (std::size_t j = 0; j < std::min(m, kProbeAhead); ++j) prefetch_probe(hashes[scratch[j]]);
    for (std::size_t j = 0; j < m; ++j) {
      if (j + kProbeAhead < m) prefetch_probe(hashes[scratch[j + kProbeAhead]]);
      if (j + kEntryAhead < m) {
        prefetch_entry(hashes[scratch[j + kEntryAhead]]);
        prefetch_hint(keys[scratch[j + kEntryAhead]].data());  // find() compares the key
      }
      const std::size_t i = scratch[j];
      offer(keys[i], hashes[i], weights[i], estimates[i]);
    }
  }

  // offer() does nothing for an estimate below this: when the heap is full,
  // its minimum (which only grows until a rescale), else -infinity. A batch
  // can leave out such events without a branch each.
  double admission_floor() const noexcept { return heap_.full() ? heap_.min().value : -std::numeric_limits<double>::infinity(); }
  // Cache hints for the lookups offer() will make, some events ahead
  // (KeyedMinHeap::prefetch_probe, prefetch_entry).
  void prefetch_probe(std::uint64_t hash) const noexcept { heap_.prefetch_probe(hash); }
  void prefetch_entry(std::uint64_t hash) const noexcept { heap_.prefetch_entry(hash); }

  std::optional<CountedItem> find(std::string_view key, std::uint64_t hash) const;
  double threshold() const noexcept;
  std::vector<CountedItem> top(std::size_t k) const;

  void scale(double factor) noexcept;
  // Empty again, at the same capacity, keeping its buffers.
  void clear() noexcept {
    heap_.clear();
    floor_ = 0;
  }
  // Union of both candidate sets, for a heap whose sketch becomes the sum of
  // both sides' sketches: call it before that sum is taken. Each upper
  // bound is the sum of the sides' bounds (the value where a side holds the
  // item, else the tighter of its threshold() and its sketch's estimate);
  // lower bounds add; the capacity() best stay.
  void merge(const CandidateHeap& other, const CountMin& mine_sketch, const CountMin& other_sketch);

  std::size_t memory_bytes() const noexcept { return heap_.memory_bytes() + sizeof(*this) - sizeof(heap_); }
  std::string serialize() const;
  void serialize_into(BinaryWriter& w) const;  // the same bytes, appended in place
  // With `capacity`, a blob of another capacity is refused before anything is allocated.
  static CandidateHeap deserialize(std::string_view blob, std::optional<std::uint32_t> capacity = std::nullopt);

 private:
  void offer_candidate(std::string_view key, std::uint64_t hash, double weight, double estimate);

  KeyedMinHeap heap_;
  double floor_ = 0;  // bound on non-candidates inherited from merges
};

}  // namespace ebb
