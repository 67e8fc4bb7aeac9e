#pragma once
// Trending: the items whose recent rate rises fastest above their own
// longer-term rate (GET /trending). Two decayed views of one namespace are
// compared: the short half-life's count says what is happening now, the
// long one's rate what is usual for the item.
//
// The score is a Poisson surprise. An item's usual rate is its long-view
// count over the long view's exposure X_long, where X(lambda) = (1 -
// e^(-lambda a)) / lambda is what a steady 1 event/s adds up to in a view
// over the stream's age a (1/lambda once the stream is many half-lives
// old; less before: without it every steady item of a young stream would
// look like it rises). Were the item still arriving at that rate r_long,
// its short-view count would be about E = r_long x X_short; it is O
// instead, and
//
//     score = (O - E) / sqrt(E + 1)
//
// O's excess over E in units of sqrt(E) (+1 keeps a brand-new item finite;
// a decayed count's own standard deviation is about sqrt(E / 2), so this is
// about 0.7 standard deviations). It grows with the size of the rise and with the evidence for it
// (the square root of the count), so a handful of events cannot outrank a
// real surge; items with O under `min_count` are left out altogether, and
// only items with a positive score are listed.
// The bounds make it conservative: O is the short view's lower bound and
// r_long comes from the long view's upper bound, so a score is never
// inflated by estimation error (collisions can only lower it).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ebb/engine/answers.hpp"
#include "ebb/engine/view.hpp"

namespace ebb::engine {

// The support an item needs by default to be listed: this many events
// (its short half-life's decayed count, lower bound). Front ends share it.
inline constexpr double kDefaultTrendingMinCount = 5;

struct TrendingItem {
  std::string key;
  double score = 0;
  double short_rate = 0;  // events/s: the short count's estimate / X_short
  double long_rate = 0;   // events/s: the long count's upper bound / X_long
  CountedItem short_count, long_count;  // the decayed counts with their bounds
};

struct TrendingAnswer {
  ViewSpec short_view, long_view;
  double as_of = 0;
  double min_count = 0;
  std::vector<TrendingItem> items;  // score descending, then key
  std::size_t candidates = 0;       // items of the short view considered
  // The stream's start the exposures were measured from: the first event
  // counted (0: none yet). A cluster's partitions each saw their own first
  // event; they are asked again with the earliest (find_trending's since).
  double since = 0;
  // The view's own first event (0: none yet), whatever `since` was used.
  double first_event = 0;
  Coverage coverage;  // a cluster's: which partitions the list spans
};

// The k items with the highest positive score among the short view's
// `candidates` heaviest (both views decayed, short_view's half-life shorter).
// `since`: the stream's start to measure its age from, when the views hold
// part of it (a cluster's partition: the earliest first event of all the
// partitions); none: the short view's first event.
TrendingAnswer find_trending(const View& short_view, const View& long_view, std::size_t candidates, std::size_t k, double min_count,
                             double now, std::optional<double> since = std::nullopt);

// The union of disjoint parts' answers (a cluster's partitions, split by
// item: each part scored its items with the same `since`), best k first.
// candidates add up; as_of is the latest part's.
TrendingAnswer merge_trending(std::vector<TrendingAnswer> parts, std::size_t k);

}  // namespace ebb::engine
