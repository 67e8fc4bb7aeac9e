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

void CandidateHeap::merge(const CandidateHeap& other, const CountMin& merged_sketch) {
  const double floor = threshold() + other.threshold();
  std::unordered_map<std::string_view, KeyedMinHeap::Entry> merged;
  auto add = [&](const KeyedMinHeap::Entry& e) {
    auto [it, fresh] = merged.try_emplace(e.key, KeyedMinHeap::Entry{e.key, e.hash, 0, 0});
    it->second.aux += e.aux;
    if (fresh) it->second.value = merged_sketch.estimate(e.hash);
  };
  for (const auto& e : heap_.entries()) add(e);
  for (const auto& e : other.heap_.entries()) add(e);
  std::vector<KeyedMinHeap::Entry> entries;
  entries.reserve(merged.size());
  for (auto& [_, e] : merged) entries.push_back(std::move(e));
  heap_ = KeyedMinHeap::from_entries(heap_.capacity(), std::move(entries));
  floor_ = floor;
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
