#pragma once
// What every top-K summary reports for an item: an estimate and honest
// bounds. The true count lies in [lower, upper]; for CMS-derived upper
// bounds that is deterministic (a CMS never under-counts).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ebb {

struct CountedItem {
  std::string key;
  double estimate = 0;
  double lower = 0;
  double upper = 0;

  friend bool operator==(const CountedItem&, const CountedItem&) = default;
};

// A summary's k best, in report order, and a bound on every item left out
// (held further down, or not held at all): each has true count <=
// unlisted_upper. When every listed lower bound reaches it, the list is
// surely the true top; when one does not, its tail is uncertain.
struct RankedList {
  std::vector<CountedItem> items;
  double unlisted_upper = 0;
};

// A held key and the score a summary ranks it by, as a scan of the summary
// gives it: the key's bytes are the summary's, valid until it next changes.
struct HeldScore {
  std::string_view key;
  std::uint64_t hash = 0;
  double score = 0;
};

// Report order: estimate descending, then key ascending (deterministic ties).
inline bool ranks_before(const CountedItem& a, const CountedItem& b) noexcept {
  return a.estimate != b.estimate ? a.estimate > b.estimate : a.key < b.key;
}

}  // namespace ebb
