// Personalised top-K's blend (engine/personalised) against a reference
// computation written out the long way on random lists and users (weights,
// timestamps in and out of order, repeats, items in and out of the global
// list, every view kind), and the cases whose answer is known by hand.
#include "ebb/engine/personalised.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <map>
#include <random>

namespace ebb::engine {
namespace {

TopKAnswer global_list(ViewSpec view, double as_of, std::vector<std::pair<std::string, double>> counts) {
  TopKAnswer a;
  a.view = view;
  a.as_of = as_of;
  if (view.kind == ViewSpec::Kind::window) a.window_start = as_of - view.window;
  for (auto& [key, count] : counts) a.items.push_back({key, count, count * 0.9, count * 1.1});
  return a;
}

PointAnswer point(const std::string& key, double count) {
  PointAnswer p;
  p.item = {key, count, count * 0.5, count * 2};
  return p;
}

// The blend, written out the long way.
struct Expected {
  std::string key;
  double score, popularity, relevance, count;
  std::size_t rank;  // in the global list; SIZE_MAX: not in it
};
std::vector<Expected> reference(const TopKAnswer& global, const std::vector<UserItem>& user, const std::map<std::string, double>& user_counts,
                                double alpha, std::size_t k) {
  std::map<std::string, double> count, popular;
  std::map<std::string, std::size_t> rank;  // unlisted: none
  for (const auto& i : global.items) {
    count[i.key] = popular[i.key] = i.estimate;
    const std::size_t r = rank.size() + 1;
    rank[i.key] = r;
  }
  for (const auto& [key, c] : user_counts) {
    if (!count.emplace(key, c).second) continue;  // the global list's reading stands
    popular[key] = global.items.empty() ? c : std::min(c, global.items.back().estimate);  // no higher than the list's last
  }
  std::map<std::string, double> weight;
  for (const auto& u : user) {
    double decay = 1;
    const double age = u.timestamp ? std::max(0.0, global.as_of - *u.timestamp) : 0.0;
    if (global.view.kind == ViewSpec::Kind::decayed) decay = std::pow(2.0, -age / global.view.half_life);
    if (global.view.kind == ViewSpec::Kind::window) decay = !u.timestamp || *u.timestamp >= global.as_of - global.view.window ? 1 : 0;
    weight[u.item] += u.weight * decay;
  }
  double max_count = 0, max_weight = 0;
  for (const auto& [_, c] : popular) max_count = std::max(max_count, c);
  for (const auto& [_, w] : weight) max_weight = std::max(max_weight, w);
  std::vector<Expected> out;
  for (const auto& [key, c] : count) {
    const double pop = max_count > 0 ? popular[key] / max_count : 0;
    const double rel = max_weight > 0 && weight.contains(key) ? weight.at(key) / max_weight : 0;
    out.push_back({key, alpha * pop + (1 - alpha) * rel, pop, rel, c, rank.contains(key) ? rank[key] : SIZE_MAX});
  }
  std::sort(out.begin(), out.end(), [](const Expected& a, const Expected& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.count != b.count) return a.count > b.count;
    return a.key < b.key;
  });
  if (out.size() > k) out.resize(k);
  return out;
}

TEST(Personalised, AlphaOneIsTheGlobalListAndZeroPutsTheUsersItemsFirst) {
  const auto global = global_list(ViewSpec::all_time(), 100, {{"a", 100}, {"b", 50}, {"c", 25}});
  const std::vector<UserItem> user = {{"c", 1, std::nullopt}, {"x", 3, std::nullopt}};
  const std::vector<std::string> distinct = distinct_items(user);
  ASSERT_EQ(distinct, (std::vector<std::string>{"c", "x"}));
  const std::vector<PointAnswer> points = {point("c", 25), point("x", 5)};

  auto names = [](const PersonalisedAnswer& a) {
    std::vector<std::string> out;
    for (const auto& i : a.items) out.push_back(i.item.key);
    return out;
  };
  const auto global_only = blend_personalised(global, user, distinct, points, 1.0, 3);
  EXPECT_EQ(names(global_only), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(global_only.candidates, 4u);
  EXPECT_EQ(global_only.items[0].global_rank, 1u);
  EXPECT_DOUBLE_EQ(global_only.items[1].popularity, 0.5);

  // alpha 0: x (weight 3, relevance 1), then c (1/3), then the rest by count.
  const auto user_only = blend_personalised(global, user, distinct, points, 0.0, 4);
  EXPECT_EQ(names(user_only), (std::vector<std::string>{"x", "c", "a", "b"}));
  EXPECT_DOUBLE_EQ(user_only.items[0].relevance, 1.0);
  EXPECT_DOUBLE_EQ(user_only.items[1].relevance, 1.0 / 3);
  EXPECT_EQ(user_only.items[0].global_rank, std::nullopt);
  EXPECT_EQ(user_only.items[0].item.estimate, 5);  // x's count is the view's point answer
  EXPECT_EQ(user_only.items[0].item.upper, 10);
  EXPECT_EQ(user_only.items[1].item.upper, 25 * 1.1);  // c's, the global list's reading

  // alpha 0.5: a = 0.5; b = 0.25; c = 0.125 + 1/6; x = 0.025 + 0.5.
  const auto half = blend_personalised(global, user, distinct, points, 0.5, 2);
  EXPECT_EQ(names(half), (std::vector<std::string>{"x", "a"}));
  EXPECT_DOUBLE_EQ(half.items[0].score, 0.5 * 0.05 + 0.5);
}

TEST(Personalised, AUsersItemOutsideTheListNeverOutranksItOnPopularity) {
  // "ghost" is not in the list read, but its sketch estimate (300, from
  // collisions) is above the list's last (25): it counts as 25 at most.
  const auto global = global_list(ViewSpec::all_time(), 100, {{"a", 100}, {"b", 50}, {"c", 25}});
  const std::vector<UserItem> user = {{"ghost", 1, std::nullopt}};
  const auto distinct = distinct_items(user);
  const std::vector<PointAnswer> points = {point("ghost", 300)};
  const auto a = blend_personalised(global, user, distinct, points, 1.0, 4);
  ASSERT_EQ(a.items.size(), 4u);
  EXPECT_EQ(a.items[2].item.key, "c");  // a tie with ghost on popularity 0.25: the listed item first
  EXPECT_EQ(a.items[3].item.key, "ghost");
  EXPECT_DOUBLE_EQ(a.items[3].popularity, 0.25);
  EXPECT_EQ(a.items[3].item.estimate, 300);  // its own count and bounds, as the view gives them
  EXPECT_DOUBLE_EQ(a.items[0].popularity, 1.0);  // the scale is still the list's first
}

TEST(Personalised, TheUsersWeightsDecayAsTheViewDoes) {
  const double now = 1000;
  const std::vector<UserItem> user = {{"old", 4, now - 600}, {"new", 1, now}, {"later", 1, now + 50}};
  const std::vector<PointAnswer> points = {point("old", 1), point("new", 1), point("later", 1)};
  const auto distinct = distinct_items(user);
  // Half-life 5m: old's 4 is 1 after two half-lives; a future interaction counts as now.
  auto decayed = blend_personalised(global_list(ViewSpec::decayed(300), now, {}), user, distinct, points, 0.0, 3);
  for (const auto& i : decayed.items) EXPECT_DOUBLE_EQ(i.relevance, 1.0) << i.item.key;
  // A 5m window: old is out of it.
  auto window = blend_personalised(global_list(ViewSpec::sliding(300), now, {}), user, distinct, points, 0.0, 3);
  EXPECT_EQ(window.items.back().item.key, "old");
  EXPECT_EQ(window.items.back().relevance, 0.0);
  // All-time: no decay, old leads.
  auto all = blend_personalised(global_list(ViewSpec::all_time(), now, {}), user, distinct, points, 0.0, 3);
  EXPECT_EQ(all.items.front().item.key, "old");
  EXPECT_DOUBLE_EQ(all.items.back().relevance, 0.25);
}

TEST(Personalised, EqualsTheReferenceOnRandomListsAndUsers) {
  std::mt19937_64 rng(11);
  const ViewSpec views[] = {ViewSpec::all_time(), ViewSpec::decayed(60), ViewSpec::sliding(120)};
  for (int round = 0; round < 300; ++round) {
    const ViewSpec view = views[round % 3];
    const double now = 10'000;
    std::vector<std::pair<std::string, double>> counts;
    const int listed = std::uniform_int_distribution<int>(0, 30)(rng);
    double c = 1e6;
    for (int i = 0; i < listed; ++i) {
      c *= std::uniform_real_distribution<double>(0.5, 1.0)(rng);
      counts.emplace_back("g" + std::to_string(i), std::floor(c));  // ties happen: floor
    }
    const auto global = global_list(view, now, counts);
    std::vector<UserItem> user;
    std::map<std::string, double> user_counts;
    const int n = std::uniform_int_distribution<int>(0, 20)(rng);
    for (int i = 0; i < n; ++i) {
      const bool in_global = listed > 0 && rng() % 2;
      const std::string key = in_global ? "g" + std::to_string(rng() % listed) : "u" + std::to_string(rng() % 8);
      std::optional<double> t;
      if (rng() % 3) t = now - std::uniform_real_distribution<double>(-30, 400)(rng);  // some after now, some past the window
      user.push_back({key, std::uniform_real_distribution<double>(0.1, 10)(rng), t});
      if (!in_global) user_counts.emplace(key, std::floor(std::uniform_real_distribution<double>(0, 2e6)(rng)));
    }
    const auto distinct = distinct_items(user);
    std::vector<PointAnswer> points;
    for (const auto& d : distinct) points.push_back(point(d, user_counts.contains(d) ? user_counts[d] : 0));
    const double alpha = std::uniform_real_distribution<double>(0, 1)(rng);
    const std::size_t k = 1 + rng() % 15;
    const auto got = blend_personalised(global, user, distinct, points, alpha, k);
    const auto want = reference(global, user, user_counts, alpha, k);
    ASSERT_EQ(got.items.size(), want.size()) << "round " << round;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got.items[i].item.key, want[i].key) << "round " << round << " rank " << i + 1;
      EXPECT_NEAR(got.items[i].score, want[i].score, 1e-12) << "round " << round;
      EXPECT_NEAR(got.items[i].popularity, want[i].popularity, 1e-12);
      EXPECT_NEAR(got.items[i].relevance, want[i].relevance, 1e-12);
      EXPECT_EQ(got.items[i].item.estimate, want[i].count);
    }
  }
}

}  // namespace
}  // namespace ebb::engine
