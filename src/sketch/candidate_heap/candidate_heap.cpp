#include "ebb/sketch/candidate_heap/candidate_heap.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "ebb/core/binary_io.hpp"
#include "ebb/sketch/count_min/count_min.hpp"

namespace ebb {
namespace {
constexpr std::uint16_t kFormatVersion = 1;

// value = CMS estimate (upper bound), aux = weight since entry (lower bound).
CountedItem report(const KeyedMinHeap::Entry& e) { return {e.key, e.value, std::min(e.aux, e.value), e.value}; }
}  // namespace

void CandidateHeap::offer_candidate(std::string_view key, std::uint64_t hash, double weight, double estimate) {
  const auto slot = heap_.find(key, hash);
  if (slot != KeyedMinHeap::kNone) {
    const auto& e = heap_.at(slot);
    heap_.raise(slot, std::max(e.value, estimate), e.aux + weight);
  } else if (!heap_.full()) {
    heap_.insert(key, hash, estimate, weight);
  } else if (estimate > heap_.min().value) {
    heap_.replace_min(key, hash, estimate, weight);
  }
}

std::optional<CountedItem> CandidateHeap::find(std::string_view key, std::uint64_t hash) const {
  const auto slot = heap_.find(key, hash);
  if (slot == KeyedMinHeap::kNone) return std::nullopt;
  return report(heap_.at(slot));
}

double CandidateHeap::threshold() const noexcept { return heap_.bound_outside(floor_); }

std::vector<CountedItem> CandidateHeap::top(std::size_t k) const {
  std::vector<CountedItem> items;
  for (const auto* e : heap_.largest(k)) items.push_back(report(*e));
  return items;
}

void CandidateHeap::scale(double factor) noexcept {
  heap_.scale(factor);
  floor_ *= factor;
}

void CandidateHeap::merge(const CandidateHeap& other, const CountMin& mine_sketch, const CountMin& other_sketch) {
  // An item's upper bound is the sum of each side's bound: its value where
  // the side holds it, else the tighter of the side's threshold and the
  // side's sketch estimate. Summed per side, bounds stay as tight as each
  // side's conservative update made them (a sum of the sketches has lost
  // that, and its estimate is never below this sum).
  const double mine = threshold(), theirs = other.threshold();
  struct Sides {
    KeyedMinHeap::Entry entry;
    double mine = -1, theirs = -1;  // -1: not held by that side
  };
  std::unordered_map<std::string_view, Sides> merged;
  auto add = [&](const KeyedMinHeap::Entry& e, bool is_mine) {
    auto [it, fresh] = merged.try_emplace(e.key, Sides{KeyedMinHeap::Entry{e.key, e.hash, 0, 0}});
    it->second.entry.aux += e.aux;
    (is_mine ? it->second.mine : it->second.theirs) = e.value;
  };
  for (const auto& e : heap_.entries()) add(e, true);
  for (const auto& e : other.heap_.entries()) add(e, false);
  std::vector<KeyedMinHeap::Entry> entries;
  entries.reserve(merged.size());
  for (auto& [_, m] : merged) {
    const std::uint64_t h = m.entry.hash;
    const double a = m.mine >= 0 ? m.mine : std::min(mine, mine_sketch.estimate(h));
    const double b = m.theirs >= 0 ? m.theirs : std::min(theirs, other_sketch.estimate(h));
    m.entry.value = a + b;
    entries.push_back(std::move(m.entry));
  }
  heap_ = KeyedMinHeap::from_entries(heap_.capacity(), std::move(entries));
  floor_ = mine + theirs;
}

std::string CandidateHeap::serialize() const {
  BinaryWriter w;
  w.put<double>(floor_);
  heap_.write_to(w);
  return seal_blob(BlobKind::candidate_heap, kFormatVersion, w.buffer());
}

CandidateHeap CandidateHeap::deserialize(std::string_view blob, std::optional<std::uint32_t> capacity) {
  auto opened = open_blob(blob, BlobKind::candidate_heap, kFormatVersion);
  BinaryReader r(opened.payload, "candidate heap");
  const double floor = r.get<double>();
  if (!std::isfinite(floor) || floor < 0) r.fail("bad floor");
  CandidateHeap h(1);
  h.heap_ = KeyedMinHeap::read_from(r, capacity);
  r.expect_end();
  h.floor_ = floor;
  return h;
}

}  // namespace ebb
