// Window views against a brute-force model: every answer states a cover
// [start, end], and the counts over it must be the exact sums of the events
// in it (the fixtures keep keys few and sketches wide, so no two keys share
// all their cells and a Count-Min sum is exact).
#include "ebb/engine/window_view.hpp"

#include <gtest/gtest.h>

#include <functional>

#include <algorithm>
#include <map>
#include <random>

#include "ebb/core/error.hpp"
#include "ebb/engine/namespace.hpp"
#include "ebb/engine/time_rings.hpp"
#include "support/exact_model.hpp"

namespace ebb::engine {
namespace {

using testing::ModelEvent;

constexpr double kMinute = 60, kHour = 3600, kDay = 86400;

NamespaceConfig window_config() {
  NamespaceConfig c;
  c.name = "w";
  c.k = 10;
  c.all_time = true;
  c.windows = {kMinute, kHour, kDay};
  c.half_lives = {300};
  c.sketch = CountMinShape::with_dimensions(1024, 4);
  c.window_sketch_width = 8192;
  c.candidates = 64;
  c.clock = ClockMode::event;
  c.max_event_age = 30 * kDay;
  c.max_time_jump = 30 * kDay;
  return c;
}

// Events drifting forward over about two days, with idle gaps of minutes to
// hours, out-of-order arrivals within a few seconds, and some events up to
// 20 minutes late. Integer weights: sums are exact in doubles.
std::vector<ModelEvent> window_stream(std::uint64_t seed, std::size_t n, double start) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<ModelEvent> out;
  double t = start;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = u(rng);
    if (r < 0.002) t += 3600 * 6 * u(rng);        // a long idle gap
    else if (r < 0.02) t += 600 * u(rng);          // a short one
    else t += 2 * u(rng);
    double at = t - 3 * u(rng);
    if (u(rng) < 0.05) at = t - 1200 * u(rng);     // late
    const int key = static_cast<int>(std::pow(u(rng), 2) * 40);  // skewed over 40 keys
    out.push_back({"k" + std::to_string(key), std::floor(at * 4) / 4, std::floor(1 + 5 * u(rng))});
  }
  return out;
}

struct Exact {
  std::map<std::string, double> counts;
  double total = 0;
};

// The model's sums over [start, end] (`closed_end`) or [start, end).
Exact exact_in(const std::vector<ModelEvent>& seen, double start, double end, bool closed_end) {
  Exact e;
  for (const auto& ev : seen) {
    if (ev.time < start || ev.time > end || (!closed_end && ev.time == end)) continue;
    e.counts[ev.key] += ev.weight;
    e.total += ev.weight;
  }
  return e;
}

std::vector<std::pair<std::string, double>> ranked(const Exact& e) {
  std::vector<std::pair<std::string, double>> r(e.counts.begin(), e.counts.end());
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  return r;
}

void expect_matches(const TopKAnswer& answer, const std::vector<ModelEvent>& seen, bool closed_end, const std::string& where) {
  SCOPED_TRACE(where + " window " + answer.view.name() + " [" + std::to_string(answer.window_start) + ", " + std::to_string(answer.window_end) + "]");
  const Exact exact = exact_in(seen, answer.window_start, answer.window_end, closed_end);
  EXPECT_EQ(answer.total, exact.total);
  const auto want = ranked(exact);
  ASSERT_EQ(answer.items.size(), std::min<std::size_t>(want.size(), 40));
  for (std::size_t i = 0; i < answer.items.size(); ++i) {
    const auto& item = answer.items[i];
    EXPECT_EQ(item.key, want[i].first) << "rank " << i + 1;
    EXPECT_EQ(item.estimate, want[i].second) << item.key;
    EXPECT_EQ(item.upper, want[i].second) << item.key;
    EXPECT_LE(item.lower, want[i].second) << item.key;
  }
}

class WindowProperty : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(WindowProperty, AnswersAreTheExactSumsOverTheirStatedCover) {
  const std::uint64_t seed = GetParam();
  const auto stream = window_stream(seed, 30000, 1.7e9);
  auto ns = std::make_unique<Namespace>(window_config());
  std::vector<ModelEvent> seen;
  std::map<double, std::uint64_t> dropped;  // per window, the model's count
  std::mt19937_64 rng(seed * 7 + 1);
  std::size_t at = 0, batches = 0;
  while (at < stream.size()) {
    const std::size_t n = std::min<std::size_t>(stream.size() - at, 1 + rng() % 300);
    std::vector<Event> batch;
    for (std::size_t i = at; i < at + n; ++i) batch.push_back({stream[i].key, stream[i].time, stream[i].weight});
    ns->apply(batch);
    const double now = ns->now();
    for (std::size_t i = at; i < at + n; ++i) {
      seen.push_back(stream[i]);
      for (double w : {kMinute, kHour, kDay}) dropped[w] += stream[i].time < now - w;
    }
    at += n;
    if (++batches % 15 != 0) continue;

    for (double w : {kMinute, kHour, kDay}) {
      const auto spec = ViewSpec::sliding(w);
      const auto live = ns->top(spec, 40);
      EXPECT_EQ(live.window_end, now);
      EXPECT_LE(live.window_start, now - w);                         // the whole window, at least
      EXPECT_GT(live.window_start, now - w - live.granularity);      // and less than a bucket more
      expect_matches(live, seen, true, "now");
      // As it was a little earlier: from the rings, with the end on a bucket boundary.
      const double back = std::floor(std::uniform_real_distribution<double>(0, w / 5)(rng));
      const auto past = ns->top_at(spec, 40, now - back);
      ASSERT_TRUE(past.has_value()) << "window " << w << " at now - " << back;
      EXPECT_LE(past->window_end, now - back);
      EXPECT_GT(past->window_end, now - back - past->granularity);
      if (back > 0) expect_matches(*past, seen, false, "past");
      // Point queries agree with the list.
      for (const auto& item : live.items) {
        const auto point = ns->count(item.key, spec);
        EXPECT_EQ(point.item.estimate, item.estimate);
        EXPECT_EQ(point.window_start, live.window_start);
      }
    }
    if (batches % 60 == 0) {
      // A restart in the middle: the state carries everything.
      auto fresh = std::make_unique<Namespace>(window_config());
      fresh->restore_state(ns->serialize_state());
      ns = std::move(fresh);
    }
  }
  const auto stats = ns->stats();
  for (const auto& v : stats.views) {
    if (v.view.kind == ViewSpec::Kind::window) {
      EXPECT_EQ(v.dropped, dropped[v.view.window]) << v.view.label();
    }
  }
  EXPECT_GT(dropped[kMinute], 0u);  // the fixture does exercise late events
}

INSTANTIATE_TEST_SUITE_P(Seeds, WindowProperty, ::testing::Values(1, 2, 3));

// A cluster's partitions each count some of a namespace's events (by key),
// and every one moves to the batch's newest event time whether it had a
// part or not (advance_newest): live and as-of answers then cover the
// windows a single namespace fed everything covers, and the parts' counts
// add up to its counts.
TEST(WindowPartitions, PartsThatTurnWithTheNewestEventAnswerAsTheWhole) {
  const auto stream = window_stream(9, 12000, 1.7e9);
  Namespace whole(window_config());
  std::vector<std::unique_ptr<Namespace>> parts;
  for (int p = 0; p < 3; ++p) parts.push_back(std::make_unique<Namespace>(window_config()));
  std::mt19937_64 rng(17);
  std::size_t at = 0, batches = 0, compared = 0;
  while (at < stream.size()) {
    const std::size_t n = std::min<std::size_t>(stream.size() - at, 1 + rng() % 200);
    std::vector<Event> all;
    std::vector<std::vector<Event>> split(parts.size());
    for (std::size_t i = at; i < at + n; ++i) {
      const Event e{stream[i].key, stream[i].time, stream[i].weight};
      all.push_back(e);
      split[std::hash<std::string>{}(stream[i].key) % parts.size()].push_back(e);
    }
    whole.apply(all);
    for (std::size_t p = 0; p < parts.size(); ++p) {
      if (!split[p].empty()) parts[p]->apply(split[p]);
      parts[p]->advance_newest(whole.stats().newest_time);
    }
    at += n;
    if (++batches % 20 != 0) continue;
    const double now = whole.now();
    for (double w : {kMinute, kHour, kDay}) {
      const auto spec = ViewSpec::sliding(w);
      for (double back : {0.0, std::floor(w / 50), std::floor(w / 7), std::floor(w / 5)}) {
        const auto want = whole.top_at(spec, 1000, now - back);
        for (const auto& part : parts) {
          const auto got = part->top_at(spec, 1000, now - back);
          ASSERT_EQ(got.has_value(), want.has_value()) << "window " << w << " back " << back;
          if (!want) continue;
          EXPECT_EQ(got->window_start, want->window_start) << "window " << w << " back " << back;
          EXPECT_EQ(got->window_end, want->window_end) << "window " << w << " back " << back;
        }
        if (!want) continue;
        ++compared;
        double total = 0;
        std::map<std::string, double> counts;
        for (const auto& part : parts) {
          const auto got = part->top_at(spec, 1000, now - back);
          total += got->total;
          for (const auto& item : got->items) counts[item.key] += item.estimate;
        }
        EXPECT_EQ(total, want->total) << "window " << w << " back " << back;
        for (const auto& item : want->items) EXPECT_EQ(counts[item.key], item.estimate) << item.key << " window " << w << " back " << back;
      }
    }
  }
  EXPECT_GT(compared, 50u);
}

// A checkpoint freezes a namespace under its lock and writes the bytes
// after releasing it, while ingest goes on: the frozen state is the state
// at freezing (whatever the rings write next: heads, late events into
// closed buckets, reused slots), and the live state is what it would have
// been with no freezing at all.
TEST(WindowState, AFrozenStateIsTheStateAtFreezingAndFreezingChangesNothing) {
  const auto stream = window_stream(5, 20000, 1.7e9);
  Namespace ns(window_config()), never_frozen(window_config());
  auto feed = [&](std::size_t begin, std::size_t end) {
    for (std::size_t at = begin; at < end; at += 97) {
      std::vector<Event> batch;
      for (std::size_t i = at; i < std::min(end, at + 97); ++i) batch.push_back({stream[i].key, stream[i].time, stream[i].weight});
      ns.apply(batch);
      never_frozen.apply(batch);
    }
  };
  std::vector<std::pair<std::function<std::string()>, std::string>> frozen;  // each with the bytes it must give
  for (std::size_t begin = 0; begin < stream.size(); begin += 2500) {
    feed(begin, std::min(stream.size(), begin + 2500));
    frozen.emplace_back(ns.freeze_state(), ns.serialize_state());
    if (frozen.size() % 3 == 0) frozen.erase(frozen.begin());  // some let go early, some are kept to the end
  }
  for (const auto& [freeze, bytes] : frozen) EXPECT_EQ(freeze(), bytes);
  EXPECT_EQ(ns.serialize_state(), never_frozen.serialize_state());
  for (double w : {kMinute, kHour, kDay}) {
    const auto a = ns.top(ViewSpec::sliding(w), 10), b = never_frozen.top(ViewSpec::sliding(w), 10);
    ASSERT_EQ(a.items.size(), b.items.size());
    for (std::size_t i = 0; i < a.items.size(); ++i) EXPECT_EQ(a.items[i].key, b.items[i].key);
  }
}

TEST(TimeRings, PlansLevelsFromTheLadderAndHoldsEachWindowWithRoomToSpare) {
  EXPECT_EQ(window_granularity(60), 1);
  EXPECT_EQ(window_granularity(300), 10);
  EXPECT_EQ(window_granularity(3600), 60);
  EXPECT_EQ(window_granularity(86400), 3600);
  EXPECT_EQ(window_granularity(7 * 86400), 3600);
  EXPECT_EQ(window_granularity(30 * 86400), 86400);
  const std::vector<double> windows = {60, 3600, 86400, 7 * 86400};
  const auto levels = plan_ring_levels(windows);
  // 1m: 62 one-second buckets + a quarter; 1h: 62 minutes + a quarter; 7d:
  // 170 hours + a quarter; 10 s and 10 min bridge the gaps.
  const std::vector<RingLevel> want = {{1, 78}, {10, 18}, {60, 78}, {600, 18}, {3600, 213}};
  EXPECT_EQ(levels, want);
}

TEST(TimeRings, ALiveHourIsTheCurrentHourThenWholeBucketsBackToAMinuteBoundary) {
  TimeRings rings({3600}, CountMinShape::with_dimensions(1024, 4), UpdatePolicy::conservative, 16);
  const double day = 1700006400;  // a midnight (UTC)
  const double t = day + 14 * 3600 + 37 * 60 + 23.5;  // 14:37:23.5
  const std::string key = "a";
  PreparedBatch batch;
  batch.reserve(1);
  batch.items[0] = key;
  batch.hashes[0] = 1;
  batch.times[0] = t;
  batch.weights[0] = 1;
  batch.count = 1;
  batch.min_time = batch.max_time = batch.now = t;
  rings.apply(batch);
  const auto cover = rings.cover(3600, t);
  ASSERT_TRUE(cover.reached);
  EXPECT_EQ(cover.end, t);
  EXPECT_EQ(cover.start, day + 13 * 3600 + 37 * 60);  // 13:37:00: the minute holding 13:37:23.5
  EXPECT_EQ(cover.granularity, 60);
  // Levels 1 s, 10 s and 1 min; the minute's head holds the heads below it,
  // and only the finest has anything yet.
  EXPECT_EQ(rings.levels().size(), 3u);
  EXPECT_EQ(cover.open.size(), 1u);
  EXPECT_TRUE(cover.closed.empty());
  // An hour later the start is rounded down to 14:37:23, which still holds
  // the event; a second more and it has left the window.
  EXPECT_EQ(rings.cover(3600, t + 3600).open.size(), 1u);
  const auto later = rings.cover(3600, t + 3601);
  EXPECT_EQ(later.start, t - 0.5 + 1);
  EXPECT_TRUE(later.open.empty() && later.closed.empty());
}

TEST(TimeRings, ResetsBucketsItReusesAndStopsGrowingOnceEveryRingHasWrapped) {
  NamespaceConfig c = window_config();
  c.windows = {kMinute, kHour};
  Namespace ns(c);
  std::vector<Event> batch;
  const std::string key = "x";
  std::size_t memory_after_3h = 0;
  for (double t = 1.7e9; t < 1.7e9 + 6 * kHour; t += 7) {
    batch.assign(1, Event{key, t, 1});
    ns.apply(batch);
    if (memory_after_3h == 0 && t >= 1.7e9 + 3 * kHour) memory_after_3h = ns.stats().memory_bytes;
  }
  EXPECT_EQ(ns.stats().memory_bytes, memory_after_3h);
  const auto hour = ns.top(ViewSpec::sliding(kHour), 1);
  ASSERT_EQ(hour.items.size(), 1u);
  EXPECT_EQ(hour.items[0].estimate, hour.total);
  // 1h of one event every 7 s, from a minute boundary back: exactly the events in the cover.
  const auto& v = dynamic_cast<const WindowView&>(ns.view(ViewSpec::sliding(kHour)));
  const double span = hour.window_end - hour.window_start;
  EXPECT_NEAR(hour.total, span / 7, 1.0);
  EXPECT_EQ(v.rings().unplaced(), 0u);
}

TEST(TimeRings, RestoreRefusesStateOfOtherWindowsAndDamagedBlobs) {
  NamespaceConfig c = window_config();
  Namespace ns(c);
  std::vector<Event> batch = {{"a", 1.7e9, 1}, {"b", 1.7e9 + 100, 2}};
  ns.apply(batch);
  const std::string blob = ns.serialize_state();
  NamespaceConfig other = c;
  other.windows = {kMinute, 2 * kHour, kDay};
  Namespace different(other);
  EXPECT_THROW(different.restore_state(blob), FormatError);
  for (std::size_t cut : {blob.size() / 3, blob.size() / 2, blob.size() - 1}) {
    Namespace fresh(c);
    EXPECT_THROW(fresh.restore_state(blob.substr(0, cut)), FormatError) << cut;
  }
  Namespace good(c);
  good.restore_state(blob);
  EXPECT_EQ(good.top(ViewSpec::sliding(kHour), 5).total, 3);
}

TEST(TimeRings, EventsOlderThanEveryLevelAreUnplacedAndDroppedForEachWindow) {
  NamespaceConfig c = window_config();
  c.windows = {kMinute};
  Namespace ns(c);
  std::vector<Event> batch = {{"new", 1.7e9, 1}};
  ns.apply(batch);
  batch = {{"old", 1.7e9 - kHour, 1}};  // the 1 s level keeps 78 s, the 10 s level 180 s
  ns.apply(batch);
  const auto& v = dynamic_cast<const WindowView&>(ns.view(ViewSpec::sliding(kMinute)));
  EXPECT_EQ(v.rings().unplaced(), 1u);
  EXPECT_EQ(v.dropped(), 1u);
  EXPECT_EQ(ns.top(ViewSpec::all_time(), 5).total, 2);  // the all-time view counts it
  EXPECT_EQ(ns.top(ViewSpec::sliding(kMinute), 5).total, 1);
  EXPECT_FALSE(ns.top_at(ViewSpec::sliding(kMinute), 5, 1.7e9 - kHour + 30).has_value());  // beyond memory
  EXPECT_THROW((void)ns.top_at(ViewSpec::sliding(kMinute), 5, 1.7e9 + 1), InvalidArgument);  // after now
}

TEST(TimeRings, AsOfAnswersCoverTheWholeWindowOrNoneAndReachBackWithoutGaps) {
  // One event a second for 1000 s; every window asked at every second back:
  // an answer covers at least the window, ends at or before the time asked,
  // holds exactly the events in it, and once the rings stop reaching they
  // do not reach again further back.
  NamespaceConfig c = window_config();
  c.windows = {kMinute, 300, kHour, kDay};
  Namespace ns(c);
  const double t0 = 1700000000;
  for (int i = 0; i <= 1000; ++i) {
    std::vector<Event> batch = {{"x", t0 + i, 1}};
    ns.apply(batch);
  }
  for (double w : {kMinute, 300.0, kHour, kDay}) {
    bool lost = false;
    for (int back = 1; back <= 1000; back += 7) {
      const double at = t0 + 1000 - back;
      const auto a = ns.top_at(ViewSpec::sliding(w), 5, at);
      if (!a) {
        lost = true;
        continue;
      }
      SCOPED_TRACE("window " + std::to_string(w) + " back " + std::to_string(back));
      EXPECT_FALSE(lost) << "reached again after a gap";
      EXPECT_LE(a->window_end, at);
      EXPECT_GT(a->window_end, at - a->granularity);
      EXPECT_GE(a->window_end - a->window_start, w);
      EXPECT_LT(a->window_end - a->window_start, w + a->granularity);
      // Events at whole seconds in [start, end).
      const double first = std::max(t0, std::ceil(a->window_start)), last = std::min(t0 + 1000, std::ceil(a->window_end) - 1);
      EXPECT_EQ(a->total, std::max(0.0, last - first + 1));
    }
  }
}

TEST(TimeRings, FarFutureEventTimesAreInNoWindowAndQueriesStayCheap) {
  // An event-clock namespace without a jump limit takes a nanosecond
  // timestamp: the all-time view counts it, no window can.
  NamespaceConfig c = window_config();
  c.max_time_jump = INFINITY;
  Namespace ns(c);
  std::vector<Event> batch = {{"a", 1.7e9, 1}, {"ns", 1.7e18, 1}};
  ns.apply(batch);
  EXPECT_EQ(ns.top(ViewSpec::all_time(), 5).total, 2);
  const auto day = ns.top(ViewSpec::sliding(kDay), 5);  // now = 1.7e18: no bucket is that late
  EXPECT_EQ(day.total, 0);
  EXPECT_TRUE(day.items.empty());
  const auto& v = dynamic_cast<const WindowView&>(ns.view(ViewSpec::sliding(kDay)));
  EXPECT_EQ(v.rings().unplaced(), 1u);
  EXPECT_EQ(v.rings().newest(), 1.7e9);
  auto past = ns.top_at(ViewSpec::sliding(kHour), 5, 1.7e9 + 1);
  ASSERT_TRUE(past.has_value());
  EXPECT_EQ(past->total, 1);
  // And the state restores (the newest placed event is the finest head's).
  Namespace back(c);
  back.restore_state(ns.serialize_state());
  EXPECT_EQ(back.top_at(ViewSpec::sliding(kHour), 5, 1.7e9 + 1)->total, 1);
}

}  // namespace
}  // namespace ebb::engine
