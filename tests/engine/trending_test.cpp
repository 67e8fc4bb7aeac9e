// Trending against a brute-force model: with room for every item the
// engine's list is the model's, score for score; with collisions and too
// few candidates every listed score stays at or under the exact one (the
// bounds make it conservative); on a drifting stream the surge ranks first
// and a steady heavy item does not trend.
#include "ebb/engine/trending.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/namespace.hpp"
#include "support/exact_model.hpp"

namespace ebb::engine {
namespace {

using testing::ExactModel;
using testing::ModelEvent;

constexpr double kShort = 300, kLong = 3600;

NamespaceConfig trend_config(std::uint32_t width, std::uint32_t candidates) {
  NamespaceConfig c;
  c.name = "trend";
  c.all_time = false;
  c.half_lives = {kShort, kLong};
  c.sketch = CountMinShape::with_dimensions(width, 4);
  c.candidates = candidates;
  c.k = 10;
  c.clock = ClockMode::event;
  return c;
}

struct ModelTrend {
  std::string key;
  double score;
};

// The score from exact decayed counts: (O - E) / sqrt(E + 1) with O the
// short count and E = (long count / X_long) x X_short, X(lambda) = (1 -
// e^(-lambda age)) / lambda over the stream's age (first event to now).
std::vector<ModelTrend> model_trending(const ExactModel& model, double now, double min_count) {
  const double ls = std::log(2.0) / kShort, ll = std::log(2.0) / kLong;
  double first = now;
  for (const auto& e : model.events()) first = std::min(first, e.time);
  auto exposure = [&](double lambda) { return (1 - std::exp(-lambda * (now - first))) / lambda; };
  const auto recent = model.counts(ls, now);
  const auto usual = model.counts(ll, now);
  std::vector<ModelTrend> out;
  for (const auto& [key, observed] : recent) {
    if (observed < min_count) continue;
    const double expected = usual.at(key) / exposure(ll) * exposure(ls);
    const double score = (observed - expected) / std::sqrt(expected + 1);
    if (score > 0) out.push_back({key, score});
  }
  std::sort(out.begin(), out.end(), [](const ModelTrend& a, const ModelTrend& b) { return a.score != b.score ? a.score > b.score : a.key < b.key; });
  return out;
}

void feed(Namespace& ns, ExactModel& model, const std::vector<ModelEvent>& events) {
  std::vector<Event> batch;
  for (const auto& e : events) {
    model.add(e.key, e.time, e.weight);
    batch.push_back({e.key, e.time, e.weight});
    if (batch.size() == 500) {
      ns.apply(batch);
      batch.clear();
    }
  }
  if (!batch.empty()) ns.apply(batch);
}

// A stream over two hours where `surge` starts arriving in the last ten
// minutes (in order: the heap tracks every item from its first event).
std::vector<ModelEvent> drifting(std::uint64_t seed, std::size_t universe, const std::string& surge) {
  testing::StreamSpec spec;
  spec.events = 20000;
  spec.universe = universe;
  spec.duration = 7200;
  spec.jitter = 0;
  spec.integer_weights = true;
  spec.max_weight = 1;
  auto events = testing::random_stream(spec, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 600);
  for (int i = 0; i < 300; ++i) events.push_back({surge, spec.start_time + spec.duration - 600 + u(rng), 1});
  std::stable_sort(events.begin(), events.end(), [](const ModelEvent& a, const ModelEvent& b) { return a.time < b.time; });
  return events;
}

TEST(Trending, WithRoomForEveryItemItIsTheExactModelsList) {
  for (std::uint64_t seed : {1, 2, 3}) {
    Namespace ns(trend_config(1 << 16, 1024));
    ExactModel model;
    feed(ns, model, drifting(seed, 200, "breaking"));
    const auto answer = ns.trending(std::nullopt, std::nullopt, 50, 5);
    const auto want = model_trending(model, ns.now(), 5);
    EXPECT_EQ(answer.short_view, ViewSpec::decayed(kShort));
    EXPECT_EQ(answer.long_view, ViewSpec::decayed(kLong));
    ASSERT_EQ(answer.items.size(), std::min<std::size_t>(50, want.size())) << seed;
    for (std::size_t i = 0; i < answer.items.size(); ++i) {
      EXPECT_EQ(answer.items[i].key, want[i].key) << seed << " rank " << i + 1;
      EXPECT_NEAR(answer.items[i].score, want[i].score, 1e-6 * std::max(1.0, want[i].score)) << seed << " " << want[i].key;
    }
    ASSERT_FALSE(answer.items.empty());
    EXPECT_EQ(answer.items[0].key, "breaking") << seed;
    // The heaviest item (key-0) arrives steadily: where it is listed at all,
    // its score is noise (under 3 standard deviations), far under the surge's.
    for (const auto& item : answer.items) {
      if (item.key == "key-0") {
        EXPECT_LT(item.score, 3) << seed;
      }
    }
    EXPECT_GT(answer.items[0].score, 10) << seed;
  }
}

// A cluster's partitions hold disjoint items: each scores its own from the
// stream's start (which only one of them saw), and the union of their
// lists is the whole stream's, score for score.
TEST(Trending, DisjointPartsScoredFromTheStreamsStartMergeIntoTheWholeList) {
  for (std::uint64_t seed : {1, 2}) {
    auto events = drifting(seed, 200, "breaking");
    const double first = events.front().time, last = events.back().time;
    std::vector<std::vector<ModelEvent>> split(4);
    for (const auto& e : events) split[hash_key(e.key) % 4].push_back(e);
    ExactModel model;
    std::vector<std::unique_ptr<Namespace>> parts;
    std::vector<TrendingAnswer> answers;
    double earliest = 0;
    for (std::size_t p = 0; p < split.size(); ++p) {
      // Every part's event clock at the stream's last time (as a cluster's
      // commits move every partition's): an item of its own, too light to list.
      split[p].push_back({"clock-" + std::to_string(p), last, 1e-6});
      parts.push_back(std::make_unique<Namespace>(trend_config(1 << 16, 1024)));
      feed(*parts[p], model, split[p]);
      const auto own = parts[p]->trending(std::nullopt, std::nullopt, 50, 5);
      earliest = earliest == 0 ? own.first_event : std::min(earliest, own.first_event);
      answers.push_back(parts[p]->trending(std::nullopt, std::nullopt, 50, 5, first));
      EXPECT_EQ(answers.back().since, first);
    }
    EXPECT_EQ(earliest, first);
    const auto merged = merge_trending(answers, 50);
    const auto want = model_trending(model, last, 5);
    ASSERT_EQ(merged.items.size(), std::min<std::size_t>(50, want.size())) << seed;
    for (std::size_t i = 0; i < merged.items.size(); ++i) {
      EXPECT_EQ(merged.items[i].key, want[i].key) << seed << " rank " << i + 1;
      EXPECT_NEAR(merged.items[i].score, want[i].score, 1e-6 * std::max(1.0, want[i].score)) << seed << " " << want[i].key;
    }
    EXPECT_EQ(merged.items.at(0).key, "breaking");
    EXPECT_EQ(merged.first_event, first);
    // Scored from its own first event instead, "breaking"'s part would see
    // a young stream: another score.
    const auto& own_part = parts[hash_key("breaking") % 4];
    const auto alone = own_part->trending(std::nullopt, std::nullopt, 50, 5);
    ASSERT_GT(alone.first_event, first) << seed;  // (the stream's first event is another part's)
    ASSERT_FALSE(alone.items.empty());
    EXPECT_NE(alone.items[0].score, merged.items[0].score);
  }
}

TEST(Trending, UnderCollisionsEveryScoreStaysAtOrUnderTheExactOne) {
  for (std::uint64_t seed : {4, 5, 6}) {
    Namespace ns(trend_config(64, 32));  // 2000 keys into 64 columns and 32 candidates
    ExactModel model;
    feed(ns, model, drifting(seed, 2000, "breaking"));
    const auto answer = ns.trending(std::nullopt, std::nullopt, 20, 1);
    const auto exact = model_trending(model, ns.now(), 0);
    std::map<std::string, double> exact_score;
    for (const auto& t : exact) exact_score[t.key] = t.score;
    ASSERT_FALSE(answer.items.empty());
    for (const auto& item : answer.items) {
      ASSERT_TRUE(exact_score.contains(item.key)) << item.key << " listed with score " << item.score << " but does not rise";
      EXPECT_LE(item.score, exact_score[item.key] * (1 + 1e-9) + 1e-9) << seed << " " << item.key;
    }
    EXPECT_EQ(answer.items[0].key, "breaking") << seed;
  }
}

TEST(Trending, MinimumSupportKeepsAHandfulOfEventsOut) {
  Namespace ns(trend_config(1 << 16, 1024));
  const double t0 = 1.7e9;
  std::vector<Event> batch;
  for (int i = 0; i < 3600; ++i) batch.push_back({"steady", t0 + i, 1});
  batch.push_back({"rare", t0 + 3599, 1});
  batch.push_back({"rare", t0 + 3599, 1});
  ns.apply(batch);
  // rare has 2 events: under the support of 5 it is not listed at all.
  for (const auto& item : ns.trending(std::nullopt, std::nullopt, 10, 5).items) EXPECT_NE(item.key, "rare");
  // With a support of 1 it leads: 2 events where its usual rate expects
  // about none; steady, at its usual rate, scores near 0 at most.
  const auto answer = ns.trending(std::nullopt, std::nullopt, 10, 1);
  ASSERT_FALSE(answer.items.empty());
  EXPECT_EQ(answer.items[0].key, "rare");
  for (const auto& item : answer.items) {
    if (item.key == "steady") {
      EXPECT_LT(item.score, 0.1);
    }
  }
}

TEST(Trending, BadQuestionsNameTheParameter) {
  Namespace ns(trend_config(1024, 64));
  auto message = [&](std::optional<double> s, std::optional<double> l, std::optional<std::size_t> k, double min) {
    try {
      (void)ns.trending(s, l, k, min);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(3600, 300, {}, 5), "short: must be a shorter half-life than long (got 1h and 5m)");
  EXPECT_EQ(message(60, {}, {}, 5), "short: namespace 'trend' keeps no half-life 1m (it keeps: 5m, 1h)");
  EXPECT_EQ(message({}, 7200, {}, 5), "long: namespace 'trend' keeps no half-life 2h (it keeps: 5m, 1h)");
  EXPECT_EQ(message({}, {}, 0, 5).rfind("k:", 0), 0u);
  EXPECT_EQ(message({}, {}, {}, -1), "min_count: must be a finite number >= 0");
  NamespaceConfig one = trend_config(1024, 64);
  one.half_lives = {300};
  Namespace single(one);
  try {
    (void)single.trending({}, {}, {}, 5);
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("short: trending compares two half-lives; namespace 'trend' keeps 1", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace ebb::engine
