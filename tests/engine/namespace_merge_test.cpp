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

// The sum, adopted by the destination (what the service does after logging
// its state).
void merge_into(Namespace& dest, const std::vector<const Namespace*>& sources, const std::vector<double>& weights) {
  dest.adopt(dest.summed(sources, weights));
}

TEST(NamespaceMerge, SumsCountsExactlyWhereNothingCollides) {
  Namespace a(all_time_config()), b(all_time_config()), c(all_time_config());
  add(a, {{"x", 1000, 5}, {"y", 1000, 3}});
  add(a, {{"x", 1001, 3}});  // x is held now: counted in the heap, not the sketch
  add(b, {{"x", 1010, 2}, {"z", 1020, 4}});
  add(c, {{"old", 1000, 9}});
  const std::uint64_t id = c.instance_id();
  merge_into(c, {&a, &b}, {1, 2});
  EXPECT_EQ(c.instance_id(), id);
  // Held keys keep exact bounds: x = 5 + 3 + 2 x 2.
  const auto top = c.top();
  ASSERT_EQ(top.items.size(), 3u);
  EXPECT_EQ(top.items[0].key, "x");
  EXPECT_EQ(top.items[0].lower, 12);
  EXPECT_EQ(top.items[0].upper, 12);
  EXPECT_EQ(top.items[1].key, "z");
  EXPECT_EQ(top.items[1].upper, 8);
  EXPECT_EQ(top.items[2].key, "y");
  EXPECT_EQ(top.items[2].upper, 3);
  EXPECT_EQ(top.total, 23);
  EXPECT_EQ(c.count("old").item.upper, 0);  // the destination's own counts are replaced
  const auto stats = c.stats();
  EXPECT_EQ(stats.weight, 23);
  EXPECT_EQ(stats.events, 5u);
  EXPECT_EQ(stats.batches, 2u);  // its own batch, then the merge
  EXPECT_EQ(stats.newest_time, 1020);
  EXPECT_EQ(c.now(), 1020);
  EXPECT_EQ(top.window_start, 1000);
  // Its state is what a replay restores: the same answers.
  Namespace replayed(all_time_config());
  replayed.restore_state(c.serialize_state());
  EXPECT_EQ(replayed.top().items, top.items);
  // It counts on from there.
  add(c, {{"z", 1030, 1}});
  EXPECT_EQ(c.count("z").item.upper, 9);
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
// sketch, evictions from 16 candidates; plain update on odd seeds), summed
// into one of them with random weights, one source named twice: every
// item's bounds hold the true weighted sum, every item left out of the list
// is under its unlisted bound, the total is the weighted total; and so
// after more events counted into the sum.
void expect_bounds_hold(const Namespace& ns, const std::map<std::string, double>& truth, double total, const std::string& where) {
  const auto top = ns.top(std::nullopt, 16);
  EXPECT_NEAR(ns.stats().weight, total, 1e-9 * total) << where;
  EXPECT_GE(top.total, total * (1 - 1e-12)) << where;
  std::map<std::string, const CountedItem*> listed;
  for (const auto& item : top.items) listed[item.key] = &item;
  for (const auto& [key, n] : truth) {
    const auto point = ns.count(key);
    EXPECT_GE(point.item.upper, n * (1 - 1e-12)) << where << " " << key;
    EXPECT_LE(point.item.lower, n * (1 + 1e-12)) << where << " " << key;
    if (auto it = listed.find(key); it != listed.end()) {
      EXPECT_GE(it->second->upper, n * (1 - 1e-12)) << where << " " << key;
      EXPECT_LE(it->second->lower, n * (1 + 1e-12)) << where << " " << key;
    } else {
      EXPECT_LE(n, top.unlisted_upper * (1 + 1e-12)) << where << " " << key;
    }
  }
}

TEST(NamespaceMerge, BoundsHoldTheWeightedSumOnRandomStreams) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    auto config = all_time_config(64, 16);
    if (seed % 2 == 1) config.update = UpdatePolicy::plain;
    std::vector<std::unique_ptr<Namespace>> sources;
    std::vector<std::map<std::string, double>> counts(3);
    std::vector<double> totals(3);
    auto feed = [&](Namespace& ns, std::map<std::string, double>& count, double& total, std::uint64_t stream_seed, std::size_t events) {
      testing::StreamSpec spec;
      spec.events = events;
      spec.universe = 400;
      spec.jitter = 5;
      spec.integer_weights = seed % 4 < 2;
      const auto stream = testing::random_stream(spec, stream_seed);
      for (std::size_t begin = 0; begin < stream.size(); begin += 100) {
        std::vector<Event> batch;
        for (std::size_t i = begin; i < std::min(stream.size(), begin + 100); ++i) {
          batch.push_back({stream[i].key, stream[i].time, stream[i].weight});
          count[stream[i].key] += stream[i].weight;
          total += stream[i].weight;
        }
        ns.apply(batch);
      }
    };
    for (int s = 0; s < 3; ++s) {
      sources.push_back(std::make_unique<Namespace>(config));
      feed(*sources.back(), counts[s], totals[s], seed * 10 + static_cast<std::uint64_t>(s), 3000);
    }
    std::uniform_int_distribution<int> weight(0, 3);
    // Sources 0, 1, 2 and 0 again; the sum goes into source 1.
    const std::vector<int> picks = {0, 1, 2, 0};
    std::vector<double> weights;
    std::map<std::string, double> truth;
    double total = 0;
    for (const int s : picks) {
      weights.push_back(double(weight(rng)));
      for (const auto& [key, n] : counts[s]) truth[key] += weights.back() * n;
      total += weights.back() * totals[s];
    }
    Namespace& dest = *sources[1];
    merge_into(dest, {sources[0].get(), sources[1].get(), sources[2].get(), sources[0].get()}, weights);
    expect_bounds_hold(dest, truth, total, "seed " + std::to_string(seed) + " merged");
    feed(dest, truth, total, seed * 10 + 7, 400);
    expect_bounds_hold(dest, truth, total, "seed " + std::to_string(seed) + " counted on");
  }
}

// t is held by neither source (kept out below each one's minimum of 10),
// yet counts 18 in the sum, more than any held key's count: the unlisted
// bound must cover it (the sources' thresholds, summed).
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
  EXPECT_EQ(top.unlisted_upper, 20);  // the sources' thresholds, 10 + 10: c and d, kept out at 10, are under it
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
  // What summing into `dest` says ("" when it sums).
  auto message_into = [](const Namespace& dest, const std::vector<const Namespace*>& sources, const std::vector<double>& weights) -> std::string {
    try {
      (void)dest.summed(sources, weights);
    } catch (const CountOverflow& e) {
      return std::string("overflow: ") + e.what();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  auto message = [&](const std::vector<const Namespace*>& sources, const std::vector<double>& weights) { return message_into(a, sources, weights); };
  EXPECT_NE(message({&b}, {1}).find("the sketches differ in shape (2048 x 4 and 1024 x 4)"), std::string::npos);
  EXPECT_EQ(message({&decayed}, {1}),
            "sources: namespace 'm' cannot be summed: only a namespace with one all-time view (no half-lives, no windows, not exact) can");
  EXPECT_EQ(message({&a}, {-1}), "weights: must be finite and not negative");
  EXPECT_EQ(message({&a}, {2e15}), "overflow: weights: the summed count, 10000000000000000, would reach 2^53, where counts stop being exact");
  EXPECT_EQ(message({&a}, {1e15}), "");
  EXPECT_EQ(message_into(hot, {&a}, {1}), "destination: namespace 'm' detects hot keys, whose rates a sum cannot carry");
  auto exclude_config = all_time_config();
  exclude_config.exclude = {"x"};
  EXPECT_EQ(message_into(Namespace(exclude_config), {&a}, {1}),
            "destination: namespace 'm' excludes items, which the sources' sketches may hold: a sum cannot leave them out");
  // 2^53 + 1 in doubles is 2^53: the sum must stay below it.
  Namespace one(all_time_config());
  add(one, {{"x", 1000, 1}});
  EXPECT_EQ(message({&one}, {9007199254740992.0}).substr(0, 10), "overflow: ");
  EXPECT_EQ(message({&one}, {9007199254740991.0}), "");
  EXPECT_EQ(message_into(decayed, {&a}, {1}).substr(0, 39), "destination: namespace 'm' cannot be su");
}

}  // namespace
}  // namespace ebb::engine
