// Summing all-time views (CMS.MERGE): DecayedView::add_weighted.
//
// Why not just add the sketches: with the augmented heap a held key's
// count since it came in lives in the heap, not in the sketch. So each
// source's sketch is copied with its held keys' cells raised to their upper
// bounds (as an eviction would write them back), the copies are summed
// cell by cell (a sum of sketches that never under-count never
// under-counts), and the held keys then compete for the sum's heap with
// the sum of their exact parts as lower bounds. Every bound stays honest;
// where nothing collides the sum is exact. The bound on keys left out:
// one some source held was offered to the sum's heap, which raises its
// floor to the key's summed estimate when it keeps the key out or lets it
// go; one no source held counts at most the sources' thresholds, weighted
// and summed.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/decayed_view.hpp"

namespace ebb::engine {

void DecayedView::check_summable(std::span<const DecayedView* const> sources, std::span<const double> weights) const {
  if (sources.size() != weights.size()) throw std::logic_error("add_weighted: one weight per source");
  const auto* heap = std::get_if<AugmentedHeap>(&summary_);
  auto refuse = [](const std::string& why) { throw InvalidArgument("sources: " + why); };
  if (clock_.decays()) refuse("only all-time views can be summed (a decayed view's counts live on its own time scale)");
  if (!heap) refuse("a view with a Space-Saving summary cannot be summed");
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const DecayedView& s = *sources[i];
    if (s.clock_.decays()) refuse("only all-time views can be summed");
    if (!std::holds_alternative<AugmentedHeap>(s.summary_)) refuse("a view with a Space-Saving summary cannot be summed");
    if (s.sketch_.shape() != sketch_.shape() || s.sketch_.policy() != sketch_.policy()) {
      refuse("the sketches differ in shape (" + std::to_string(s.sketch_.shape().width) + " x " + std::to_string(s.sketch_.shape().depth) +
             " and " + std::to_string(sketch_.shape().width) + " x " + std::to_string(sketch_.shape().depth) + ") or update policy");
    }
    if (!(weights[i] >= 0 && std::isfinite(weights[i]))) refuse("weights must be finite and not negative");
  }
}

void DecayedView::add_weighted(std::span<const DecayedView* const> sources, std::span<const double> weights) {
  check_summable(sources, weights);
  auto* heap = std::get_if<AugmentedHeap>(&summary_);
  if (total() != 0 || heap->size() != 0) throw std::logic_error("add_weighted: the view must be empty");

  // A source may be this view only while it is empty (it adds nothing).
  struct Summed {
    std::string_view key;  // into the source's list, alive below
    std::uint64_t hash;
    double lower;  // the weighted sum of its lower bounds where held
  };
  std::vector<std::vector<CountedItem>> held(sources.size());
  std::vector<Summed> keys;
  std::unordered_map<std::string_view, std::size_t> index;
  double outside = 0;   // what bounds a key no source holds, weighted
  double absorbed = 0;  // the sources' held counts the sketches' totals lack, weighted
  // Summed straight into this (empty) view's sketch, to hold one sketch
  // less: every check that can fail is behind, and the view is scratch
  // (Namespace::summed) should an allocation fail below.
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (weights[i] == 0) continue;
    const DecayedView& s = *sources[i];
    const auto& theirs = std::get<AugmentedHeap>(s.summary_);
    held[i] = theirs.top(theirs.size()).items;
    CountMin flat = s.sketch_;
    for (const auto& item : held[i]) {
      const std::uint64_t hash = hash_key(item.key);
      flat.raise_to(hash, item.upper);
      const auto [it, added] = index.emplace(item.key, keys.size());
      if (added) keys.push_back({item.key, hash, 0});
      keys[it->second].lower += weights[i] * item.lower;
    }
    if (weights[i] != 1) flat.scale(weights[i]);
    sketch_.merge(flat);
    outside += weights[i] * theirs.threshold();
    absorbed += weights[i] * theirs.absorbed();
    // A resized source's older counts keep their bound in the sum.
    carried_.add(s.carried_, weights[i]);
  }

  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (weights[i] == 0 || !sources[i]->clock_.anchored()) continue;
    const double first = sources[i]->first_time_;
    if (!clock_.anchored()) {
      clock_.anchor(first);
      first_time_ = first;
    }
    first_time_ = std::min(first_time_, first);
  }
  for (const auto& k : keys) heap->admit(sketch_, k.key, k.hash, k.lower);
  heap->absorb(absorbed);
  heap->raise_floor(outside);
}

}  // namespace ebb::engine
