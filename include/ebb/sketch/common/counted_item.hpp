#pragma once
// What every top-K summary reports for an item: an estimate and honest
// bounds. The true count lies in [lower, upper]; for CMS-derived upper
// bounds that is deterministic (a CMS never under-counts).
#include <string>

namespace ebb {

struct CountedItem {
  std::string key;
  double estimate = 0;
  double lower = 0;
  double upper = 0;

  friend bool operator==(const CountedItem&, const CountedItem&) = default;
};

// Report order: estimate descending, then key ascending (deterministic ties).
inline bool ranks_before(const CountedItem& a, const CountedItem& b) noexcept {
  return a.estimate != b.estimate ? a.estimate > b.estimate : a.key < b.key;
}

}  // namespace ebb
