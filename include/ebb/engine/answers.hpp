#pragma once
// What the engine answers. Shapes follow ../shared/notes/api.md so the CLI's
// --json output and the server's responses are the same documents.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ebb/engine/view_spec.hpp"
#include "ebb/sketch/common/counted_item.hpp"

namespace ebb::engine {

struct Accuracy {
  std::string type = "count_min_sketch";
  double epsilon = 0;      // e / width actually provided
  double confidence = 0;   // 1 - e^-depth
  double max_error = 0;    // epsilon * total: over-count bound at that confidence
  // Every item whose true count exceeds this is in the candidate set, so it
  // is reported when k reaches its rank (deterministic).
  double guarantee_threshold = 0;
  std::uint32_t candidates = 0;  // summary capacity
  // True when k exceeds the summary capacity: the answer is shorter or less
  // certain than asked, and the configuration should grow.
  bool undersized = false;
  // True when the bounds cannot separate the list from what it left out:
  // some listed item's lower bound is below what an unlisted item may
  // count (the next candidate's upper bound, or guarantee_threshold), so
  // the list's tail may hold the wrong items.
  bool tail_uncertain = false;
  // Exact counting (type "exact"): the records held, and how many were
  // evicted past max_items (max_error is the weight they took).
  std::uint64_t items = 0;
  std::uint64_t evicted_items = 0;
  // Views of a memory budget ("memory"): the budget and the bytes held now.
  std::uint64_t memory_budget = 0;
  std::uint64_t memory_bytes = 0;
};

// Accuracy::tail_uncertain for a list and the bound on every item it left out.
inline bool tail_uncertain(const std::vector<CountedItem>& items, double unlisted_upper) noexcept {
  for (const auto& item : items) {
    if (item.lower < unlisted_upper) return true;
  }
  return false;
}

// Answers of a cluster (ebb serve --nats) are merged from its partitions:
// how many there are, and those whose owners did not answer in time (the
// answer is partial then, and says so). partitions 0: a single node's.
struct Coverage {
  std::uint32_t partitions = 0;
  std::vector<std::uint32_t> missing;  // ascending
  bool partial() const noexcept { return !missing.empty(); }
};

struct TopKAnswer {
  ViewSpec view;
  double as_of = 0;
  double window_start = 0;  // all-time views: the first event time counted
  double window_end = 0;    // window views: the cover's end (as_of, or a bucket boundary before it)
  double granularity = 0;   // window views: the boundaries are exact to this many seconds
  std::string source;       // answers as of a past time: "memory" or "history"; empty for now
  std::vector<CountedItem> items;  // report order; rank = index + 1
  // The most any item not listed can have counted (the next candidate's
  // upper bound, or the guarantee threshold): the bound history keeps for
  // items a stored list left out.
  double unlisted_upper = 0;
  double total = 0;
  Accuracy accuracy;
  Coverage coverage;
};

struct PointAnswer {
  ViewSpec view;
  double as_of = 0;
  double window_start = 0;
  double window_end = 0;
  double granularity = 0;
  std::string source;
  CountedItem item;
  bool tracked = false;  // in the candidate set (tighter bounds)
  // Answers from a persisted list: whether the item was in it. When not,
  // the item's estimate is unknown: lower 0, upper the list's bound.
  std::optional<bool> listed;
  double rate = 0;       // events/s: lambda x score (decayed), count / elapsed (all-time)
  Accuracy accuracy;
  Coverage coverage;
};

}  // namespace ebb::engine
