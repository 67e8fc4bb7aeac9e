#include "ebb/decay/forward_decay.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "ebb/core/error.hpp"
#include "ebb/decay/exact_decayed_counter.hpp"
#include "ebb/decay/weight_scaler.hpp"
#include "support/exact_model.hpp"

namespace ebb {
namespace {

using testing::ExactModel;
using testing::rel_diff;

TEST(ForwardDecay, NoDecayIsRateZero) {
  auto d = ForwardDecay::none();
  EXPECT_EQ(d.lambda(), 0);
  EXPECT_FALSE(d.decays());
  d.anchor(100);
  EXPECT_EQ(d.weight_factor(1e12), 1.0);
  EXPECT_EQ(d.read_factor(-1e12), 1.0);
  EXPECT_FALSE(d.needs_rebase(1e300));
}

TEST(ForwardDecay, HalfLifeHalvesAndRejectsNonsense) {
  auto d = ForwardDecay::with_half_life(60);
  d.anchor(1000);
  EXPECT_NEAR(d.weight_factor(1060), 2.0, 1e-12);
  EXPECT_NEAR(d.read_factor(1060), 0.5, 1e-12);
  EXPECT_NEAR(d.half_life(), 60, 1e-9);
  EXPECT_THROW(ForwardDecay::with_half_life(0), InvalidArgument);
  EXPECT_THROW(ForwardDecay::with_half_life(-1), InvalidArgument);
  EXPECT_THROW(ForwardDecay::with_half_life(NAN), InvalidArgument);
}

TEST(ForwardDecay, SerialisationRoundTrips) {
  auto d = ForwardDecay::with_half_life(300);
  d.anchor(12345.5);
  EXPECT_EQ(ForwardDecay::deserialize(d.serialize()), d);
}

TEST(WeightScaler, MatchesExpToNearMachinePrecision) {
  auto d = ForwardDecay::with_half_life(300);
  d.anchor(1e9);
  WeightScaler s;
  std::mt19937_64 rng(3);
  double t = 1e9;
  for (int i = 0; i < 100000; ++i) {
    t += std::uniform_real_distribution<double>(-0.5, 1.0)(rng);
    ASSERT_LT(rel_diff(s.factor(d, t), d.weight_factor(t)), 1e-14) << i;
  }
}

// The chunk path (vectorisable when a chunk spans little of a half-life)
// and its per-event fallback both agree with exp().
TEST(WeightScaler, ChunkScalingMatchesExp) {
  auto d = ForwardDecay::with_half_life(60);
  d.anchor(1e9);
  WeightScaler s;
  std::mt19937_64 rng(5);
  for (double spread : {0.001, 0.5, 50.0, 5000.0}) {
    std::vector<double> times(256), weights(256), out(256);
    for (std::size_t i = 0; i < times.size(); ++i) {
      times[i] = 1e9 + std::uniform_real_distribution<double>(0, spread)(rng);
      weights[i] = 1 + static_cast<double>(i % 7);
    }
    s.scale(d, times.data(), weights.data(), out.data(), times.size());
    for (std::size_t i = 0; i < times.size(); ++i) {
      ASSERT_LT(rel_diff(out[i], weights[i] * d.weight_factor(times[i])), 1e-14) << spread << " " << i;
    }
  }
}

// Decayed scores match the analytic sum to 1e-9 relative across many
// renormalisations (tiny half-life), with events in and out of order, for
// several half-lives at once.
TEST(ExactDecayedCounter, MatchesAnalyticSumAcrossRebases) {
  const std::vector<double> half_lives = {0.05, 1.0, 60.0, INFINITY};
  for (std::uint64_t seed : {1, 2, 3}) {
    testing::StreamSpec spec;
    spec.events = 20000;
    spec.universe = 50;
    spec.duration = 200;  // 4000 half-lives of 0.05 s: ~9 rebases
    spec.jitter = 0.02;
    auto stream = testing::random_stream(spec, seed);
    ExactDecayedCounter counter(half_lives);
    ExactModel model;
    for (const auto& e : stream) {
      counter.add(e.key, e.weight, e.time);
      model.add(e.key, e.time, e.weight);
    }
    double now = spec.start_time + spec.duration;
    for (std::size_t v = 0; v < half_lives.size(); ++v) {
      const double lambda = std::isinf(half_lives[v]) ? 0 : std::log(2.0) / half_lives[v];
      const auto truth = model.counts(lambda, now);
      const double total = model.total(lambda, now);
      ASSERT_LT(rel_diff(counter.total(v, now), total), 1e-9) << "view " << v;
      for (const auto& [key, score] : truth) {
        // Scores 1e-300 below the total are below double's reach either way.
        if (score < total * 1e-200) continue;
        ASSERT_LT(rel_diff(counter.score(key, v, now), score), 1e-9) << key << " view " << v;
      }
    }
  }
}

// An event's contribution depends on its own time only: any arrival order
// gives the same scores.
TEST(ExactDecayedCounter, OutOfOrderIsExact) {
  testing::StreamSpec spec;
  spec.events = 5000;
  spec.jitter = 600;
  auto stream = testing::random_stream(spec, 9);
  ExactDecayedCounter a({30.0, 3600.0}), b({30.0, 3600.0});
  for (const auto& e : stream) a.add(e.key, e.weight, e.time);
  std::shuffle(stream.begin(), stream.end(), std::mt19937_64(1));
  for (const auto& e : stream) b.add(e.key, e.weight, e.time);
  const double now = spec.start_time + spec.duration;
  for (std::size_t v = 0; v < 2; ++v) {
    const auto top_a = a.top(v, 50, now), top_b = b.top(v, 50, now);
    ASSERT_EQ(top_a.size(), top_b.size());
    for (std::size_t i = 0; i < top_a.size(); ++i) {
      EXPECT_EQ(top_a[i].first, top_b[i].first);
      EXPECT_LT(rel_diff(top_a[i].second, top_b[i].second), 1e-9);
    }
  }
}

TEST(ExactDecayedCounter, SerialisationRoundTrips) {
  ExactDecayedCounter c({10.0, INFINITY});
  for (int i = 0; i < 100; ++i) c.add(std::string(1, 'k').append(std::to_string(i % 7)), 1 + i % 4, 1000 + i);  // (not "k" + ...: GCC 12 -Wrestrict false positive)
  auto back = ExactDecayedCounter::deserialize(c.serialize());
  for (std::size_t v = 0; v < 2; ++v) {
    EXPECT_EQ(back.top(v, 7, 1100), c.top(v, 7, 1100));
    EXPECT_EQ(back.total(v, 1100), c.total(v, 1100));
  }
}

}  // namespace
}  // namespace ebb
