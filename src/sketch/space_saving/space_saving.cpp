#include "ebb/sketch/space_saving/space_saving.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "ebb/core/binary_io.hpp"

namespace ebb {
namespace {
constexpr std::uint16_t kFormatVersion = 1;
}

void SpaceSaving::update(std::string_view key, std::uint64_t hash, double weight) {
  total_ += weight;
  const auto slot = heap_.find(key, hash);
  if (slot != KeyedMinHeap::kNone) {
    const auto& e = heap_.at(slot);
    heap_.raise(slot, e.value + weight, e.aux);
  } else if (!heap_.full()) {
    heap_.insert(key, hash, floor_ + weight, floor_);
  } else {
    const double inherited = heap_.bound_outside(floor_);
    heap_.replace_min(key, hash, inherited + weight, inherited);
  }
}

std::optional<CountedItem> SpaceSaving::find(std::string_view key, std::uint64_t hash) const {
  const auto slot = heap_.find(key, hash);
  if (slot == KeyedMinHeap::kNone) return std::nullopt;
  return report(heap_.at(slot));
}

double SpaceSaving::threshold() const noexcept { return heap_.bound_outside(floor_); }

std::vector<CountedItem> SpaceSaving::top(std::size_t k) const {
  std::vector<CountedItem> items;
  for (const auto* e : heap_.largest(k)) items.push_back(report(*e));
  return items;
}

void SpaceSaving::scale(double factor) noexcept {
  heap_.scale(factor);
  total_ *= factor;
  floor_ *= factor;
}

void SpaceSaving::merge(const SpaceSaving& other) {
  const double mine = threshold();
  const double theirs = other.threshold();
  std::unordered_map<std::string_view, KeyedMinHeap::Entry> merged;
  for (const auto& e : heap_.entries()) {
    merged.emplace(e.key, KeyedMinHeap::Entry{e.key, e.hash, e.value + theirs, e.aux + theirs});
  }
  for (const auto& e : other.heap_.entries()) {
    auto [it, fresh] = merged.try_emplace(e.key, KeyedMinHeap::Entry{e.key, e.hash, e.value + mine, e.aux + mine});
    if (!fresh) {  // held on both sides: undo the stand-in for this side
      it->second.value += e.value - theirs;
      it->second.aux += e.aux - theirs;
    }
  }
  std::vector<KeyedMinHeap::Entry> entries;
  entries.reserve(merged.size());
  for (auto& [_, e] : merged) entries.push_back(std::move(e));
  heap_ = KeyedMinHeap::from_entries(heap_.capacity(), std::move(entries));
  // Items on neither side are bounded by the sum of the two thresholds;
  // items dropped here by the new minimum, which threshold() already covers.
  floor_ = mine + theirs;
  total_ += other.total_;
}

std::string SpaceSaving::serialize() const {
  BinaryWriter w;
  w.put<double>(total_);
  w.put<double>(floor_);
  heap_.write_to(w);
  return seal_blob(BlobKind::space_saving, kFormatVersion, w.buffer());
}

SpaceSaving SpaceSaving::deserialize(std::string_view blob, std::optional<std::uint32_t> capacity) {
  auto opened = open_blob(blob, BlobKind::space_saving, kFormatVersion);
  BinaryReader r(opened.payload, "space-saving summary");
  const double total = r.get<double>();
  const double floor = r.get<double>();
  if (!std::isfinite(total) || total < 0 || !std::isfinite(floor) || floor < 0) r.fail("bad total or floor");
  SpaceSaving s(1);
  s.heap_ = KeyedMinHeap::read_from(r, capacity);
  r.expect_end();
  s.total_ = total;
  s.floor_ = floor;
  return s;
}

}  // namespace ebb
