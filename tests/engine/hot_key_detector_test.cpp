// The hot-key detector against a brute-force model of decayed rates: no hot
// key missed at any evaluation, detection and cooling at the evaluation the
// exact rates determine, no flapping at the threshold (and flapping without
// hysteresis, so the test can tell), completeness reported when the
// candidates are too few.
#include "ebb/engine/hot_key_detector.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/namespace.hpp"

namespace ebb::engine {
namespace {

constexpr double kStart = 1.7e9;

NamespaceConfig detector_config(std::uint32_t candidates = 256) {
  NamespaceConfig c;
  c.name = "hot";
  c.sketch = CountMinShape::with_dimensions(1 << 16, 4);
  c.candidates = candidates;
  c.clock = ClockMode::event;
  return c;
}

struct Arrival {
  std::string key;
  double time;
};

// Exact decayed rates: lambda x sum of e^-lambda(now - t) over the arrivals so far.
class ExactRates {
 public:
  explicit ExactRates(double half_life) : lambda_(std::log(2.0) / half_life) {}
  void add(const std::string& key, double t) {
    auto& [s, at] = state_[key];
    s = s * std::exp(-lambda_ * (t - at)) + 1;
    at = t;
  }
  double rate(const std::string& key, double now) const {
    auto it = state_.find(key);
    return it == state_.end() ? 0 : lambda_ * it->second.first * std::exp(-lambda_ * (now - it->second.second));
  }
  const std::map<std::string, std::pair<double, double>>& keys() const { return state_; }

 private:
  double lambda_;
  std::map<std::string, std::pair<double, double>> state_;  // decayed count as of `at`, at
};

// Feeds arrivals (sorted by time) in 0.1 s steps, evaluating after each;
// `check` sees the detector, the model and the events of each evaluation.
template <typename Check>
void run(HotKeyDetector& d, ExactRates& model, const std::vector<Arrival>& arrivals, double until, Check check) {
  PreparedBatch b;
  std::size_t at = 0;
  for (double now = kStart + 0.1; now <= until + 1e-9; now += 0.1) {
    b.reserve(arrivals.size());
    b.count = 0;
    for (; at < arrivals.size() && arrivals[at].time <= now; ++at) {
      b.items[b.count] = arrivals[at].key;
      b.hashes[b.count] = hash_key(arrivals[at].key);
      b.times[b.count] = arrivals[at].time;
      b.weights[b.count] = 1;
      ++b.count;
      model.add(arrivals[at].key, arrivals[at].time);
    }
    if (b.count > 0) {
      b.min_time = b.times[0];
      b.max_time = b.times[b.count - 1];
      b.now = b.max_time;
      d.apply(b);
    }
    check(now, d.evaluate(now));
  }
}

// `rate` events/s for `key` from `from` to `to`, evenly spaced.
void steady(std::vector<Arrival>& out, const std::string& key, double rate, double from, double to) {
  for (double t = from + 1 / rate; t <= to; t += 1 / rate) out.push_back({key, t});
}

void by_time(std::vector<Arrival>& a) {
  std::stable_sort(a.begin(), a.end(), [](const Arrival& x, const Arrival& y) { return x.time < y.time; });
}

TEST(HotKeyDetector, NoHotKeyIsMissedAndDetectionAndCoolingComeWhenTheExactRatesSay) {
  HotKeyDetector d(detector_config(), {100, 10, 0.8});
  ExactRates model(10);
  std::vector<Arrival> arrivals;
  steady(arrivals, "double", 200, kStart, kStart + 60);  // 2x the threshold for a minute, then silent
  steady(arrivals, "half", 50, kStart, kStart + 120);    // never hot
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40000; ++i) arrivals.push_back({"noise" + std::to_string(rng() % 4000), kStart + 120.0 * (rng() % 1000000) / 1e6});
  by_time(arrivals);

  double hot_at = 0, cool_at = 0, exact_hot_at = 0, exact_cool_at = 0;
  bool was_hot = false;
  run(d, model, arrivals, kStart + 120, [&](double now, const std::vector<HotKeyEvent>& events) {
    // The exact model: hot from the first evaluation at the threshold, cool
    // from the first under 0.8 of it.
    const double exact = model.rate("double", now);
    if (!was_hot && exact >= 100) was_hot = true, exact_hot_at = now;
    if (was_hot && exact_cool_at == 0 && exact < 80) exact_cool_at = now;
    for (const auto& e : events) {
      if (e.key.key == "double" && e.hot) hot_at = e.key.since;
      if (e.key.key == "double" && !e.hot) cool_at = now;
      EXPECT_NE(e.key.key, "half");
    }
    ASSERT_TRUE(d.complete());
    // No false negative: every key at the threshold by the exact rates is hot.
    std::map<std::string, double> hot;
    for (const auto& k : d.hot()) hot[k.key] = k.rate;
    for (const auto& [key, _] : model.keys()) {
      const double r = model.rate(key, now);
      if (r >= 100) {
        ASSERT_TRUE(hot.contains(key)) << key << " at " << r << " events/s, " << now - kStart << " s in";
      }
      if (hot.contains(key)) {
        EXPECT_GE(hot[key], r * (1 - 1e-9));  // reported rates never under
      }
    }
  });
  // One half-life after it starts at 2x (at the 0.1 s grid); cooled once
  // its rate, 2x (1 - 2^-6) after six half-lives, decayed under 0.8x.
  EXPECT_DOUBLE_EQ(hot_at, exact_hot_at);
  EXPECT_NEAR(hot_at - kStart, 10.0, 0.1 + 1e-6);
  EXPECT_DOUBLE_EQ(cool_at, exact_cool_at);
  EXPECT_NEAR(cool_at - (kStart + 60), 10 * std::log2(200 * (1 - std::pow(2.0, -6)) / 80), 0.1 + 1e-6);
}

// Poisson arrivals at exactly the threshold: the decayed rate wanders a few
// events/s either side of it. With hysteresis the key turns hot once and
// stays so; without (cool_fraction 1) it flaps.
TEST(HotKeyDetector, AKeyAtTheThresholdDoesNotFlap) {
  auto transitions = [](double cool_fraction) {
    HotKeyDetector d(detector_config(), {100, 10, cool_fraction});
    ExactRates model(10);
    std::vector<Arrival> arrivals;
    std::mt19937_64 rng(3);
    std::exponential_distribution<double> gap(100);
    for (double t = kStart + gap(rng); t < kStart + 600; t += gap(rng)) arrivals.push_back({"edge", t});
    int n = 0;
    run(d, model, arrivals, kStart + 600, [&](double, const std::vector<HotKeyEvent>& events) { n += static_cast<int>(events.size()); });
    return n;
  };
  EXPECT_EQ(transitions(0.8), 1);
  EXPECT_GT(transitions(1.0), 4);
}

TEST(HotKeyDetector, TooFewCandidatesAreReportedAsIncomplete) {
  HotKeyDetector d(detector_config(4), {100, 10, 0.8});
  ExactRates model(10);
  std::vector<Arrival> arrivals;
  for (int k = 0; k < 8; ++k) steady(arrivals, "k" + std::to_string(k), 150, kStart, kStart + 30);
  by_time(arrivals);
  bool incomplete = false;
  run(d, model, arrivals, kStart + 30, [&](double, const std::vector<HotKeyEvent>&) { incomplete = incomplete || !d.complete(); });
  EXPECT_TRUE(incomplete);
  EXPECT_FALSE(d.complete());
  // All 8 keys are hot; the list holds the candidates' number of them.
  EXPECT_EQ(d.hot().size(), 4u);
}

TEST(HotKeyDetector, AFullListKeepsTheHottestKeys) {
  // 4 candidates; a..d hot at 150/s for 30 s, then they stop and e..h
  // come at 2000/s for 2 s. a..d leave the candidates but still read hot
  // from the sketch (about 114/s at the end): the hotter newcomers (about
  // 259/s) must push them out of the full list.
  HotKeyDetector d(detector_config(4), {100, 10, 0.8});
  ExactRates model(10);
  std::vector<Arrival> arrivals;
  for (const char* k : {"a", "b", "c", "d"}) steady(arrivals, k, 150, kStart, kStart + 30);
  for (const char* k : {"e", "f", "g", "h"}) steady(arrivals, k, 2000, kStart + 30, kStart + 32);
  by_time(arrivals);
  run(d, model, arrivals, kStart + 32, [](double, const std::vector<HotKeyEvent>&) {});
  EXPECT_FALSE(d.complete());
  std::vector<std::string> hot;
  for (const auto& k : d.hot()) hot.push_back(k.key);
  std::sort(hot.begin(), hot.end());
  EXPECT_EQ(hot, (std::vector<std::string>{"e", "f", "g", "h"}));
}

TEST(HotKeyDetector, RefusesBadSettingsAndChangesNothing) {
  EXPECT_THROW(HotKeyDetector(detector_config(), {0, 10, 0.8}), InvalidArgument);
  EXPECT_THROW(HotKeyDetector(detector_config(), {100, 0, 0.8}), InvalidArgument);
  EXPECT_THROW(HotKeyDetector(detector_config(), {100, 10, 1.5}), InvalidArgument);
  EXPECT_THROW(HotKeyDetector(detector_config(), {std::nan(""), 10, 0.8}), InvalidArgument);
  HotKeyDetector d(detector_config(), {100, 10, 0.8});
  EXPECT_THROW(d.set_threshold(-1), InvalidArgument);
  EXPECT_EQ(d.options().threshold, 100);
  d.set_threshold(50);
  EXPECT_EQ(d.options().threshold, 50);
}

// Through a namespace: the detector is fed by every batch, kept in the
// namespace's checkpoint, and follows run-time settings.
NamespaceConfig hot_namespace(double threshold = 20, double half_life = 10) {
  NamespaceConfig c = detector_config();
  c.all_time = true;
  c.hot_key_threshold = threshold;
  c.hot_key_half_life = half_life;
  return c;
}

// `per_second` events of `key` each second from kStart for `seconds` s,
// one batch a second (times spread within it).
void feed(Namespace& ns, const std::string& key, int per_second, int seconds, double from = kStart) {
  for (int s = 0; s < seconds; ++s) {
    std::vector<Event> batch;
    for (int i = 0; i < per_second; ++i) batch.push_back({key, from + s + (i + 1.0) / per_second, 1});
    ns.apply(batch);
  }
}

TEST(NamespaceHotKeys, DetectorFollowsTheNamespacesEventsAndRestoresFromACheckpoint) {
  Namespace ns(hot_namespace());
  // Before its first event an event-clock namespace has no "now": an
  // evaluation then must not judge at the wall clock (and pin it there).
  EXPECT_TRUE(ns.evaluate_hot_keys().empty());
  EXPECT_EQ(ns.hot_keys()->evaluated_at(), 0);
  feed(ns, "a", 40, 20);
  feed(ns, "b", 5, 20);
  const auto changes = ns.evaluate_hot_keys();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].hot);
  EXPECT_EQ(changes[0].key.key, "a");
  // The exact decayed rate of a (no collision in a 65536-wide sketch).
  ExactRates model(10);
  for (int s = 0; s < 20; ++s) {
    for (int i = 0; i < 40; ++i) model.add("a", kStart + s + (i + 1.0) / 40);
  }
  EXPECT_NEAR(changes[0].key.rate, model.rate("a", kStart + 20), 1e-9 * model.rate("a", kStart + 20));
  EXPECT_EQ(ns.hot_keys()->evaluated_at(), kStart + 20);

  Namespace restored(hot_namespace());
  restored.restore_state(ns.serialize_state());
  ASSERT_NE(restored.hot_keys(), nullptr);
  ASSERT_EQ(restored.hot_keys()->hot().size(), 1u);
  EXPECT_EQ(restored.hot_keys()->hot()[0].key, "a");
  EXPECT_EQ(restored.hot_keys()->hot()[0].since, changes[0].key.since);
  EXPECT_EQ(restored.serialize_state(), ns.serialize_state());
  // Both judge the same from then on.
  feed(ns, "c", 60, 5, kStart + 20);
  feed(restored, "c", 60, 5, kStart + 20);
  EXPECT_EQ(ns.evaluate_hot_keys().size(), restored.evaluate_hot_keys().size());
  EXPECT_EQ(restored.serialize_state(), ns.serialize_state());
}

TEST(NamespaceHotKeys, AStateWithoutTheConfigurationsDetectorIsRefused) {
  NamespaceConfig off = hot_namespace();
  off.hot_key_threshold.reset();
  Namespace without(off);
  feed(without, "a", 40, 3);
  Namespace with(hot_namespace());
  const std::string before = with.serialize_state();
  EXPECT_THROW(with.restore_state(without.serialize_state()), FormatError);
  EXPECT_EQ(with.serialize_state(), before);
  EXPECT_THROW(without.restore_state(before), FormatError);
  // Another half-life: another detector.
  Namespace other(hot_namespace(20, 5));
  EXPECT_THROW(other.restore_state(before), FormatError);
}

TEST(NamespaceHotKeys, RunTimeSettingsKeepOrRestartTheCounts) {
  Namespace ns(hot_namespace(100));
  feed(ns, "a", 40, 20);
  EXPECT_TRUE(ns.evaluate_hot_keys().empty());  // 40/s < 100/s
  // A lower threshold keeps the counts: a is hot at once.
  NamespaceConfig next = ns.config();
  next.hot_key_threshold = 20;
  EXPECT_TRUE(ns.reconfigure(next).empty());
  auto changes = ns.evaluate_hot_keys();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].key.key, "a");
  // A new half-life restarts the detector: its hot keys cool.
  next.hot_key_half_life = 5;
  auto cooled = ns.reconfigure(next);
  ASSERT_EQ(cooled.size(), 1u);
  EXPECT_FALSE(cooled[0].hot);
  EXPECT_EQ(cooled[0].key.key, "a");
  EXPECT_TRUE(ns.hot_keys()->hot().empty());
  EXPECT_TRUE(ns.evaluate_hot_keys().empty());  // nothing counted since
  // Off: no detector, nothing to evaluate; a bad setting changes nothing.
  next.hot_key_threshold.reset();
  ns.reconfigure(next);
  EXPECT_EQ(ns.hot_keys(), nullptr);
  EXPECT_TRUE(ns.evaluate_hot_keys().empty());
  next.hot_key_threshold = -1;
  EXPECT_THROW(ns.reconfigure(next), InvalidArgument);
  next.hot_key_threshold = 10;
  next.hot_key_half_life = 0.5;
  EXPECT_THROW(ns.reconfigure(next), InvalidArgument);
  EXPECT_EQ(ns.hot_keys(), nullptr);
  EXPECT_FALSE(ns.config().hot_key_threshold.has_value());
}

}  // namespace
}  // namespace ebb::engine
