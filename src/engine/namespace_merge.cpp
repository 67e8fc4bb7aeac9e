// Namespace::summed (CMS.MERGE): a fresh namespace of this configuration
// takes the weighted sum of the sources' views; the caller logs its state
// and adopt()s it. Built aside, so that a failure (bad_alloc included)
// changes nothing and a source may be this namespace.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ebb/core/error.hpp"
#include "ebb/engine/decayed_view.hpp"
#include "ebb/engine/namespace.hpp"
#include "number_text.hpp"

namespace ebb::engine {
namespace {

// The one all-time view a summable namespace keeps; InvalidArgument naming
// the namespace (as `role`) otherwise.
const DecayedView& summable_view(const Namespace& ns, const char* role) {
  const auto& c = ns.config();
  const bool one_all_time = c.counting == Counting::sketch && ns.views().size() == 1 && ns.views().front()->spec().kind == ViewSpec::Kind::all_time;
  const auto* view = one_all_time ? dynamic_cast<const DecayedView*>(ns.views().front().get()) : nullptr;
  if (!view) {
    throw InvalidArgument(std::string(role) + ": namespace '" + c.name +
                          "' cannot be summed: only a namespace with one all-time view (no half-lives, no windows, not exact) can");
  }
  return *view;
}

}  // namespace

void Namespace::check_summable(std::span<const Namespace* const> sources, std::span<const double> weights, std::span<const double> totals) const {
  if (sources.size() != weights.size() || (!totals.empty() && totals.size() != sources.size())) {
    throw std::logic_error("summed: one weight per source");
  }
  const DecayedView& mine = summable_view(*this, "destination");
  if (hot_keys_) throw InvalidArgument("destination: namespace '" + config_.name + "' detects hot keys, whose rates a sum cannot carry");
  if (!config_.exclude.empty()) {
    throw InvalidArgument("destination: namespace '" + config_.name + "' excludes items, which the sources' sketches may hold: a sum cannot leave them out");
  }
  std::vector<const DecayedView*> views;
  double weight = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    views.push_back(&summable_view(*sources[i], "sources"));
    if (!(weights[i] >= 0 && std::isfinite(weights[i]))) throw InvalidArgument("weights: must be finite and not negative");
    weight += weights[i] * (totals.empty() ? sources[i]->stats_.weight : totals[i]);
  }
  // Below 2^53, strictly: a product or sum past it can round down to it.
  if (!(weight < kMaxSummedWeight)) {
    throw CountOverflow("weights: the summed count, " + number_text(weight) + ", would reach 2^53, where counts stop being exact");
  }
  mine.check_summable(views, weights);
}

Namespace Namespace::summed(std::span<const Namespace* const> sources, std::span<const double> weights) const {
  check_summable(sources, weights);
  std::vector<const DecayedView*> views;
  double weight = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    views.push_back(&summable_view(*sources[i], "sources"));
    weight += weights[i] * sources[i]->stats_.weight;
  }
  Namespace sum(config_, wall_clock_);
  static_cast<DecayedView&>(*sum.views_.front()).add_weighted(views, weights);
  sum.stats_.weight = weight;
  sum.stats_.batches = stats_.batches + 1;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const Namespace& s = *sources[i];
    if (weights[i] == 0 || !s.seen_event_) continue;
    sum.stats_.events += s.stats_.events;
    sum.stats_.newest_time = sum.seen_event_ ? std::max(sum.stats_.newest_time, s.stats_.newest_time) : s.stats_.newest_time;
    sum.seen_event_ = true;
  }
  // The sum's counts came from elsewhere: its audit starts now.
  if (sum.audit_) sum.audit_ = std::make_unique<AccuracyAudit>(config_, sum.views_, !sum.seen_event_);
  return sum;
}

void Namespace::adopt(Namespace&& other) noexcept {
  views_.swap(other.views_);
  hot_keys_.swap(other.hot_keys_);
  audit_.swap(other.audit_);
  stats_ = other.stats_;
  seen_event_ = other.seen_event_;
  staged_ = 0;
}

}  // namespace ebb::engine
