#include "ebb/sketch/candidate_heap/candidate_heap.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

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
  //
  // In place (a window's bucket rings merge a closing bucket into its
  // parent every second): every held entry only grows, so raise() keeps the
  // heap; then the other side's items this heap lacks come in as a full
  // heap takes a candidate, evicting its minimum when they rank above it.
  // Whatever is evicted or left out is at most the final minimum, which
  // bound_outside() covers.
  const double mine = threshold(), theirs = other.threshold();
  std::vector<const KeyedMinHeap::Entry*> incoming;  // found before any eviction: an evicted item of ours is not "new"
  for (const auto& o : other.heap_.entries()) {
    if (heap_.find(o.key, o.hash) == KeyedMinHeap::kNone) incoming.push_back(&o);
  }
  for (std::uint32_t slot = 0; slot < heap_.size(); ++slot) {
    const auto& e = heap_.at(slot);
    const auto at = other.heap_.find(e.key, e.hash);
    double value = e.value, aux = e.aux;
    if (at != KeyedMinHeap::kNone) {
      value += other.heap_.at(at).value;
      aux += other.heap_.at(at).aux;
    } else {
      value += std::min(theirs, other_sketch.estimate(e.hash));
    }
    heap_.raise(slot, value, aux);
  }
  for (const auto* o : incoming) {
    const double value = std::min(mine, mine_sketch.estimate(o->hash)) + o->value;
    if (!heap_.full()) {
      heap_.insert(o->key, o->hash, value, o->aux);
    } else if (value > heap_.min().value) {
      heap_.replace_min(o->key, o->hash, value, o->aux);
    }
  }
  floor_ = mine + theirs;
}

std::string CandidateHeap::serialize() const {
  return written([this](BinaryWriter& w) { serialize_into(w); });
}

void CandidateHeap::serialize_into(BinaryWriter& w) const {
  const auto blob = w.begin_blob(BlobKind::candidate_heap, kFormatVersion);
  w.put<double>(floor_);
  heap_.write_to(w);
  w.end_blob(blob);
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
