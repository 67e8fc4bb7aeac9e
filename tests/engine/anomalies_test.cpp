// Rank-jump anomalies against a brute-force model: on an exact namespace
// (bounds equal to the counts) the answer is the model's, item for item,
// score, ranks and rank jump; on a small sketch every listed jump is one
// the true counts make too (the bounds keep it conservative); an injected
// burst is found; noise alone, and a stream younger than its baseline,
// report nothing.
#include "ebb/engine/anomalies.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "ebb/engine/namespace.hpp"
#include "support/exact_model.hpp"

namespace ebb::engine {
namespace {

using testing::ModelEvent;

constexpr double kWindow = 60, kBaseline = 3600, kStart = 1.7e9;

NamespaceConfig config(Counting counting, std::uint32_t width = 8192) {
  NamespaceConfig c;
  c.name = "news";
  c.all_time = false;
  c.windows = {kWindow, kBaseline};
  c.window_sketch_width = width;
  c.sketch = CountMinShape::with_dimensions(width, 4);
  c.candidates = 200;
  c.k = 10;
  c.counting = counting;
  c.clock = ClockMode::event;
  return c;
}

void feed(Namespace& ns, const std::vector<ModelEvent>& events) {
  std::vector<Event> batch;
  for (const auto& e : events) {
    batch.push_back({e.key, e.time, e.weight});
    if (batch.size() == 500) {
      ns.apply(batch);
      batch.clear();
    }
  }
  if (!batch.empty()) ns.apply(batch);
}

// What the service reads on a single node, live, against the 1h window.
AnomalyAnswer anomalies_of(const Namespace& ns, const AnomalyThresholds& t, std::size_t k) {
  const auto window = ViewSpec::sliding(kWindow), baseline = ViewSpec::sliding(kBaseline);
  TopKAnswer current = ns.top(window, anomaly_current_depth(k));
  TopKAnswer before = ns.top(baseline, anomaly_baseline_depth(k, t));
  std::vector<std::string> keys;
  for (const auto& item : current.items) keys.push_back(item.key);
  const auto points = ns.counts(keys, baseline);
  return find_anomalies(std::move(current), std::move(before), points, t, k);
}

// A steady Zipf stream over `seconds` ending at kStart + seconds, plus
// `burst` events of each burst key in its last 40 s.
std::vector<ModelEvent> stream(std::uint64_t seed, double seconds, std::size_t events, const std::vector<std::string>& burst_keys,
                               std::size_t burst) {
  testing::StreamSpec spec;
  spec.events = events;
  spec.universe = 400;
  spec.skew = 1.0;
  spec.start_time = kStart;
  spec.duration = seconds;
  spec.jitter = 20;
  spec.integer_weights = true;
  spec.max_weight = 1;  // weight 1: the score's units are events
  auto out = testing::random_stream(spec, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> u(0, 40);
  for (const auto& key : burst_keys) {
    for (std::size_t i = 0; i < burst; ++i) out.push_back({key, kStart + seconds - u(rng), 1});
  }
  // The newest event last, so that every window ends at the same "now".
  std::stable_sort(out.begin(), out.end(), [](const ModelEvent& a, const ModelEvent& b) { return a.time < b.time; });
  std::shuffle(out.begin(), out.end() - 1, rng);
  return out;
}

// Exact counts of events in [start, end] (the windows' true boundaries).
std::map<std::string, double> counts_in(const std::vector<ModelEvent>& events, double start, double end, double& total) {
  std::map<std::string, double> out;
  total = 0;
  for (const auto& e : events) {
    if (e.time >= start && e.time <= end) {
      out[e.key] += e.weight;
      total += e.weight;
    }
  }
  return out;
}

struct ModelItem {
  std::string key;
  double score;
  std::size_t rank;
  std::optional<std::size_t> baseline_rank;
  std::optional<long long> rank_jump;
};

// The anomalies the long way: every item ranked by its exact count, each
// list cut at the depth the engine reads, then anomalies.hpp's rules.
std::vector<ModelItem> model_anomalies(const std::vector<ModelEvent>& events, const TopKAnswer& current_frame, const TopKAnswer& baseline_frame,
                                       const AnomalyThresholds& t, std::size_t k) {
  double total_c = 0, total_b = 0;
  const auto now = counts_in(events, current_frame.window_start, current_frame.window_end, total_c);
  const auto then = counts_in(events, baseline_frame.window_start, baseline_frame.window_end, total_b);
  auto ranked = [](const std::map<std::string, double>& counts) {
    std::vector<std::pair<std::string, double>> out(counts.begin(), counts.end());
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    return out;
  };
  auto current = ranked(now), baseline = ranked(then);
  const double unlisted = current.size() > anomaly_current_depth(k) ? current[anomaly_current_depth(k)].second : 0;
  current.resize(std::min(current.size(), anomaly_current_depth(k)));
  baseline.resize(std::min(baseline.size(), anomaly_baseline_depth(k, t)));
  const double lc = current_frame.window_end - current_frame.window_start, lb = baseline_frame.window_end - baseline_frame.window_start;
  std::vector<ModelItem> out;
  for (std::size_t i = 0; i < current.size(); ++i) {
    const auto& [key, observed] = current[i];
    const double before = then.contains(key) ? then.at(key) : 0;
    const double expected = std::max(before * lc / lb, (before + 1) * total_c / total_b);
    const double score = (observed - expected) / std::sqrt(expected * (1 + std::max(lc / lb, total_c / total_b)) + 1);
    if (observed < t.min_count || score < t.min_score) continue;
    ModelItem item{key, score, i + 1, std::nullopt, std::nullopt};
    long long ahead_then = 0, ahead_now = 0;
    for (std::size_t j = 0; j < baseline.size(); ++j) {
      if (baseline[j].first == key) item.baseline_rank = j + 1;
      else if (baseline[j].second > before) ++ahead_then;
    }
    for (std::size_t j = 0; j < current.size(); ++j) {
      if (j != i && current[j].second >= observed) ++ahead_now;
    }
    if (unlisted < observed) item.rank_jump = ahead_then - ahead_now;
    const bool rate = observed / expected >= t.min_jump;
    const bool rank = item.rank_jump && *item.rank_jump >= std::max<long long>(1, t.min_rank_jump);
    if (rate || rank) out.push_back(item);
  }
  std::sort(out.begin(), out.end(), [](const ModelItem& a, const ModelItem& b) { return a.score != b.score ? a.score > b.score : a.key < b.key; });
  if (out.size() > k) out.resize(k);
  return out;
}

TEST(Anomalies, AnExactNamespaceAnswersAsTheModelItemForItem) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    const auto events = stream(seed, 7200, 30000, {"burst-a", "burst-b", "key-150"}, 20 + seed * 5);
    Namespace ns(config(Counting::exact));
    feed(ns, events);
    AnomalyThresholds t;
    t.min_rank_jump = 5 + seed;  // rank jumps alone list some items too
    t.min_jump = 2;
    t.min_score = 2;
    const auto answer = anomalies_of(ns, t, 10);
    const auto model = model_anomalies(events, answer.current, answer.baseline, t, 10);
    ASSERT_EQ(answer.items.size(), model.size());
    ASSERT_FALSE(model.empty());
    for (std::size_t i = 0; i < model.size(); ++i) {
      SCOPED_TRACE(model[i].key);
      const auto& got = answer.items[i];
      EXPECT_EQ(got.key, model[i].key);
      EXPECT_NEAR(got.score, model[i].score, 1e-9 * std::max(1.0, model[i].score));
      EXPECT_EQ(got.rank, model[i].rank);
      EXPECT_EQ(got.baseline_rank, model[i].baseline_rank);
      EXPECT_EQ(got.rank_jump, model[i].rank_jump);
      EXPECT_EQ(got.count.lower, got.count.upper);  // exact: the bounds are the count
    }
  }
}

TEST(Anomalies, OnASmallSketchEveryListedJumpIsOneTheTrueCountsMake) {
  for (std::uint64_t seed = 11; seed <= 16; ++seed) {
    SCOPED_TRACE(seed);
    const auto events = stream(seed, 7200, 40000, {"burst-a", "burst-b"}, 60);
    Namespace ns(config(Counting::sketch, 64));  // collisions everywhere
    feed(ns, events);
    AnomalyThresholds t;
    t.min_score = 3;
    const auto answer = anomalies_of(ns, t, 20);
    double total_c = 0, total_b = 0;
    const auto now = counts_in(events, answer.current.window_start, answer.current.window_end, total_c);
    const auto then = counts_in(events, answer.baseline.window_start, answer.baseline.window_end, total_b);
    const double rate_scale = (answer.current.window_end - answer.current.window_start) /
                              (answer.baseline.window_end - answer.baseline.window_start),
                 share_scale = total_c / total_b;
    bool found_a = false, found_b = false;
    for (const auto& item : answer.items) {
      SCOPED_TRACE(item.key);
      const double observed = now.at(item.key);
      const double before = then.contains(item.key) ? then.at(item.key) : 0;
      const double expected = std::max(before * rate_scale, (before + 1) * share_scale);
      EXPECT_LE(item.count.lower, observed);
      EXPECT_GE(item.expected, expected - 1e-9);
      EXPECT_GE((observed - expected) / std::sqrt(expected * (1 + std::max(rate_scale, share_scale)) + 1), item.score - 1e-9);
      EXPECT_GE(observed, t.min_count);
      found_a |= item.key == "burst-a";
      found_b |= item.key == "burst-b";
    }
    EXPECT_TRUE(found_a);
    EXPECT_TRUE(found_b);
  }
}

TEST(Anomalies, AnInjectedBurstIsFoundFirstAndNoiseAloneReportsNothing) {
  for (std::uint64_t seed = 21; seed <= 25; ++seed) {
    SCOPED_TRACE(seed);
    Namespace quiet(config(Counting::sketch));
    feed(quiet, stream(seed, 7200, 40000, {}, 0));
    EXPECT_TRUE(anomalies_of(quiet, {}, 10).items.empty());

    Namespace news(config(Counting::sketch));
    feed(news, stream(seed, 7200, 40000, {"breaking"}, 40));
    const auto answer = anomalies_of(news, {}, 10);
    ASSERT_EQ(answer.items.size(), 1u);
    const auto& item = answer.items.front();
    EXPECT_EQ(item.key, "breaking");
    EXPECT_EQ(item.count.lower, 40);
    EXPECT_EQ(item.baseline_count.upper, 40);  // the burst is all it ever counted (no collision at this width)
    EXPECT_GT(item.jump, 3);
    EXPECT_TRUE(item.rate_jumped);
    EXPECT_FALSE(item.baseline_rank.has_value() && *item.baseline_rank <= item.rank);
  }
}

TEST(Anomalies, AStreamYoungerThanItsBaselineDoesNotLookLikeNews) {
  // Ten minutes of a steady stream: the 1h window holds ten minutes, so
  // its rate over the hour is a sixth of the truth; the traffic's share
  // keeps every steady item from looking six times hotter.
  for (std::uint64_t seed = 31; seed <= 36; ++seed) {
    SCOPED_TRACE(seed);
    Namespace ns(config(Counting::sketch));
    feed(ns, stream(seed, 600, 20000, {}, 0));
    EXPECT_TRUE(anomalies_of(ns, {}, 10).items.empty());
  }
}

TEST(Anomalies, AnItemThatMayTieRanksBehindAndAnEmptyOrThinBaselineListsNothing) {
  TopKAnswer current, baseline;
  current.window_start = 0, current.window_end = 60, current.total = 200;
  baseline.window_start = 0, baseline.window_end = 60, baseline.total = 100;
  // c may count 90 as a does: a's worst rank is 2.
  current.items = {{"a", 100, 90, 110}, {"c", 60, 40, 90}};
  baseline.items = {{"x", 50, 50, 50}, {"y", 40, 40, 40}};
  std::vector<PointAnswer> points(2);
  points[0].item = {"a", 1, 1, 1};
  points[1].item = {"c", 60, 40, 90};
  AnomalyThresholds t;
  t.min_rank_jump = 1;
  auto answer = find_anomalies(current, baseline, points, t, 10);
  ASSERT_EQ(answer.items.size(), 1u);
  EXPECT_EQ(answer.items[0].key, "a");
  EXPECT_EQ(answer.items[0].rank_jump, 3 - 2);  // best baseline rank 3 (x and y surely ahead)
  // The shifted window counted nothing (a namespace younger than it):
  // nothing to compare with.
  baseline.items.clear();
  baseline.total = 0;
  points[0].item = {"a", 0, 0, 0};
  points[1].item = {"c", 0, 0, 0};
  answer = find_anomalies(current, baseline, points, t, 10);
  EXPECT_TRUE(answer.items.empty());
  EXPECT_EQ(answer.candidates, 2u);
  // One that counted a single event of another item: a and c's absence is
  // no evidence, their share of it (one event) expects the whole window.
  baseline.items = {{"z", 1, 1, 1}};
  baseline.total = 1;
  answer = find_anomalies(current, baseline, points, t, 10);
  EXPECT_TRUE(answer.items.empty());
}

TEST(Anomalies, RankJumpsAreBoundedByWhatTheListsLeaveOutOrLack) {
  // A hand-made pair of lists: the current list's unlisted bound passes
  // b's lower bound (its worst rank is unknown: no rank jump), not a's.
  TopKAnswer current, baseline;
  current.window_start = 0, current.window_end = 60, current.total = 200;
  baseline.window_start = 0, baseline.window_end = 3600, baseline.total = 12000;
  current.items = {{"a", 100, 90, 110}, {"b", 20, 10, 30}};
  current.unlisted_upper = 15;
  baseline.items = {{"x", 5000, 4900, 5100}, {"y", 4000, 3900, 4100}, {"a", 100, 95, 110}};
  baseline.unlisted_upper = 50;
  std::vector<PointAnswer> points(2);
  points[0].item = {"a", 100, 95, 110};
  points[1].item = {"b", 0, 0, 0};
  AnomalyThresholds t;
  t.min_score = 0;
  t.min_count = 0;
  t.min_jump = 0;
  const auto answer = find_anomalies(current, baseline, points, t, 10);
  ASSERT_EQ(answer.items.size(), 2u);
  const auto& b = answer.items[0].key == "b" ? answer.items[0] : answer.items[1];
  const auto& a = answer.items[0].key == "a" ? answer.items[0] : answer.items[1];
  // a: best baseline rank 3 (x and y surely ahead), worst current rank 1.
  EXPECT_EQ(a.baseline_rank, 3u);
  EXPECT_EQ(a.rank_jump, 2);
  // E = max(110 x 60 / 3600, (110 + 1) x 200 / 12000) = 111 / 60.
  EXPECT_DOUBLE_EQ(a.expected, 111.0 / 60);
  EXPECT_DOUBLE_EQ(a.jump, 90 / (111.0 / 60));
  EXPECT_DOUBLE_EQ(a.score, (90 - 111.0 / 60) / std::sqrt(111.0 / 60 * (1 + 1.0 / 60) + 1));
  EXPECT_FALSE(b.rank_jump.has_value());
  EXPECT_DOUBLE_EQ(b.expected, 1.0 / 60);  // one event, at the traffic's share
  EXPECT_FALSE(b.baseline_rank.has_value());
  EXPECT_TRUE(b.rate_jumped);

  // A cluster's partial answer: ranks are unknown (the missing partition's
  // items may rank ahead), and an item whose baseline count did not come
  // (an empty point) is not listed.
  current.coverage.partitions = 8;
  current.coverage.missing = {3};
  points[1] = PointAnswer{};
  const auto partial = find_anomalies(current, baseline, points, t, 10);
  ASSERT_EQ(partial.items.size(), 1u);
  EXPECT_EQ(partial.items[0].key, "a");
  EXPECT_FALSE(partial.items[0].rank_jump.has_value());
  EXPECT_TRUE(partial.current.coverage.partial());
}

}  // namespace
}  // namespace ebb::engine
