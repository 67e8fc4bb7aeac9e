#include "ebb/engine/anomalies.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ebb/engine/namespace_config.hpp"

namespace ebb::engine {
namespace {

double length_of(const TopKAnswer& a) { return a.window_end - a.window_start; }

// The worst rank `item` (at `index`) can have in `list`, or none when
// something left out of the list may count more than it.
std::optional<long long> worst_rank(const TopKAnswer& list, std::size_t index) {
  const double lower = list.items[index].lower;
  // (A cluster's partial list lacks a partition's items, any of which may
  // rank ahead.)
  // An item that may count as much may rank ahead too (ties go by key).
  if (list.unlisted_upper >= lower || list.coverage.partial()) return std::nullopt;
  long long ahead = 0;
  for (std::size_t j = 0; j < list.items.size(); ++j) {
    if (j != index && list.items[j].upper >= lower) ++ahead;
  }
  return ahead + 1;
}

// The best rank an item that counted at most `upper` can have had in
// `list` (it may or may not be in it).
long long best_rank(const TopKAnswer& list, const std::string& key, double upper) {
  long long ahead = 0;
  for (const auto& other : list.items) {
    if (other.key != key && other.lower > upper) ++ahead;
  }
  return ahead + 1;
}

bool jumps_first(const AnomalyItem& a, const AnomalyItem& b) { return a.score != b.score ? a.score > b.score : a.key < b.key; }

}  // namespace

std::size_t anomaly_current_depth(std::size_t k) { return std::min<std::size_t>(k * kAnomalyDepth, NamespaceConfig::kMaxK); }

std::size_t anomaly_baseline_depth(std::size_t k, const AnomalyThresholds& thresholds) {
  return std::min<std::size_t>(anomaly_current_depth(k) + thresholds.min_rank_jump, NamespaceConfig::kMaxK);
}

AnomalyAnswer find_anomalies(TopKAnswer current, TopKAnswer baseline, std::span<const PointAnswer> baseline_points,
                             const AnomalyThresholds& thresholds, std::size_t k) {
  if (baseline_points.size() != current.items.size()) throw std::logic_error("find_anomalies: one baseline point per current item");
  AnomalyAnswer answer;
  answer.thresholds = thresholds;
  answer.candidates = current.items.size();
  const double length = length_of(current), baseline_length = length_of(baseline);
  // A baseline that counted nothing (a namespace younger than the shifted
  // window) gives nothing to compare with: every item would be "from
  // nothing".
  if (length > 0 && baseline_length > 0 && baseline.total > 0) {
    // What the baseline's count becomes over the current window: its rate,
    // or its share of the traffic, whichever expects more. The share counts
    // one event more than the baseline saw (a thin baseline's zero is no
    // evidence that an item was absent).
    const double rate_scale = length / baseline_length, share_scale = current.total / baseline.total;
    for (std::size_t i = 0; i < current.items.size(); ++i) {
      const CountedItem& now = current.items[i];
      const CountedItem& then = baseline_points[i].item;
      // Not answered (a cluster partition that did not answer in time): the
      // baseline is unknown, so no jump can be supported.
      if (then.key != now.key) continue;
      const double observed = now.lower;
      if (!(observed >= thresholds.min_count) || observed <= 0) continue;
      const double expected = std::max(then.upper * rate_scale, (then.upper + 1) * share_scale);
      // The noise of both counts: O's (variance about E) and the scaled
      // baseline's (about s x E, s the larger ratio).
      const double score = (observed - expected) / std::sqrt(expected * (1 + std::max(rate_scale, share_scale)) + 1);
      if (!(score >= thresholds.min_score)) continue;
      AnomalyItem item;
      item.key = now.key;
      item.score = score;
      item.expected = expected;
      item.jump = observed / expected;
      item.rank = i + 1;
      for (std::size_t j = 0; j < baseline.items.size(); ++j) {
        if (baseline.items[j].key == now.key) item.baseline_rank = j + 1;
      }
      if (const auto worst = worst_rank(current, i)) item.rank_jump = best_rank(baseline, now.key, then.upper) - *worst;
      item.rate = now.estimate / length;
      item.baseline_rate = then.estimate / baseline_length;
      item.count = now;
      item.baseline_count = then;
      item.baseline_estimated = baseline_points[i].listed != false;
      item.rate_jumped = item.jump >= thresholds.min_jump;
      // (A rank that did not rise is no jump, whatever min_rank_jump.)
      item.rank_jumped = item.rank_jump && *item.rank_jump >= std::max<long long>(1, static_cast<long long>(thresholds.min_rank_jump));
      if (item.rate_jumped || item.rank_jumped) answer.items.push_back(std::move(item));
    }
  }
  std::sort(answer.items.begin(), answer.items.end(), jumps_first);
  for (const auto& item : answer.items) answer.passing.push_back(item.key);
  if (answer.items.size() > k) answer.items.resize(k);
  current.items.clear();
  baseline.items.clear();
  answer.current = std::move(current);
  answer.baseline = std::move(baseline);
  return answer;
}

}  // namespace ebb::engine
