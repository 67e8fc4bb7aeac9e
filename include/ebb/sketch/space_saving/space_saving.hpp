#pragma once
// Weighted Space-Saving (Metwally, Agrawal, El Abbadi 2005) on a keyed
// min-heap, so weights and forward-decay coordinates work (the unit-increment
// Stream-Summary does not).
//
// m monitored items. A new item replaces the minimum and inherits its count
// as over-estimation. Invariants, checked by the property tests:
// - every monitored item: count - error <= true <= count;
// - every unmonitored item: true <= threshold() (the minimum when full, and
//   a floor carried over from merges), so every item with true count above
//   threshold() is reported; threshold() <= total / m.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/sketch/common/counted_item.hpp"
#include "ebb/sketch/common/keyed_min_heap.hpp"

namespace ebb {

class SpaceSaving {
 public:
  explicit SpaceSaving(std::uint32_t capacity) : heap_(capacity) {}

  std::uint32_t capacity() const noexcept { return heap_.capacity(); }
  std::uint32_t size() const noexcept { return heap_.size(); }
  double total() const noexcept { return total_; }

  void update(std::string_view key, std::uint64_t hash, double weight);

  // Bounds for a monitored item, nullopt for an unmonitored one (whose true
  // count is then in [0, threshold()]).
  std::optional<CountedItem> find(std::string_view key, std::uint64_t hash) const;
  double threshold() const noexcept;
  // The k largest, in report order.
  std::vector<CountedItem> top(std::size_t k) const;

  void scale(double factor) noexcept;
  // Mergeable summaries (Agarwal et al. 2012): an item missing from one side
  // counts that side's threshold as both count and error; the largest
  // capacity() items are kept.
  void merge(const SpaceSaving& other);

  std::size_t memory_bytes() const noexcept { return heap_.memory_bytes() + sizeof(*this) - sizeof(heap_); }
  std::string serialize() const;
  // With `capacity`, a blob of another capacity is refused before anything is allocated.
  static SpaceSaving deserialize(std::string_view blob, std::optional<std::uint32_t> capacity = std::nullopt);

 private:
  CountedItem report(const KeyedMinHeap::Entry& e) const { return {e.key, e.value, e.value - e.aux, e.value}; }
  KeyedMinHeap heap_;
  double total_ = 0;
  double floor_ = 0;  // bound on unmonitored items inherited from merges
};

}  // namespace ebb
