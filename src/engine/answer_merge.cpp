// Merging the answers of disjoint parts (engine/answer_merge.hpp).
#include "ebb/engine/answer_merge.hpp"

#include <algorithm>
#include <stdexcept>

namespace ebb::engine {

TopKAnswer merge_disjoint(std::vector<TopKAnswer> parts, std::size_t k) {
  if (parts.empty()) throw std::logic_error("merge_disjoint: no parts");
  TopKAnswer out;
  out.view = parts.front().view;
  out.source = parts.front().source;
  out.accuracy.type = parts.front().accuracy.type;
  out.accuracy.epsilon = parts.front().accuracy.epsilon;
  out.accuracy.confidence = parts.front().accuracy.confidence;
  bool first = true;
  for (auto& p : parts) {
    out.as_of = std::max(out.as_of, p.as_of);
    if (p.window_start > 0) out.window_start = first || out.window_start == 0 ? p.window_start : std::min(out.window_start, p.window_start);
    out.window_end = std::max(out.window_end, p.window_end);
    out.granularity = std::max(out.granularity, p.granularity);
    // Parts from memory and from history: the answer is as coarse as its
    // coarsest part, which says history.
    if (p.source != out.source && (p.source == "history" || out.source == "history")) out.source = "history";
    out.total += p.total;
    out.unlisted_upper = std::max(out.unlisted_upper, p.unlisted_upper);
    Accuracy& a = out.accuracy;
    a.max_error = std::max(a.max_error, p.accuracy.max_error);
    a.guarantee_threshold = std::max(a.guarantee_threshold, p.accuracy.guarantee_threshold);
    a.candidates += p.accuracy.candidates;
    a.undersized = a.undersized || p.accuracy.undersized;
    a.items += p.accuracy.items;
    a.evicted_items += p.accuracy.evicted_items;
    a.memory_budget += p.accuracy.memory_budget;
    a.memory_bytes += p.accuracy.memory_bytes;
    for (auto& item : p.items) out.items.push_back(std::move(item));
    first = false;
  }
  // (Only the first k need their order: a cluster's top-100 over 16
  // partitions ranks 100 of 1,600.)
  const auto cut = out.items.begin() + static_cast<std::ptrdiff_t>(std::min(k, out.items.size()));
  std::partial_sort(out.items.begin(), cut, out.items.end(), ranks_before);
  // What the cut drops is unlisted now: its upper bounds bound the rest too.
  for (std::size_t i = k; i < out.items.size(); ++i) out.unlisted_upper = std::max(out.unlisted_upper, out.items[i].upper);
  if (out.items.size() > k) out.items.resize(k);
  out.accuracy.tail_uncertain = tail_uncertain(out.items, out.unlisted_upper);
  // Each item is bounded by its own part's sketch: the largest part's
  // bound, as a share of the whole (a cluster partition's sketch is a
  // share of the namespace's: a larger epsilon over a smaller total).
  if (out.accuracy.type == "count_min_sketch" && out.total > 0) out.accuracy.epsilon = out.accuracy.max_error / out.total;
  return out;
}

}  // namespace ebb::engine
