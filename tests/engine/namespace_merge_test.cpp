// Namespace::summed_state (CMS.MERGE): exact sums where nothing collides,
// honest bounds against the brute-force model on random streams, and the
// refusals that change nothing.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "ebb/core/error.hpp"
#include "ebb/engine/namespace.hpp"
#include "support/exact_model.hpp"

namespace ebb::engine {
namespace {

NamespaceConfig all_time_config(std::uint32_t width = 1024, std::uint32_t candidates = 64) {
  NamespaceConfig c;
  c.name = "m";
  c.k = std::min<std::uint32_t>(10, candidates);
  c.candidates = candidates;
  c.sketch = CountMinShape::with_dimensions(width, 4);
  c.clock = ClockMode::event;
  return c;
}

void add(Namespace& ns, const std::vector<Event>& events) { ns.apply(events); }

// The summed state, restored into the destination (what the service does
// after logging it).
void merge_into(Namespace& dest, const std::vector<const Namespace*>& sources, const std::vector<double>& weights) {
  dest.restore_state(dest.summed_state(sources, weights));
}

TEST(NamespaceMerge, SumsCountsExactlyWhereNothingCollides) {
  Namespace a(all_time_config()), b(all_time_config()), c(all_time_config());
  add(a, {{"x", 1000, 5}, {"y", 1000, 3}});
  add(b, {{"x", 1010, 2}, {"z", 1020, 4}});
  add(c, {{"old", 1000, 9}});
  merge_into(c, {&a, &b}, {1, 2});
  // Held keys keep exact bounds: x = 5 + 2 x 2.
  const auto top = c.top();
  ASSERT_EQ(top.items.size(), 3u);
  EXPECT_EQ(top.items[0].key, "x");
  EXPECT_EQ(top.items[0].lower, 9);
  EXPECT_EQ(top.items[0].upper, 9);
  EXPECT_EQ(top.items[1].key, "z");
  EXPECT_EQ(top.items[1].upper, 8);
  EXPECT_EQ(top.items[2].key, "y");
  EXPECT_EQ(top.items[2].upper, 3);
  EXPECT_EQ(top.total, 20);
  EXPECT_EQ(c.count("old").item.upper, 0);  // the destination's own counts are replaced
  const auto stats = c.stats();
  EXPECT_EQ(stats.weight, 20);
  EXPECT_EQ(stats.events, 4u);
  EXPECT_EQ(stats.batches, 2u);  // its own batch, then the merge
  EXPECT_EQ(stats.newest_time, 1020);
  EXPECT_EQ(c.now(), 1020);
  EXPECT_EQ(top.window_start, 1000);
}

TEST(NamespaceMerge, ASourceMayBeTheDestinationAndWeightZeroEmpties) {
  Namespace a(all_time_config()), b(all_time_config());
  add(a, {{"x", 1000, 5}});
  add(b, {{"x", 1000, 1}, {"y", 1000, 2}});
  merge_into(a, {&a, &b, &a}, {1, 1, 1});
  EXPECT_EQ(a.count("x").item.upper, 11);
  EXPECT_EQ(a.count("y").item.upper, 2);
  merge_into(a, {&b}, {0});
  EXPECT_EQ(a.count("x").item.upper, 0);
  EXPECT_EQ(a.stats().weight, 0);
  EXPECT_TRUE(a.top().items.empty());
}

// Random weighted streams into three small namespaces (collisions in the
// sketch, evictions from 16 candidates), summed with random weights: every
// item's bounds hold the true weighted sum, every item left out of the list
// is below its unlisted bound, the total is the weighted total.
TEST(NamespaceMerge, BoundsHoldTheWeightedSumOnRandomStreams) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::unique_ptr<Namespace>> sources;
    std::vector<testing::ExactModel> models(3);
    for (int s = 0; s < 3; ++s) {
      sources.push_back(std::make_unique<Namespace>(all_time_config(64, 16)));
      testing::StreamSpec spec;
      spec.events = 3000;
      spec.universe = 400;
      spec.jitter = 5;
      spec.integer_weights = seed % 2 == 0;
      const auto stream = testing::random_stream(spec, seed * 10 + static_cast<std::uint64_t>(s));
      for (std::size_t begin = 0; begin < stream.size(); begin += 100) {
        std::vector<Event> batch;
        for (std::size_t i = begin; i < std::min(stream.size(), begin + 100); ++i) {
          batch.push_back({stream[i].key, stream[i].time, stream[i].weight});
          models[s].add(stream[i].key, stream[i].time, stream[i].weight);
        }
        sources[s]->apply(batch);
      }
    }
    std::uniform_int_distribution<int> weight(0, 3);
    const std::vector<double> weights = {double(weight(rng)), double(weight(rng)) + 1, double(weight(rng))};
    std::map<std::string, double> truth;
    double total = 0;
    for (int s = 0; s < 3; ++s) {
      for (const auto& [key, n] : models[s].counts(0, 0)) truth[key] += weights[s] * n;
      total += weights[s] * models[s].total(0, 0);
    }
    Namespace dest(all_time_config(64, 16));
    merge_into(dest, {sources[0].get(), sources[1].get(), sources[2].get()}, weights);
    const auto top = dest.top(std::nullopt, 16);
    EXPECT_NEAR(dest.stats().weight, total, 1e-9 * total) << seed;
    EXPECT_GE(top.total, total * (1 - 1e-12)) << seed;
    std::map<std::string, const CountedItem*> listed;
    for (const auto& item : top.items) listed[item.key] = &item;
    for (const auto& [key, n] : truth) {
      const auto point = dest.count(key);
      EXPECT_GE(point.item.upper, n * (1 - 1e-12)) << seed << " " << key;
      EXPECT_LE(point.item.lower, n * (1 + 1e-12)) << seed << " " << key;
      if (auto it = listed.find(key); it != listed.end()) {
        EXPECT_GE(it->second->upper, n * (1 - 1e-12)) << seed << " " << key;
        EXPECT_LE(it->second->lower, n * (1 + 1e-12)) << seed << " " << key;
      } else {
        EXPECT_LE(n, top.unlisted_upper * (1 + 1e-12)) << seed << " " << key;
      }
    }
  }
}

// t is held by neither source (kept out below each one's minimum of 10),
// yet counts 18 in the sum, more than any held key's count: the unlisted
// bound must cover it (each source's threshold, summed, on top).
TEST(NamespaceMerge, AKeyNoSourceHeldStaysUnderTheUnlistedBound) {
  Namespace a(all_time_config(1024, 2)), b(all_time_config(1024, 2)), sum(all_time_config(1024, 2));
  add(a, {{"a", 1000, 10}, {"b", 1000, 10}, {"t", 1000, 9}});
  add(b, {{"c", 1000, 10}, {"d", 1000, 10}, {"t", 1000, 9}});
  ASSERT_EQ(a.top().unlisted_upper, 10);
  merge_into(sum, {&a, &b}, {1, 1});
  const auto top = sum.top();
  ASSERT_EQ(top.items.size(), 2u);
  EXPECT_EQ(top.items[0].key, "a");
  EXPECT_EQ(top.items[1].key, "b");
  EXPECT_EQ(top.unlisted_upper, 30);  // 10 (c and d, kept out) + 10 + 10
  EXPECT_EQ(sum.count("t").item.upper, 18);
  EXPECT_EQ(sum.count("c").item.upper, 10);
}

TEST(NamespaceMerge, RefusalsNameTheProblemAndChangeNothing) {
  Namespace a(all_time_config()), b(all_time_config(2048));
  add(a, {{"x", 1000, 5}});
  auto decayed_config = all_time_config();
  decayed_config.half_lives = {60};
  Namespace decayed(decayed_config);
  auto hot_config = all_time_config();
  hot_config.hot_key_threshold = 10;
  Namespace hot(hot_config);
  const std::string before = a.serialize_state();
  auto message = [&](const std::vector<const Namespace*>& sources, const std::vector<double>& weights) -> std::string {
    try {
      (void)a.summed_state(sources, weights);
    } catch (const CountOverflow& e) {
      return std::string("overflow: ") + e.what();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({&b}, {1}).find("the sketches differ in shape (2048 x 4 and 1024 x 4)"), std::string::npos);
  EXPECT_EQ(message({&decayed}, {1}),
            "sources: namespace 'm' cannot be summed: only a namespace with one all-time view (no half-lives, no windows, not exact) can");
  EXPECT_EQ(message({&a}, {-1}), "weights: must be finite and not negative");
  EXPECT_EQ(message({&a}, {2e15}), "overflow: weights: the summed count, 10000000000000000, would pass 2^53, where counts stop being exact");
  EXPECT_EQ(message({&a}, {1e15}), "");
  try {
    const std::vector<const Namespace*> sources = {&a};
    (void)hot.summed_state(sources, std::vector<double>{1});
    ADD_FAILURE() << "a destination with hot-key detection was summed into";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "destination: namespace 'm' detects hot keys, whose rates a sum cannot carry");
  }
  EXPECT_EQ(a.serialize_state(), before);
}

}  // namespace
}  // namespace ebb::engine
