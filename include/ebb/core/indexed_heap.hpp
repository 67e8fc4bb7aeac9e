#pragma once
// The sift steps of a binary min-heap of indices into the caller's own
// storage, where the caller also keeps each index's position (so an entry
// can be found, raised or removed in O(1)): the top-K summaries'
// KeyedMinHeap and exact counting's eviction heap (ExactTable) are both
// such heaps, with their own orders and position tables.
//
// `before(a, b)`: a belongs nearer the root than b. `place(pos, index)`:
// stores index at pos in `heap` and records that position. The sift moves
// the index at `pos`, placing it once at its final position.
#include <cstddef>
#include <cstdint>
#include <span>

namespace ebb {

template <typename Before, typename Place>
void heap_sift_up(std::span<const std::uint32_t> heap, std::size_t pos, Before&& before, Place&& place) noexcept {
  const std::uint32_t moving = heap[pos];
  while (pos > 0) {
    const std::size_t parent = (pos - 1) / 2;
    if (!before(moving, heap[parent])) break;
    place(pos, heap[parent]);
    pos = parent;
  }
  place(pos, moving);
}

template <typename Before, typename Place>
void heap_sift_down(std::span<const std::uint32_t> heap, std::size_t pos, Before&& before, Place&& place) noexcept {
  const std::uint32_t moving = heap[pos];
  const std::size_t n = heap.size();
  for (;;) {
    std::size_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && before(heap[child + 1], heap[child])) ++child;
    if (!before(heap[child], moving)) break;
    place(pos, heap[child]);
    pos = child;
  }
  place(pos, moving);
}

}  // namespace ebb
