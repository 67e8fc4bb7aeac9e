#pragma once
// Rank-jump anomalies (GET /anomalies, seed 002's "breaking news"): the
// items of a window's list whose count jumped against a baseline, either
// a longer window ending at the same time ("1m against the last 1h") or
// the same window some time back ("1m against this minute last week").
//
// For an item of the current list (read kAnomalyDepth x k deep):
//
//   observed O = its current lower bound (what it surely counted);
//   expected E = max(B x L / L_b, (B + 1) x T / T_b),
//
// B being its baseline upper bound (the most it counted then), L and L_b
// the two windows' lengths and T and T_b their totals. The first term
// scales the baseline's rate to the current window; the second its share
// of the traffic (counting one event more than the baseline saw: a thin
// baseline's zero is no evidence of absence), which keeps a young stream
// (whose baseline window is not full yet) and traffic that rises
// everywhere at once (the morning) from looking like news: an item must
// rise against both its own rate and everyone else's. Then
//
//   jump  = O / E
//   score = (O - E) / sqrt(E x (1 + s) + 1)
//
// with s the larger of the two ratios: the rise in Poisson standard
// deviations of both counts (O's variance about E, the scaled baseline's
// about s x E; +1 keeps a brand-new item finite), as GET /trending's
// score with the baseline's noise added.
//
// Ranks: the current rank is the list's; the baseline rank the baseline
// list's (null when the item is not in it). The rank jump the bounds
// support is the best rank the item can have had in the baseline (1 + the
// baseline items whose lower bound passes its baseline upper bound) less
// the worst it can have now (1 + the current items whose upper bound
// reaches its lower bound: a tie may rank ahead); null when an item left
// out of the current list may count as much, or the list is a cluster's
// partial one (its
// worst rank is unknown). An item whose baseline point was not answered
// (its key is not the item's: a partition that did not answer) is not
// listed: its baseline is unknown.
//
// A baseline whose total is 0 (a namespace younger than the shifted
// window) lists nothing: there is nothing to compare with.
//
// An item is listed when O >= min_count and score >= min_score (a jump
// inside the counting noise is not news) and the bounds support a jump:
// jump >= min_jump or rank_jump >= max(1, min_rank_jump). The bounds make both
// conservative: O is a lower bound and E comes from an upper bound, so
// neither collisions nor the sketch's error can make a jump look larger.
// Largest jump first: score descending, then item id.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ebb/engine/answers.hpp"

namespace ebb::engine {

// The current list is read this many times k deep (at most
// NamespaceConfig::kMaxK); the baseline min_rank_jump deeper than that.
inline constexpr std::size_t kAnomalyDepth = 5;

struct AnomalyThresholds {
  double min_jump = 3;             // O / E
  std::size_t min_rank_jump = 50;  // seed 002's "more than 50 positions"
  double min_score = 4;
  double min_count = 5;            // O, in events of weight 1
};

struct AnomalyItem {
  std::string key;
  double score = 0;
  double jump = 0;                           // O / E
  double expected = 0;                       // E
  std::size_t rank = 0;                      // in the current list (1-based)
  std::optional<std::size_t> baseline_rank;  // in the baseline list read, when in it
  std::optional<long long> rank_jump;        // the rise the bounds support; none: unknown
  double rate = 0, baseline_rate = 0;        // estimate / window length (events/s)
  CountedItem count, baseline_count;
  // False when the baseline is a persisted list the item was not in: its
  // count then is only bounded (lower 0, upper the list's bound).
  bool baseline_estimated = true;
  bool rate_jumped = false, rank_jumped = false;  // which threshold it passed
};

struct AnomalyAnswer {
  TopKAnswer current;   // the window's answer read (items: moved out)
  TopKAnswer baseline;  // the baseline's (items: moved out)
  AnomalyThresholds thresholds;
  std::size_t candidates = 0;     // current items considered
  std::vector<AnomalyItem> items;  // largest jump first, at most k
  // Every item that passed, before the cut to k (a stream tells an item
  // once while it keeps passing, wherever it ranks).
  std::vector<std::string> passing;
};

// Pure arithmetic over what the caller read: `current` (the window's list,
// best first), `baseline` (the baseline's list, best first) and
// `baseline_points[i]`, the baseline's answer for current.items[i].
AnomalyAnswer find_anomalies(TopKAnswer current, TopKAnswer baseline, std::span<const PointAnswer> baseline_points,
                             const AnomalyThresholds& thresholds, std::size_t k);

// How deep to read each list for k and the thresholds.
std::size_t anomaly_current_depth(std::size_t k);
std::size_t anomaly_baseline_depth(std::size_t k, const AnomalyThresholds& thresholds);

}  // namespace ebb::engine
