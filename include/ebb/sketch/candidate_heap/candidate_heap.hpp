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
#include <cstdint>
#include <limits>
#include <optional>
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
  // Union of both candidate sets, re-estimated against `merged_sketch` (the
  // sum of both sides' sketches); lower bounds add; the capacity() best stay.
  void merge(const CandidateHeap& other, const CountMin& merged_sketch);

  std::size_t memory_bytes() const noexcept { return heap_.memory_bytes() + sizeof(*this) - sizeof(heap_); }
  std::string serialize() const;
  // With `capacity`, a blob of another capacity is refused before anything is allocated.
  static CandidateHeap deserialize(std::string_view blob, std::optional<std::uint32_t> capacity = std::nullopt);

 private:
  void offer_candidate(std::string_view key, std::uint64_t hash, double weight, double estimate);

  KeyedMinHeap heap_;
  double floor_ = 0;  // bound on non-candidates inherited from merges
};

}  // namespace ebb
