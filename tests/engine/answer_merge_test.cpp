// Merging disjoint parts' top-K answers (engine/answer_merge.hpp): the
// exact result a fixture determines.
#include <gtest/gtest.h>

#include "ebb/engine/answer_merge.hpp"

namespace ebb::engine {
namespace {

TopKAnswer part(std::vector<CountedItem> items, double total, double unlisted, double max_error, std::uint32_t candidates) {
  TopKAnswer a;
  a.view = ViewSpec::all_time();
  a.items = std::move(items);
  a.total = total;
  a.unlisted_upper = unlisted;
  a.accuracy.max_error = max_error;
  a.accuracy.candidates = candidates;
  return a;
}

TEST(AnswerMerge, UnionOfDisjointListsCutAtK) {
  auto a = part({{"a", 10, 10, 10}, {"c", 4, 4, 5}}, 20, 3, 0.5, 8);
  auto b = part({{"b", 7, 6, 7}, {"d", 4, 4, 4}}, 15, 2, 0.25, 8);
  const TopKAnswer m = merge_disjoint({a, b}, 3);
  ASSERT_EQ(m.items.size(), 3u);
  EXPECT_EQ(m.items[0].key, "a");
  EXPECT_EQ(m.items[1].key, "b");
  EXPECT_EQ(m.items[2].key, "c");  // ties rank by key
  EXPECT_EQ(m.total, 35);
  // d was cut: its upper bound (4) now bounds the unlisted.
  EXPECT_EQ(m.unlisted_upper, 4);
  EXPECT_EQ(m.accuracy.max_error, 0.5);
  EXPECT_EQ(m.accuracy.candidates, 16u);
  // c's lower bound (4) is not below 4: the list is certain.
  EXPECT_FALSE(m.accuracy.tail_uncertain);
  const TopKAnswer four = merge_disjoint({a, b}, 4);
  EXPECT_EQ(four.unlisted_upper, 3);
  EXPECT_FALSE(four.accuracy.tail_uncertain);
  const TopKAnswer two = merge_disjoint({a, part({{"b", 7, 3, 7}}, 7, 1, 0, 1)}, 2);
  EXPECT_TRUE(two.accuracy.tail_uncertain);  // b's lower bound 3 < c's upper bound 5
}

// Each part's sketch bounds its own items: the merged epsilon is the
// largest part's bound as a share of the whole total (a cluster
// partition's sketch: a larger epsilon over a smaller total).
TEST(AnswerMerge, EpsilonIsTheLargestPartsBoundOverTheWholeTotal) {
  auto a = part({{"a", 10, 10, 10}}, 30, 0, 3, 8);
  auto b = part({{"b", 7, 7, 7}}, 70, 0, 5, 8);
  a.accuracy.epsilon = 0.1;
  b.accuracy.epsilon = 5.0 / 70;
  const TopKAnswer m = merge_disjoint({a, b}, 2);
  EXPECT_EQ(m.accuracy.max_error, 5);
  EXPECT_DOUBLE_EQ(m.accuracy.epsilon, 0.05);
}

// As of a past time, parts may come from memory and from history: the
// answer says history, with the coarsest part's granularity.
TEST(AnswerMerge, PartsFromMemoryAndHistoryAnswerAsHistory) {
  auto a = part({{"a", 10, 10, 10}}, 10, 0, 0, 8);
  auto b = part({{"b", 7, 7, 7}}, 7, 0, 0, 8);
  a.source = "memory";
  a.granularity = 1;
  b.source = "memory";
  b.granularity = 10;
  EXPECT_EQ(merge_disjoint({a, b}, 2).source, "memory");
  b.source = "history";
  for (const auto& m : {merge_disjoint({a, b}, 2), merge_disjoint({b, a}, 2)}) {
    EXPECT_EQ(m.source, "history");
    EXPECT_EQ(m.granularity, 10);
  }
}

}  // namespace
}  // namespace ebb::engine
