// Exact counting (`"counting": "exact"`) against the brute-force model:
// every view's list and point counts are the model's sums (decayed ones to
// floating-point precision, windows and all-time exactly with integer
// weights), in any arrival order; eviction past max_items is reported and
// the bounds stay true; a checkpoint restores the same table.
#include "ebb/engine/exact_view.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/namespace.hpp"
#include "support/exact_model.hpp"

namespace ebb::engine {
namespace {

using testing::ModelEvent;

constexpr double kMinute = 60, kHour = 3600, kDay = 86400;

NamespaceConfig exact_config(std::uint64_t max_items = 1'000'000) {
  NamespaceConfig c;
  c.name = "x";
  c.k = 10;
  c.counting = Counting::exact;
  c.max_items = max_items;
  c.all_time = true;
  c.windows = {kMinute, kHour, kDay};
  c.half_lives = {300, kHour};
  c.clock = ClockMode::event;
  c.max_event_age = 30 * kDay;
  c.max_time_jump = 30 * kDay;
  return c;
}

// Events over about two days with idle gaps, jitter of a few seconds and
// some events up to 20 minutes late; integer weights (exact sums).
std::vector<ModelEvent> stream(std::uint64_t seed, std::size_t n, std::size_t keys) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<ModelEvent> out;
  double t = 1.7e9;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = u(rng);
    if (r < 0.002) t += 3600 * 6 * u(rng);
    else if (r < 0.02) t += 600 * u(rng);
    else t += 2 * u(rng);
    double at = t - 3 * u(rng);
    if (u(rng) < 0.05) at = t - 1200 * u(rng);
    const auto key = static_cast<std::size_t>(std::pow(u(rng), 2) * static_cast<double>(keys));
    out.push_back({"k" + std::to_string(key), std::floor(at * 4) / 4, std::floor(1 + 5 * u(rng))});
  }
  return out;
}

void apply_in_batches(Namespace& ns, const std::vector<ModelEvent>& events, std::size_t from, std::size_t to) {
  std::vector<Event> batch;
  for (std::size_t i = from; i < to; ++i) batch.push_back({events[i].key, events[i].time, events[i].weight});
  ns.apply(batch);
}

// The model's count of every key under a view at `now`, over [start, end]
// for windows.
std::map<std::string, double> model_counts(const std::vector<ModelEvent>& seen, const ViewSpec& v, double start, double end, double now) {
  std::map<std::string, double> out;
  for (const auto& e : seen) {
    if (v.kind == ViewSpec::Kind::window) {
      if (e.time >= start && e.time <= end) out[e.key] += e.weight;
    } else if (v.kind == ViewSpec::Kind::decayed) {
      out[e.key] += e.weight * std::exp(-std::log(2.0) / v.half_life * (now - e.time));
    } else {
      out[e.key] += e.weight;
    }
  }
  return out;
}

void expect_answer_matches(const TopKAnswer& a, const std::map<std::string, double>& want, const std::string& where) {
  SCOPED_TRACE(where + " " + a.view.label());
  std::vector<std::pair<std::string, double>> ranked;
  double total = 0;
  for (const auto& [k, v] : want) {
    total += v;
    if (v > 0) ranked.emplace_back(k, v);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.second != y.second ? x.second > y.second : x.first < y.first; });
  const bool decayed = a.view.kind == ViewSpec::Kind::decayed;
  if (decayed) {
    EXPECT_LT(testing::rel_diff(a.total, total), 1e-9);
  } else {
    EXPECT_EQ(a.total, total);
  }
  EXPECT_EQ(a.accuracy.type, "exact");
  EXPECT_EQ(a.accuracy.max_error, 0);
  ASSERT_EQ(a.items.size(), std::min<std::size_t>(ranked.size(), 20));
  for (std::size_t i = 0; i < a.items.size(); ++i) {
    const auto& item = a.items[i];
    // Decayed ties may order differently by rounding: compare the count at that rank.
    if (!decayed) {
      EXPECT_EQ(item.key, ranked[i].first) << "rank " << i + 1;
    }
    if (decayed) {
      EXPECT_LT(testing::rel_diff(item.estimate, ranked[i].second), 1e-9) << item.key;
      EXPECT_LT(testing::rel_diff(item.estimate, want.at(item.key)), 1e-9) << item.key;
    } else {
      EXPECT_EQ(item.estimate, ranked[i].second) << item.key;
    }
    EXPECT_EQ(item.lower, item.estimate);
    EXPECT_EQ(item.upper, item.estimate);
  }
}

class ExactProperty : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(ExactProperty, EveryViewIsTheModelsSum) {
  const std::uint64_t seed = GetParam();
  const auto events = stream(seed, 20000, 60);
  Namespace ns(exact_config());
  std::vector<ModelEvent> seen;
  std::mt19937_64 rng(seed * 3 + 1);
  std::map<double, std::uint64_t> dropped;
  std::size_t at = 0, batches = 0;
  while (at < events.size()) {
    const std::size_t n = std::min<std::size_t>(events.size() - at, 1 + rng() % 300);
    apply_in_batches(ns, events, at, at + n);
    const double now = ns.now();
    for (std::size_t i = at; i < at + n; ++i) {
      seen.push_back(events[i]);
      for (double w : {kMinute, kHour, kDay}) dropped[w] += events[i].time < now - w;
    }
    at += n;
    if (++batches % 20 != 0) continue;
    for (const auto& spec : {ViewSpec::all_time(), ViewSpec::decayed(300), ViewSpec::decayed(kHour), ViewSpec::sliding(kMinute),
                             ViewSpec::sliding(kHour), ViewSpec::sliding(kDay)}) {
      const auto live = ns.top(spec, 20);
      if (spec.kind == ViewSpec::Kind::window) {
        EXPECT_EQ(live.window_end, now);
        EXPECT_LE(live.window_start, now - spec.window);
        EXPECT_GT(live.window_start, now - spec.window - live.granularity);
      }
      const auto want = model_counts(seen, spec, live.window_start, live.window_end, now);
      expect_answer_matches(live, want, "now");
      // Point reads agree, and an item never seen reads 0 with bound 0.
      for (const auto& item : live.items) {
        const auto p = ns.count(item.key, spec);
        EXPECT_EQ(p.item.estimate, item.estimate);
        EXPECT_TRUE(p.tracked);
      }
      const auto none = ns.count("never-seen", spec);
      EXPECT_EQ(none.item.upper, 0);
      EXPECT_FALSE(none.tracked);
      if (spec.kind != ViewSpec::Kind::window) {
        EXPECT_FALSE(ns.top_at(spec, 20, now - 1).has_value());  // decayed views keep no past
        continue;
      }
      // As it was a little earlier: the end on a bucket boundary, from memory.
      const double back = std::floor(std::uniform_real_distribution<double>(1, spec.window / 5)(rng));
      const auto past = ns.top_at(spec, 20, now - back);
      ASSERT_TRUE(past.has_value()) << spec.label();
      EXPECT_LE(past->window_end, now - back);
      EXPECT_GT(past->window_end, now - back - past->granularity);
      std::map<std::string, double> before;  // [start, end): the end is a boundary
      for (const auto& e : seen) {
        if (e.time >= past->window_start && e.time < past->window_end) before[e.key] += e.weight;
      }
      expect_answer_matches(*past, before, "past");
    }
  }
  const auto stats = ns.stats();
  for (const auto& v : stats.views) {
    if (v.view.kind == ViewSpec::Kind::window) {
      EXPECT_EQ(v.dropped, dropped[v.view.window]) << v.view.label();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, ExactProperty, ::testing::Values(1, 2, 3));

TEST(ExactCounting, ArrivalOrderDoesNotMatter) {
  auto events = stream(9, 5000, 40);
  // Times within the guards of either order.
  Namespace forward(exact_config()), shuffled(exact_config());
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.time < b.time; });
  apply_in_batches(forward, events, 0, events.size());
  std::mt19937_64 rng(4);
  std::shuffle(events.begin(), events.end(), rng);
  for (std::size_t at = 0; at < events.size(); at += 100) apply_in_batches(shuffled, events, at, std::min(events.size(), at + 100));
  ASSERT_EQ(forward.now(), shuffled.now());
  for (const auto& spec : {ViewSpec::all_time(), ViewSpec::decayed(300), ViewSpec::decayed(kHour), ViewSpec::sliding(kHour), ViewSpec::sliding(kDay)}) {
    const auto a = forward.top(spec, 40), b = shuffled.top(spec, 40);
    ASSERT_EQ(a.items.size(), b.items.size());
    for (std::size_t i = 0; i < a.items.size(); ++i) {
      EXPECT_LT(testing::rel_diff(a.items[i].estimate, b.items[i].estimate), 1e-9) << spec.label() << " rank " << i + 1;
    }
  }
}

TEST(ExactCounting, ARankingPassAnswersEveryItemAsCountDoes) {
  for (const Counting counting : {Counting::exact, Counting::sketch}) {
    NamespaceConfig c = exact_config(30);
    c.counting = counting;
    if (counting == Counting::sketch) c.sketch = CountMinShape::with_dimensions(1024, 4);
    Namespace ns(c);
    const auto events = stream(12, 3000, 60);
    apply_in_batches(ns, events, 0, events.size());
    const std::vector<std::string> items = {"k0", "k3", "never", "k17", "k0"};
    for (const auto& spec : {ViewSpec::all_time(), ViewSpec::decayed(300), ViewSpec::sliding(kHour)}) {
      const auto pass = ns.counts(items, spec);
      ASSERT_EQ(pass.size(), items.size());
      for (std::size_t i = 0; i < items.size(); ++i) {
        const auto one = ns.count(items[i], spec);
        EXPECT_EQ(pass[i].item, one.item) << spec.label() << " " << items[i];
        EXPECT_EQ(pass[i].rate, one.rate);
        EXPECT_EQ(pass[i].as_of, one.as_of);
        EXPECT_EQ(pass[i].accuracy.max_error, one.accuracy.max_error);
      }
    }
    const std::vector<std::string> bad = {"k0", ""};
    try {
      (void)ns.counts(bad, ViewSpec::all_time());
      ADD_FAILURE() << "an empty item id was taken";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("item_ids[1]: must be 1 to 1024 bytes"), std::string::npos) << e.what();
    }
  }
}

TEST(ExactCounting, EvictionTakesTheLowestScoreAndIsReported) {
  NamespaceConfig c = exact_config(3);
  c.windows = {kHour};
  c.half_lives = {kHour};
  Namespace ns(c);
  const double t = 1.7e9;
  ns.apply(std::vector<Event>{{"a", t, 5}, {"b", t, 3}, {"c", t, 1}});
  // d is new past max_items: c (the lowest under the half-life) goes.
  ns.apply(std::vector<Event>{{"d", t, 2}});
  auto top = ns.top(ViewSpec::all_time(), 10);
  ASSERT_EQ(top.items.size(), 3u);
  EXPECT_EQ(top.items[0].key, "a");
  EXPECT_EQ(top.items[1].key, "b");
  EXPECT_EQ(top.items[2].key, "d");
  EXPECT_EQ(top.total, 11);  // every event counted, the evicted one's too
  EXPECT_EQ(top.accuracy.evicted_items, 1u);
  EXPECT_EQ(top.accuracy.items, 3u);
  EXPECT_EQ(top.accuracy.max_error, 1);  // c's weight
  EXPECT_EQ(top.items[2].lower, 2);
  EXPECT_EQ(top.items[2].upper, 3);  // d may be a returning item that lost up to 1
  // c is gone: at most what eviction took, in every view.
  for (const auto& spec : {ViewSpec::all_time(), ViewSpec::decayed(kHour), ViewSpec::sliding(kHour)}) {
    const auto p = ns.count("c", spec);
    EXPECT_FALSE(p.tracked);
    EXPECT_EQ(p.item.estimate, 0);
    EXPECT_EQ(p.item.lower, 0);
    EXPECT_DOUBLE_EQ(p.item.upper, 1) << spec.label();
  }
  // c comes back: it evicts d (2 < 3 < 5) and starts again from its new weight.
  ns.apply(std::vector<Event>{{"c", t, 4}});
  top = ns.top(ViewSpec::all_time(), 10);
  EXPECT_EQ(top.items[1].key, "c");
  EXPECT_EQ(top.items[1].lower, 4);
  EXPECT_EQ(top.items[1].upper, 7);  // + the 3 evicted so far (c's 1 and d's 2)
  EXPECT_EQ(top.accuracy.evicted_items, 2u);
  EXPECT_EQ(ns.count("d").item.upper, 3);
}

TEST(ExactCounting, WithoutHalfLivesTheLowestAllTimeCountIsEvicted) {
  NamespaceConfig c = exact_config(2);
  c.half_lives.clear();
  Namespace ns(c);
  const double t = 1.7e9;
  ns.apply(std::vector<Event>{{"old-heavy", t, 100}, {"new-light", t + 10, 1}});
  ns.apply(std::vector<Event>{{"newest", t + 20, 2}});
  const auto top = ns.top(ViewSpec::all_time(), 10);
  ASSERT_EQ(top.items.size(), 2u);
  EXPECT_EQ(top.items[0].key, "old-heavy");
  EXPECT_EQ(top.items[1].key, "newest");
  EXPECT_EQ(top.accuracy.max_error, 1);
}

TEST(ExactCounting, WithWindowsOnlyTheLeastRecentlySeenIsEvicted) {
  NamespaceConfig c = exact_config(2);
  c.half_lives.clear();
  c.all_time = false;
  c.windows = {kHour};
  Namespace ns(c);
  const double t = 1.7e9;
  ns.apply(std::vector<Event>{{"old-heavy", t, 100}, {"new-light", t + 10, 1}});
  ns.apply(std::vector<Event>{{"newest", t + 20, 1}});
  const auto top = ns.top(ViewSpec::sliding(kHour), 10);
  ASSERT_EQ(top.items.size(), 2u);
  EXPECT_EQ(top.items[0].key, "new-light");
  EXPECT_EQ(top.items[1].key, "newest");
  EXPECT_EQ(top.accuracy.max_error, 100);
}

TEST(ExactCounting, ManyEvictionsKeepTheIndexAndHeapConsistent) {
  // A small cap under a large universe: every count the table reports is
  // still the exact count since the item last entered, and totals hold.
  NamespaceConfig c = exact_config(50);
  Namespace ns(c);
  const auto events = stream(5, 20000, 400);
  std::map<std::string, double> since_entry;  // the model of what a held record counts (all-time)
  for (std::size_t at = 0; at < events.size(); at += 97) {
    const std::size_t end = std::min(events.size(), at + 97);
    apply_in_batches(ns, events, at, end);
  }
  const auto top = ns.top(ViewSpec::all_time(), 1000);
  EXPECT_EQ(top.accuracy.items, 50u);
  EXPECT_EQ(top.items.size(), 50u);
  double held = 0;
  for (const auto& item : top.items) held += item.estimate;
  double all = 0;
  for (const auto& e : events) all += e.weight;
  EXPECT_EQ(top.total, all);
  EXPECT_EQ(held + top.accuracy.max_error, all);  // what is held and what was evicted make up everything
  for (const auto& item : top.items) {
    EXPECT_TRUE(ns.count(item.key).tracked);
    EXPECT_EQ(ns.count(item.key).item.estimate, item.estimate);
  }
}

TEST(ExactCounting, CheckpointRestoresTheSameTableAndTheSameFuture) {
  NamespaceConfig c = exact_config(30);
  const auto events = stream(11, 12000, 200);
  Namespace straight(c), restored(c);
  // In many batches over two days: records idle for longer than their
  // rings keep hold buckets no window reads any more.
  auto feed = [&](Namespace& ns, std::size_t from, std::size_t to) {
    for (std::size_t at = from; at < to; at += 150) apply_in_batches(ns, events, at, std::min(to, at + 150));
  };
  feed(straight, 0, 6000);
  const std::string blob = straight.serialize_state();
  restored.restore_state(blob);
  EXPECT_EQ(restored.serialize_state(), blob);
  // The same later events evict the same records in both.
  feed(straight, 6000, events.size());
  feed(restored, 6000, events.size());
  EXPECT_EQ(restored.serialize_state(), straight.serialize_state());
  for (const auto& spec : {ViewSpec::all_time(), ViewSpec::decayed(300), ViewSpec::sliding(kDay)}) {
    const auto a = straight.top(spec, 30), b = restored.top(spec, 30);
    ASSERT_EQ(a.items.size(), b.items.size());
    for (std::size_t i = 0; i < a.items.size(); ++i) EXPECT_EQ(a.items[i], b.items[i]);
    EXPECT_EQ(a.accuracy.max_error, b.accuracy.max_error);
  }
}

TEST(ExactCounting, ARecordIdleLongerThanItsRingsIsCheckpointedWithoutItsOldBuckets) {
  NamespaceConfig c = exact_config();
  c.windows = {kHour};
  Namespace ns(c), restored(c);
  ns.apply(std::vector<Event>{{"x", 1.7e9, 1}});
  ns.apply(std::vector<Event>{{"y", 1.7e9 + 3 * kHour, 1}});  // x's bucket is past what the ring keeps
  const std::string blob = ns.serialize_state();
  ASSERT_NO_THROW(restored.restore_state(blob));
  EXPECT_EQ(restored.serialize_state(), blob);
  EXPECT_EQ(restored.count("x", ViewSpec::sliding(kHour)).item.estimate, 0);
  EXPECT_EQ(restored.count("x", ViewSpec::all_time()).item.estimate, 1);
  EXPECT_EQ(restored.count("y", ViewSpec::sliding(kHour)).item.estimate, 1);
}

TEST(ExactCounting, ADamagedCheckpointIsRefusedAndChangesNothing) {
  NamespaceConfig c = exact_config();
  Namespace ns(c);
  apply_in_batches(ns, stream(2, 500, 20), 0, 500);
  const std::string good = ns.serialize_state();
  Namespace other(c);
  apply_in_batches(other, stream(3, 100, 5), 0, 100);
  const std::string before = other.serialize_state();
  for (std::size_t at : {good.size() / 3, good.size() / 2, good.size() - 20}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    EXPECT_THROW(other.restore_state(bad), FormatError) << at;
    EXPECT_EQ(other.serialize_state(), before);
  }
  // Another configuration's table does not fit.
  NamespaceConfig smaller = c;
  smaller.max_items = 10;
  Namespace wrong(smaller);
  EXPECT_THROW(wrong.restore_state(good), FormatError);
}

TEST(ExactCounting, MemoryIsBoundedByMaxItems) {
  NamespaceConfig c = exact_config(1000);
  Namespace ns(c);
  apply_in_batches(ns, stream(8, 50000, 5000), 0, 50000);
  const auto stats = ns.stats();
  EXPECT_LE(stats.memory_bytes, ExactTable::bytes_max(c) + 1000 * 64 /* keys */ + 65536);
  EXPECT_EQ(ns.top(ViewSpec::all_time(), 1000).accuracy.items, 1000u);
}

}  // namespace
}  // namespace ebb::engine
