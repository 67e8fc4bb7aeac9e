// Merging disjoint parts' top-K answers (engine/answer_merge.hpp): the
// exact result a fixture determines.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

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

// Against the brute-force model: every item of every part, sorted whole,
// then cut (16 parts of up to 100, many ties; any k, 0 included): the same
// list and the same bound on what the cut leaves out.
TEST(AnswerMerge, AsTheWholeUnionSortedAndCutForAnyK) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 40; ++round) {
    std::vector<TopKAnswer> parts;
    std::vector<CountedItem> all;
    double unlisted = 0;
    for (int p = 0; p < 16; ++p) {
      std::vector<CountedItem> items;
      const int n = static_cast<int>(rng() % 101);
      for (int i = 0; i < n; ++i) {
        const double estimate = static_cast<double>(rng() % 20);  // (ties across parts)
        items.push_back({"p" + std::to_string(p) + "-" + std::to_string(i), estimate, estimate - 1, estimate + static_cast<double>(rng() % 3)});
      }
      std::sort(items.begin(), items.end(), ranks_before);
      all.insert(all.end(), items.begin(), items.end());
      const double u = static_cast<double>(rng() % 5);
      unlisted = std::max(unlisted, u);
      parts.push_back(part(items, 1000, u, 1, 1));
    }
    std::sort(all.begin(), all.end(), ranks_before);
    for (const std::size_t k : {std::size_t{0}, std::size_t{1}, std::size_t{10}, std::size_t{100}, all.size(), all.size() + 5}) {
      const TopKAnswer m = merge_disjoint(parts, k);
      const std::size_t cut = std::min(k, all.size());
      double want_unlisted = unlisted;
      for (std::size_t i = cut; i < all.size(); ++i) want_unlisted = std::max(want_unlisted, all[i].upper);
      ASSERT_EQ(m.items, std::vector<CountedItem>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(cut))) << "round " << round << " k " << k;
      EXPECT_EQ(m.unlisted_upper, want_unlisted) << "round " << round << " k " << k;
    }
  }
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
