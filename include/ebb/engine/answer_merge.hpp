#pragma once
// One answer from the answers of disjoint parts of a namespace (a cluster's
// partitions, split by item hash: every item is counted in exactly one).
// The union of the parts' top-K lists holds the global top K, each item with
// its own part's estimate and bounds; an item no part listed is bounded by
// the largest of the parts' unlisted bounds (and by what the cut dropped).
#include <cstddef>
#include <vector>

#include "ebb/engine/answers.hpp"

namespace ebb::engine {

// The parts' answers (same view, at least one) merged into the best k.
// Accuracy: max_error and guarantee_threshold are the largest part's (each
// item is bounded by its own part's sketch), candidates and exact items
// add up, undersized if any part is, tail_uncertain judged again on the
// merged list.
TopKAnswer merge_disjoint(std::vector<TopKAnswer> parts, std::size_t k);

}  // namespace ebb::engine
