#pragma once
// Personalised top-K (POST /top-k/personalised, seed 002's extension): the
// namespace's global list re-ranked for one user by what that user touched
// lately.
//
// Candidates are the view's global top (kPersonalisedDepth x k of it, at
// most NamespaceConfig::kMaxK) and the user's own items. Each gets two terms
// in [0, 1]:
//
//   popularity = estimated_count / the largest estimated_count among the
//                candidates (1 for the global number one). A user's item
//                outside the global list read counts here as at most the
//                list's last item (its sketch estimate may over-count; it
//                cannot outrank the list on popularity alone);
//   relevance  = the user's decayed weight for the item / the largest
//                such weight among the user's items (1 for the item the
//                user is most into; 0 for an item the user never touched).
//
// The user's weight for an item is the sum over its interactions of
// weight x the view's decay from the interaction's timestamp to the
// answer's as_of: 2^-(age / half_life) for a decayed view, 1 from the
// answer's window start on and 0 before it for a window view, 1 for
// all-time; an interaction without a timestamp (or one after as_of) counts
// as now. Dividing each term by its own largest value puts counts in the
// millions and a user's few interactions on one scale, so alpha alone says
// how much each weighs:
//
//   score = alpha x popularity + (1 - alpha) x relevance
//
// (alpha 1: the global list, then the user's other items; alpha 0: the
// user's items by relevance, then the rest by popularity). Ties go to the
// better global rank (a listed item before one that is not), then the
// larger count, then the smaller item id, so an answer is deterministic.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ebb/engine/answers.hpp"

namespace ebb::engine {

// How deep into the global list candidates are taken: this many times k.
inline constexpr std::size_t kPersonalisedDepth = 5;

struct UserItem {
  std::string item;
  double weight = 1;
  std::optional<double> timestamp;  // seconds since the epoch; none: now
};

struct PersonalisedItem {
  CountedItem item;  // the view's count and bounds for it
  double score = 0;
  double popularity = 0;
  double relevance = 0;
  std::optional<std::size_t> global_rank;  // 1-based, when in the global list read
};

struct PersonalisedAnswer {
  TopKAnswer global;  // the view, as_of, total, accuracy and coverage (items: moved out)
  double alpha = 0;
  std::size_t candidates = 0;           // distinct items scored
  std::vector<PersonalisedItem> items;  // score descending, at most k
};

// The user's decayed weight of one interaction in `view` at `as_of` (a
// window view: whether it is at or after `window_start`, the answer's).
double user_decay(const ViewSpec& view, double as_of, double window_start, const std::optional<double>& timestamp) noexcept;

// Blends `global` (the view's top, deepest first) with the user's items
// (`points[i]` is the view's answer for the distinct item `distinct[i]`)
// into the best k. Pure arithmetic: the caller read the view.
PersonalisedAnswer blend_personalised(TopKAnswer global, std::span<const UserItem> user_items, std::span<const std::string> distinct,
                                      std::span<const PointAnswer> points, double alpha, std::size_t k);

// The user's items' distinct ids, in first-seen order (what to ask the view for).
std::vector<std::string> distinct_items(std::span<const UserItem> user_items);

}  // namespace ebb::engine
