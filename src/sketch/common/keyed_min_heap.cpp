#include "ebb/sketch/common/keyed_min_heap.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/core/indexed_heap.hpp"
#include "ebb/core/string_bytes.hpp"

namespace ebb {
namespace {

// Report order of entries: largest value first, ties by key (deterministic).
bool ranks_higher(const KeyedMinHeap::Entry& a, const KeyedMinHeap::Entry& b) noexcept {
  return a.value != b.value ? a.value > b.value : a.key < b.key;
}

}  // namespace

std::size_t KeyedMinHeap::reserved_bytes(std::uint32_t capacity, std::uint32_t table_factor) noexcept {
  return sizeof(KeyedMinHeap) + std::size_t{capacity} * (sizeof(Entry) + 2 * sizeof(std::uint32_t)) +
         std::bit_ceil(std::max<std::uint64_t>(8, std::uint64_t{capacity} * std::max<std::uint32_t>(2, table_factor))) * sizeof(std::uint64_t);
}

KeyedMinHeap::KeyedMinHeap(std::uint32_t capacity, std::uint32_t table_factor) : capacity_(capacity) {
  if (capacity < 1 || capacity > kMaxCapacity) {
    throw InvalidArgument("summary capacity must be in [1, " + std::to_string(kMaxCapacity) + "] (got " +
                          std::to_string(capacity) + ")");
  }
  slots_.reserve(capacity);
  heap_.reserve(capacity);
  pos_.reserve(capacity);
  // Load factor <= 1/table_factor keeps linear-probing runs short.
  table_.assign(std::bit_ceil(std::max<std::uint64_t>(8, std::uint64_t{capacity} * std::max<std::uint32_t>(2, table_factor))), 0);
  table_mask_ = table_.size() - 1;
}

std::uint32_t KeyedMinHeap::insert(std::string_view key, std::uint64_t hash, double value, double aux) {
  const auto slot = size();
  slots_.push_back(Entry{std::string(key), hash, value, aux});
  heap_.push_back(0);
  pos_.push_back(0);
  place(slot, slot);
  sift_up(slot);
  table_insert(hash, slot);
  return slot;
}

std::uint32_t KeyedMinHeap::replace_min(std::string_view key, std::uint64_t hash, double value, double aux) {
  const std::uint32_t slot = heap_[0];
  table_erase(slot);
  Entry& e = slots_[slot];
  e.key.assign(key);
  e.hash = hash;
  e.value = value;
  e.aux = aux;
  table_insert(hash, slot);
  sift_down(0);
  return slot;
}

std::pair<std::uint32_t, std::uint32_t> KeyedMinHeap::pop_min() {
  const std::uint32_t freed = heap_[0];
  const std::uint32_t last = size() - 1;
  // Out of the heap order first (entries still in place for the compares).
  const std::uint32_t tail = heap_.back();
  heap_.pop_back();
  if (tail != freed) {
    place(0, tail);
    heap_sift_down(std::span<const std::uint32_t>(heap_.data(), heap_.size()), 0,
                   [this](std::uint32_t a, std::uint32_t b) { return less(a, b); },
                   [this](std::size_t at, std::uint32_t slot) { place(static_cast<std::uint32_t>(at), slot); });
  }
  // Then the last slot moves into the freed one.
  table_erase(freed);
  // The freed key's bytes go now: a short key moved in would be copied into
  // its buffer, which would then outlive it.
  std::string().swap(slots_[freed].key);
  if (freed != last) {
    table_erase(last);
    slots_[freed] = std::move(slots_[last]);
    table_insert(slots_[freed].hash, freed);
    place(pos_[last], freed);
  }
  slots_.pop_back();
  pos_.pop_back();
  return {freed, last};
}

void KeyedMinHeap::scale(double factor) noexcept {
  for (auto& e : slots_) {
    e.value *= factor;
    e.aux *= factor;
  }
}

void KeyedMinHeap::clear() noexcept {
  slots_.clear();
  heap_.clear();
  pos_.clear();
  std::fill(table_.begin(), table_.end(), 0);
}

std::size_t KeyedMinHeap::memory_bytes() const noexcept {
  std::size_t bytes = sizeof(*this) + slots_.capacity() * sizeof(Entry) +
                      (heap_.capacity() + pos_.capacity()) * sizeof(std::uint32_t) + table_.capacity() * sizeof(std::uint64_t);
  for (const auto& e : slots_) bytes += heap_bytes(e.key);
  return bytes;
}

std::vector<const KeyedMinHeap::Entry*> KeyedMinHeap::largest(std::size_t k) const {
  // Selected on a compact copy of (value, slot), the key read only to break
  // a tie: cheaper than a partial sort through pointers into the 56-byte
  // entries (an uncached GET /top-k k=100: 61 -> 54 us of server CPU).
  struct Ranked {
    double value;
    std::uint32_t slot;
  };
  std::vector<Ranked> order;
  order.reserve(slots_.size());
  for (std::uint32_t i = 0; i < slots_.size(); ++i) order.push_back({slots_[i].value, i});
  const auto before = [this](const Ranked& a, const Ranked& b) {
    return a.value != b.value ? a.value > b.value : ranks_higher(slots_[a.slot], slots_[b.slot]);
  };
  const std::size_t n = std::min(k, order.size());
  if (n < order.size()) std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(), before);
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), before);
  std::vector<const Entry*> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(&slots_[order[i].slot]);
  return out;
}

void KeyedMinHeap::sift_up(std::uint32_t i) noexcept {
  heap_sift_up(heap_, i, [this](std::uint32_t a, std::uint32_t b) { return less(a, b); },
               [this](std::size_t at, std::uint32_t slot) { place(static_cast<std::uint32_t>(at), slot); });
}

void KeyedMinHeap::sift_down(std::uint32_t i) noexcept {
  heap_sift_down(std::span<const std::uint32_t>(heap_.data(), size()), i, [this](std::uint32_t a, std::uint32_t b) { return less(a, b); },
                 [this](std::size_t at, std::uint32_t slot) { place(static_cast<std::uint32_t>(at), slot); });
}

void KeyedMinHeap::table_insert(std::uint64_t hash, std::uint32_t slot) noexcept {
  std::uint64_t i = hash & table_mask_;
  while (table_[i] != 0) i = (i + 1) & table_mask_;
  table_[i] = table_entry(hash, slot);
}

void KeyedMinHeap::table_erase(std::uint32_t slot) noexcept {
  std::uint64_t i = slots_[slot].hash & table_mask_;
  while (table_slot(table_[i]) != slot || table_[i] == 0) i = (i + 1) & table_mask_;
  // Backward-shift deletion: pull later members of the probe run into the
  // hole unless their home position lies cyclically in (hole, j].
  for (std::uint64_t j = (i + 1) & table_mask_; table_[j] != 0; j = (j + 1) & table_mask_) {
    const std::uint64_t home = slots_[table_slot(table_[j])].hash & table_mask_;
    const bool stays = (i < j) ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      table_[i] = table_[j];
      i = j;
    }
  }
  table_[i] = 0;
}

}  // namespace ebb

namespace ebb {

KeyedMinHeap KeyedMinHeap::from_entries(std::uint32_t capacity, std::vector<Entry> entries) {
  if (entries.size() > capacity) {
    std::nth_element(entries.begin(), entries.begin() + capacity, entries.end(), ranks_higher);
    entries.resize(capacity);
  }
  KeyedMinHeap heap(capacity);
  for (auto& e : entries) heap.insert(e.key, e.hash, e.value, e.aux);
  return heap;
}

void KeyedMinHeap::write_to(BinaryWriter& w) const {
  w.put<std::uint32_t>(capacity_);
  w.put<std::uint32_t>(size());
  // In heap order: re-inserting a valid heap in array order moves nothing,
  // so a restored heap has the very same arrangement, evicts the same
  // entries on ties, and serialises to the same bytes.
  for (const std::uint32_t slot : heap_) {
    const Entry& e = slots_[slot];
    w.put_string(e.key);
    w.put<double>(e.value);
    w.put<double>(e.aux);
  }
}

KeyedMinHeap KeyedMinHeap::read_from(BinaryReader& r, std::optional<std::uint32_t> expected_capacity, std::uint32_t table_factor) {
  const auto capacity = r.get<std::uint32_t>();
  const auto size = r.get<std::uint32_t>();
  if (capacity < 1 || capacity > kMaxCapacity) r.fail("bad summary capacity " + std::to_string(capacity));
  if (expected_capacity && capacity != *expected_capacity) {
    r.fail("summary capacity " + std::to_string(capacity) + " differs from the configuration's " + std::to_string(*expected_capacity));
  }
  if (size > capacity) r.fail("summary holds more entries than its capacity");
  KeyedMinHeap heap(capacity, table_factor);
  for (std::uint32_t i = 0; i < size; ++i) {
    std::string key = r.get_string(std::uint32_t{1} << 24);
    const double value = r.get<double>();
    const double aux = r.get<double>();
    if (!std::isfinite(value) || !std::isfinite(aux) || value < 0 || aux < 0) r.fail("bad count for an entry");
    const std::uint64_t hash = hash_key(key);
    if (heap.find(key, hash) != kNone) r.fail("duplicate key in summary");
    heap.insert(key, hash, value, aux);
  }
  return heap;
}

}  // namespace ebb
