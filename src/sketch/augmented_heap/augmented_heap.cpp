#include "ebb/sketch/augmented_heap/augmented_heap.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/core/string_bytes.hpp"
#include "ebb/sketch/candidate_heap/candidate_heap.hpp"
#include "ebb/sketch/count_min/count_min.hpp"

namespace ebb {
namespace {

// Version 2 adds the floor and whether the key budget bound (version 1,
// read: neither).
constexpr std::uint16_t kFormatVersion = 2;

// Every event looks its key up here, a third of them absent on a Zipf
// stream: a sparser key table (a quarter full) keeps those probes short
// (pipeline_bench at 128 KiB: +8%, for 8 bytes a candidate more).
constexpr std::uint32_t kTableFactor = 4;

// Hashes no real key is likely to have, fixed so a restored view probes the
// same cells: their estimates are what the sketch says of keys it never
// counted, i.e. its noise.
constexpr std::size_t kProbes = 31;
constexpr std::array<std::uint64_t, kProbes> make_probes() {
  std::array<std::uint64_t, kProbes> p{};
  for (std::size_t i = 0; i < kProbes; ++i) p[i] = mix64(0x6e6f6973652d7072ULL + i);  // "noise-pr" + i
  return p;
}
constexpr auto kProbeHashes = make_probes();

}  // namespace

std::size_t AugmentedHeap::reserved_bytes(std::uint32_t capacity) noexcept {
  return sizeof(AugmentedHeap) - sizeof(KeyedMinHeap) + KeyedMinHeap::reserved_bytes(capacity, kTableFactor) + std::size_t{capacity} * sizeof(double) +
         kMaxBatch * (sizeof(std::uint64_t) + 2 * sizeof(double) + sizeof(std::uint32_t));
}

AugmentedHeap::AugmentedHeap(std::uint32_t capacity, std::uint64_t key_budget)
    : heap_(capacity, kTableFactor), key_budget_(key_budget) {
  base_.reserve(capacity);
  miss_hashes_.resize(kMaxBatch);
  miss_weights_.resize(kMaxBatch);
  miss_estimates_.resize(kMaxBatch);
  miss_events_.resize(kMaxBatch);
}

void AugmentedHeap::apply(CountMin& sketch, const std::string_view* keys, const std::uint64_t* hashes, const double* weights,
                          std::size_t n) {
  if (n > kMaxBatch) throw InvalidArgument("augmented heap: at most " + std::to_string(kMaxBatch) + " events per apply()");
  // Held keys first, in order, each lookup's table line fetched 16 events
  // ahead. (Fetching the entry and the key ahead as well, as the plain
  // candidate heap does for the fewer events it looks up, cost more than it
  // saved here: heap and keys sit in L2 at these sizes, and it read the
  // table twice. pipeline_bench: 31 -> 33-36 M events/s without it.)
  constexpr std::size_t kProbeAhead = 16, kOfferAhead = 8;
  for (std::size_t i = 0; i < std::min(n, kProbeAhead); ++i) heap_.prefetch_probe(hashes[i]);
  std::size_t misses = 0;
  double absorbed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kProbeAhead < n) heap_.prefetch_probe(hashes[i + kProbeAhead]);
    const auto slot = heap_.find(keys[i], hashes[i]);
    if (slot != KeyedMinHeap::kNone) {
      const auto& e = heap_.at(slot);
      heap_.raise(slot, e.value + weights[i], e.aux + weights[i]);
      absorbed += weights[i];
    } else {
      miss_hashes_[misses] = hashes[i];
      miss_weights_[misses] = weights[i];
      miss_events_[misses] = static_cast<std::uint32_t>(i);
      ++misses;
    }
  }
  absorbed_ += absorbed;
  if (misses == 0) return;
  sketch.update_batch(std::span<const std::uint64_t>(miss_hashes_.data(), misses), std::span<const double>(miss_weights_.data(), misses),
                      std::span<double>(miss_estimates_.data(), misses));
  // Offers: below the minimum at this point (which only grows) an event's
  // key is not held and cannot enter, so only the others are kept, without
  // a branch each (compacted in place).
  const double floor = heap_.full() ? heap_.min().value : -1;
  std::size_t m = 0;
  for (std::size_t j = 0; j < misses; ++j) {
    miss_hashes_[m] = miss_hashes_[j];
    miss_weights_[m] = miss_weights_[j];
    miss_estimates_[m] = miss_estimates_[j];
    miss_events_[m] = miss_events_[j];
    m += miss_estimates_[j] > floor;
  }
  noise_ = -1;
  for (std::size_t j = 0; j < m; ++j) {
    if (j + kOfferAhead < m) heap_.prefetch_probe(miss_hashes_[j + kOfferAhead]);
    offer(sketch, keys[miss_events_[j]], miss_hashes_[j], miss_weights_[j], miss_estimates_[j]);
  }
}

void AugmentedHeap::offer(CountMin& sketch, std::string_view key, std::uint64_t hash, double weight, double estimate) {
  const auto slot = heap_.find(key, hash);
  if (slot != KeyedMinHeap::kNone) {  // came in earlier in this batch
    const auto& e = heap_.at(slot);
    heap_.raise(slot, e.value + weight, e.aux + weight);
    return;
  }
  place(sketch, key, hash, estimate, weight);
}

void AugmentedHeap::admit(CountMin& sketch, std::string_view key, std::uint64_t hash, double lower) {
  if (heap_.find(key, hash) != KeyedMinHeap::kNone) throw std::logic_error("AugmentedHeap::admit: the key is held");
  noise_ = -1;  // the sketch changed since the last probe
  const double upper = sketch.estimate(hash);
  place(sketch, key, hash, upper, std::clamp(lower, 0.0, upper));
}

void AugmentedHeap::place(CountMin& sketch, std::string_view key, std::uint64_t hash, double estimate, double exact) {
  std::uint32_t slot = KeyedMinHeap::kNone;
  const bool room = key_bytes_ + heap_bytes_max(key.size()) <= key_budget_;
  if (!heap_.full() && room) {
    const double before = before_entry(sketch, std::max(0.0, estimate - exact));
    slot = heap_.insert(key, hash, estimate, exact);
    base_.push_back(before);
    key_bytes_ += heap_bytes(heap_.at(slot).key);
  } else if (!heap_.empty() && estimate > heap_.min().value) {
    const double before = before_entry(sketch, std::max(0.0, estimate - exact));
    let_go(sketch, heap_.min());
    slot = heap_.replace_min(key, hash, estimate, exact);
    base_[slot] = before;
    key_bytes_ += heap_bytes(heap_.at(slot).key);
    // A long key may need more than the one it replaced: the minimum
    // leaves until the budget holds (the newcomer too, when it is the minimum).
    while (key_bytes_ > key_budget_ && !heap_.empty()) {
      budget_bound_ = true;
      evict_min(sketch);
    }
  } else {
    // Kept out: its count is at most its estimate. (When full, that is at
    // most the minimum already; here for a heap the key budget holds short.)
    if (!room) budget_bound_ = true;
    floor_ = std::max(floor_, estimate);
  }
}

// What a key leaving the heap owes: its count written back into the sketch,
// the floor raised to it, its key's bytes returned to the budget.
void AugmentedHeap::let_go(CountMin& sketch, const KeyedMinHeap::Entry& out) {
  ++evictions_;
  sketch.raise_to(out.hash, out.value);
  floor_ = std::max(floor_, out.value);
  key_bytes_ -= heap_bytes(out.key);
}

void AugmentedHeap::evict_min(CountMin& sketch) {
  let_go(sketch, heap_.min());
  const auto [freed, moved] = heap_.pop_min();
  base_[freed] = base_[moved];
  base_.pop_back();
}

void AugmentedHeap::count_keys() noexcept {
  key_bytes_ = 0;
  for (const auto& e : heap_.entries()) key_bytes_ += heap_bytes(e.key);
}

double AugmentedHeap::before_entry(const CountMin& sketch, double upper) {
  if (upper <= 0) return 0;
  if (noise_ < 0) {
    std::array<double, kProbes> est;
    for (std::size_t i = 0; i < kProbes; ++i) est[i] = sketch.estimate(kProbeHashes[i]);
    std::nth_element(est.begin(), est.begin() + kProbes / 2, est.end());
    noise_ = est[kProbes / 2];
  }
  return std::clamp(upper - noise_, 0.0, upper);
}

double AugmentedHeap::estimate(std::uint32_t slot) const noexcept {
  const auto& e = heap_.at(slot);
  return std::clamp(e.aux + base_[slot], std::min(e.aux, e.value), e.value);
}

void AugmentedHeap::held_estimates(const std::string_view* keys, const std::uint64_t* hashes, std::size_t n,
                                   std::optional<double>* out) const noexcept {
  // Fetched ahead: the table line, then (reading that line, fetched
  // kProbeAhead - kEntryAhead keys before) the entry and estimate base it
  // names and the asked key's bytes, then (reading that entry) its key's
  // bytes.
  constexpr std::size_t kProbeAhead = 16, kEntryAhead = 8, kKeyAhead = 4;
  auto fetch_entry = [&](std::size_t j) {
    heap_.prefetch_entry(hashes[j]);
    if (!keys[j].empty()) prefetch_hint(keys[j].data());
    if (const auto slot = heap_.first_slot(hashes[j]); slot != KeyedMinHeap::kNone) prefetch_hint(&base_[slot]);
  };
  for (std::size_t i = 0; i < std::min(n, kProbeAhead); ++i) heap_.prefetch_probe(hashes[i]);
  for (std::size_t i = 0; i < std::min(n, kEntryAhead); ++i) fetch_entry(i);
  for (std::size_t i = 0; i < std::min(n, kKeyAhead); ++i) heap_.prefetch_key(hashes[i]);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kProbeAhead < n) heap_.prefetch_probe(hashes[i + kProbeAhead]);
    if (i + kEntryAhead < n) fetch_entry(i + kEntryAhead);
    if (i + kKeyAhead < n) heap_.prefetch_key(hashes[i + kKeyAhead]);
    const auto slot = heap_.find(keys[i], hashes[i]);
    out[i] = slot == KeyedMinHeap::kNone ? std::nullopt : std::optional<double>(estimate(slot));
  }
}

bool AugmentedHeap::held_at_least(double bound, std::size_t max_found, std::vector<HeldScore>& out) const {
  std::size_t found = 0;
  for (std::uint32_t slot = 0; slot < heap_.size(); ++slot) {
    const auto& e = heap_.at(slot);
    if (e.value < bound) continue;  // the estimate is at most the upper bound
    const double score = estimate(slot);
    if (score < bound) continue;
    if (++found > max_found) return false;
    out.push_back({e.key, e.hash, score});
  }
  return true;
}

CountedItem AugmentedHeap::report(std::uint32_t slot) const {
  const auto& e = heap_.at(slot);
  return {e.key, estimate(slot), std::min(e.aux, e.value), e.value};
}

std::optional<CountedItem> AugmentedHeap::find(std::string_view key, std::uint64_t hash) const {
  const auto slot = heap_.find(key, hash);
  if (slot == KeyedMinHeap::kNone) return std::nullopt;
  return report(slot);
}

RankedList AugmentedHeap::top(std::size_t k) const {
  // Selected on a compact copy of (estimate, slot); the key is read only to
  // break a tie.
  struct Ranked {
    double estimate;
    std::uint32_t slot;
  };
  std::vector<Ranked> order;
  order.reserve(heap_.size());
  for (std::uint32_t slot = 0; slot < heap_.size(); ++slot) order.push_back({estimate(slot), slot});
  const auto before = [this](const Ranked& a, const Ranked& b) {
    return a.estimate != b.estimate ? a.estimate > b.estimate : heap_.at(a.slot).key < heap_.at(b.slot).key;
  };
  const std::size_t n = std::min(k, order.size());
  if (n < order.size()) std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(), before);
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), before);
  RankedList list;
  list.items.reserve(n);
  for (std::size_t i = 0; i < n; ++i) list.items.push_back(report(order[i].slot));
  list.unlisted_upper = threshold();
  for (std::size_t i = n; i < order.size(); ++i) list.unlisted_upper = std::max(list.unlisted_upper, heap_.at(order[i].slot).value);
  return list;
}

void AugmentedHeap::scale(double factor) noexcept {
  heap_.scale(factor);
  for (auto& b : base_) b *= factor;
  absorbed_ *= factor;
}

std::size_t AugmentedHeap::memory_bytes() const noexcept {
  return sizeof(*this) - sizeof(heap_) + heap_.memory_bytes() + base_.capacity() * sizeof(double) +
         miss_hashes_.capacity() * sizeof(std::uint64_t) + (miss_weights_.capacity() + miss_estimates_.capacity()) * sizeof(double) +
         miss_events_.capacity() * sizeof(std::uint32_t);
}

std::string AugmentedHeap::serialize() const {
  return written([this](BinaryWriter& w) { serialize_into(w); });
}

void AugmentedHeap::serialize_into(BinaryWriter& w) const {
  const auto blob = w.begin_blob(BlobKind::augmented_heap, kFormatVersion);
  w.put<double>(absorbed_);
  w.put<double>(floor_);
  w.put<std::uint8_t>(budget_bound_ ? 1 : 0);
  heap_.write_to(w);
  for (const std::uint32_t slot : heap_.heap_order()) w.put<double>(base_[slot]);
  w.end_blob(blob);
}

AugmentedHeap AugmentedHeap::deserialize(std::string_view blob, std::optional<std::uint32_t> capacity, std::uint64_t key_budget) {
  auto opened = open_blob(blob, BlobKind::augmented_heap, kFormatVersion);
  BinaryReader r(opened.payload, "augmented heap");
  const double absorbed = r.get<double>();
  if (!std::isfinite(absorbed) || absorbed < 0) r.fail("bad absorbed weight");
  double floor = 0;
  std::uint8_t bound = 0;
  if (opened.version >= 2) {
    floor = r.get<double>();
    if (!std::isfinite(floor) || floor < 0) r.fail("bad floor");
    bound = r.get<std::uint8_t>();
    if (bound > 1) r.fail("bad key budget flag");
  }
  AugmentedHeap h(1, key_budget);
  h.heap_ = KeyedMinHeap::read_from(r, capacity, kTableFactor);
  h.base_.reserve(h.heap_.capacity());
  for (std::uint32_t slot = 0; slot < h.heap_.size(); ++slot) {  // read_from gave the i-th entry written slot i
    const double base = r.get<double>();
    const auto& e = h.heap_.at(slot);
    if (!std::isfinite(base) || base < 0) r.fail("bad estimate before entry");
    if (e.aux > e.value) r.fail("an entry's lower bound exceeds its upper bound");
    h.base_.push_back(base);
  }
  r.expect_end();
  h.absorbed_ = absorbed;
  h.floor_ = floor;
  h.budget_bound_ = bound == 1;
  h.count_keys();
  return h;
}

AugmentedHeap AugmentedHeap::from_candidate_heap(const CandidateHeap& old, std::uint64_t key_budget) {
  AugmentedHeap h(old.capacity(), key_budget);
  for (const auto& e : old.entries()) {
    h.heap_.insert(e.key, e.hash, e.value, std::min(e.aux, e.value));
    h.base_.push_back(e.value - std::min(e.aux, e.value));
  }
  h.floor_ = old.threshold();  // what merges established, if any (the minimum otherwise)
  h.count_keys();
  return h;
}

}  // namespace ebb
