#include "ebb/engine/namespace.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/decayed_view.hpp"
#include "ebb/sketch/augmented_heap/augmented_heap.hpp"
#include "ebb/sketch/candidate_heap/candidate_heap.hpp"
#include "ebb/sketch/count_min/count_min.hpp"
#include "support/exact_model.hpp"

namespace ebb::engine {
namespace {

using testing::ExactModel;

constexpr double kTol = 1e-9;

NamespaceConfig small_config() {
  NamespaceConfig c;
  c.name = "test";
  c.k = 20;
  c.half_lives = {0.5, 60, 3600};
  c.sketch = CountMinShape::with_dimensions(1024, 4);
  c.candidates = 64;
  c.clock = ClockMode::event;
  return c;
}

std::vector<Event> as_events(const std::vector<testing::ModelEvent>& stream) {
  std::vector<Event> out;
  for (const auto& e : stream) out.push_back({e.key, e.time, e.weight});
  return out;
}

double lambda_of(const ViewSpec& v) { return v.kind == ViewSpec::Kind::decayed ? std::log(2.0) / v.half_life : 0; }

// Every view of a namespace, fed random weighted out-of-order batches:
// reported bounds hold against the brute-force model, items above the
// guarantee threshold are reported, point queries bound every item.
class NamespaceProperty : public ::testing::TestWithParam<std::tuple<std::uint64_t, SummaryKind>> {};

TEST_P(NamespaceProperty, EveryViewKeepsHonestBounds) {
  const auto [seed, summary] = GetParam();
  testing::StreamSpec spec;
  spec.events = 12000;
  spec.universe = 800;
  spec.duration = 600;  // 1200 half-lives of the 0.5 s view: rebases happen
  spec.jitter = 2;
  auto stream = testing::random_stream(spec, seed);
  auto config = small_config();
  config.summary = summary;
  Namespace ns(config);
  ExactModel model;
  std::mt19937_64 rng(seed);
  auto events = as_events(stream);
  for (std::size_t i = 0; i < events.size();) {
    const std::size_t n = std::min<std::size_t>(1 + rng() % 700, events.size() - i);
    ns.apply(std::span<const Event>(events.data() + i, n));
    i += n;
  }
  for (const auto& e : stream) model.add(e.key, e.time, e.weight);
  const double now = ns.now();
  EXPECT_EQ(now, std::max_element(stream.begin(), stream.end(), [](auto& a, auto& b) { return a.time < b.time; })->time);
  for (const auto& view : ns.views()) {
    const double lambda = lambda_of(view->spec());
    const auto truth = model.counts(lambda, now);
    const double total = model.total(lambda, now);
    const auto answer = ns.top(view->spec(), config.candidates);
    ASSERT_LT(testing::rel_diff(answer.total, total), kTol) << view->spec().label();
    std::set<std::string> reported;
    for (const auto& item : answer.items) {
      reported.insert(item.key);
      const double t = truth.at(item.key);
      const double slack = total * 1e-12;  // far-past events underflow to 0 in either computation
      ASSERT_LE(item.lower, t * (1 + kTol) + slack) << item.key << " " << view->spec().label();
      ASSERT_GE(item.upper, t * (1 - kTol) - slack) << item.key << " " << view->spec().label();
    }
    for (const auto& [key, count] : truth) {
      if (count > answer.accuracy.guarantee_threshold * (1 + kTol) + total * 1e-12) {
        ASSERT_TRUE(reported.contains(key)) << key << " " << view->spec().label();
      }
      const auto point = ns.count(key, view->spec());
      ASSERT_LE(point.item.lower, count * (1 + kTol) + total * 1e-12) << key;
      ASSERT_GE(point.item.upper, count * (1 - kTol) - total * 1e-12) << key;
    }
  }
  // The tiny half-life really did rebase.
  const auto* fast = dynamic_cast<const DecayedView*>(ns.views()[1].get());
  ASSERT_NE(fast, nullptr);
  EXPECT_GT(fast->rebases(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Streams, NamespaceProperty,
                         ::testing::Combine(::testing::Values(1, 2, 3),
                                            ::testing::Values(SummaryKind::candidate_heap, SummaryKind::space_saving)),
                         [](const auto& info) {
                           return "seed" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) == SummaryKind::candidate_heap ? "_candidate_heap" : "_space_saving");
                         });

// A cluster partition checks its part of a batch against the clock the
// writing node checked it against, and moves its clock as the batch does
// even when it counted none of it: the same checks, the same "now".
TEST(Namespace, AnEventClockChecksAtTheWritersClockAndMovesWithoutEvents) {
  auto config = small_config();  // event clock
  config.max_event_age = 100;
  Namespace writer(config), partition(config);
  writer.apply(std::vector<Event>{{"a", 1000, 1}});
  // The partition has seen nothing; the writer's clock is 1000.
  const std::vector<Event> old = {{"b", 950, 1}};
  writer.stage(old, 2000);
  const double before = writer.clock_before_staged(), after = writer.newest_after_staged();
  EXPECT_EQ(before, 1000);
  EXPECT_EQ(after, 1000);
  partition.advance_newest(1200);  // ahead: its own check would refuse b (250 s old)
  EXPECT_THROW(partition.stage(old, 2000), BatchError);
  partition.stage_logged(old, 2000, before);  // what the writer accepted counts
  partition.apply_staged();
  EXPECT_EQ(partition.count("b").item.estimate, 1);
  EXPECT_EQ(partition.now(), 1200);  // b did not move it back
  // The writer checked a batch whole, in order: [1000 + 0.9 d, 1000 + 1.8 d]
  // steps under a day each. This partition's part is the second event
  // alone, 1.8 d past the clock the writer started from: counted all the same.
  const std::vector<Event> far = {{"c", 1000 + 1.8 * 86400, 1}};
  EXPECT_THROW(Namespace(config).stage(far, 2000), BatchError);
  partition.stage_logged(far, 2000, before);
  partition.apply_staged();
  EXPECT_EQ(partition.count("c").item.estimate, 1);
  // A batch this partition has no part of moves its clock all the same.
  Namespace idle(config);
  idle.advance_newest(1500);
  EXPECT_EQ(idle.now(), 1500);
  EXPECT_EQ(idle.stats().events, 0u);
  idle.advance_newest(1400);  // never back
  EXPECT_EQ(idle.now(), 1500);
  // A wall-clock namespace keeps the wall clock (the newest time moves).
  auto wall = small_config();
  wall.clock = ClockMode::wall;
  Namespace w(wall, [] { return 42.0; });
  w.advance_newest(1e9);
  EXPECT_EQ(w.now(), 42);
  EXPECT_EQ(w.stats().newest_time, 1e9);
}

// A cluster partition's share of a namespace: sketches 1/parts as wide
// (rounded up to a power of two, never under 1024 nor wider than asked),
// the rest as asked; an exact namespace, or one part, as it is.
TEST(Namespace, APartitionsShareHasSketchesAShareAsWide) {
  NamespaceConfig c;
  c.sketch = CountMinShape::with_dimensions(1u << 16, 5);
  c.window_sketch_width = 8192;
  c.windows = {60};
  c.candidates = 2048;
  const NamespaceConfig sixteenth = partition_share(c, 16);
  EXPECT_EQ(sixteenth.sketch.width, 4096u);
  EXPECT_EQ(sixteenth.sketch.depth, 5u);
  EXPECT_EQ(sixteenth.window_sketch_width, 1024u);  // 512 would be under the floor
  EXPECT_EQ(sixteenth.candidates, 2048u);
  EXPECT_EQ(partition_share(c, 10).sketch.width, 8192u);  // 6554, rounded up: never narrower than 1/parts
  EXPECT_EQ(partition_share(c, 1).sketch, c.sketch);
  NamespaceConfig small = c;
  small.sketch = CountMinShape::with_dimensions(256, 4);
  EXPECT_EQ(partition_share(small, 16).sketch.width, 256u);  // under the floor already: as asked
  NamespaceConfig budgeted = c;
  budgeted.memory = 4 << 20;
  EXPECT_EQ(partition_share(budgeted, 16).sketch.width, 4096u);
  EXPECT_EQ(partition_share(budgeted, 16).memory, budgeted.memory);
  NamespaceConfig exact = c;
  exact.counting = Counting::exact;
  EXPECT_EQ(partition_share(exact, 16).sketch, c.sketch);
  // A share still validates and counts.
  EXPECT_NO_THROW(sixteenth.validate());
  Namespace part(sixteenth, [] { return 1.7e9; });
  part.apply(std::vector<Event>{{"a", 1.7e9, 3}});
  EXPECT_EQ(part.count("a").item.estimate, 3);
}

TEST(Namespace, BatchIsAllOrNothingAndNamesTheBadEvent) {
  Namespace ns(small_config());
  std::vector<Event> good = {{"a", 100, 1}, {"b", 100, 2}};
  ns.apply(good);
  const auto before = ns.top(ViewSpec::all_time());
  const auto stats_before = ns.stats();

  struct Case {
    Event bad;
    const char* field;
  };
  const std::string long_key(2000, 'x');
  for (const auto& c : {Case{{"", 100, 1}, "item_id"}, Case{{long_key, 100, 1}, "item_id"}, Case{{"c", 100, 0}, "weight"},
                        Case{{"c", 100, -1}, "weight"}, Case{{"c", 100, NAN}, "weight"}, Case{{"c", 100, INFINITY}, "weight"},
                        Case{{"c", 100, 1e16}, "weight"}, Case{{"c", NAN, 1}, "timestamp"}, Case{{"c", -5, 1}, "timestamp"}}) {
    std::vector<Event> batch = {{"a", 101, 1}, {"a", 101, 1}, c.bad, {"b", 101, 1}};
    try {
      ns.apply(batch);
      FAIL() << "accepted a bad " << c.field;
    } catch (const BatchError& e) {
      EXPECT_EQ(e.index(), 2u);
      EXPECT_EQ(e.field(), c.field);
      EXPECT_NE(std::string(e.what()).find("event 2"), std::string::npos);
    }
  }
  const auto after = ns.top(ViewSpec::all_time());
  EXPECT_EQ(after.items, before.items);
  EXPECT_EQ(after.total, before.total);
  EXPECT_EQ(ns.stats().events, stats_before.events);
}

TEST(Namespace, WallClockRejectsTheFarFutureAndClampsSmallSkew) {
  auto config = small_config();
  config.clock = ClockMode::wall;
  config.max_future_skew = 30;
  double wall = 1'000'000;
  Namespace ns(config, [&] { return wall; });
  std::vector<Event> far = {{"a", wall + 31, 1}};
  EXPECT_THROW(ns.apply(far), BatchError);
  std::vector<Event> near = {{"a", wall + 10, 1}};
  ns.apply(near);
  EXPECT_EQ(ns.stats().newest_time, wall);  // clamped to now
  EXPECT_EQ(ns.now(), wall);
  wall += 3600;
  EXPECT_EQ(ns.now(), wall);
  // An hour later, the 60 s view has decayed by 2^60 while all-time has not.
  EXPECT_EQ(ns.count("a", ViewSpec::all_time()).item.estimate, 1);
  EXPECT_LT(ns.count("a", ViewSpec::decayed(60)).item.estimate, 1e-15);
}

// A wall-clock namespace refuses an event older than max_event_age (a
// timestamp of 0 would start the all-time window in 1970); the batch is
// all or nothing and the error names the event.
TEST(Namespace, WallClockRefusesEventsOlderThanMaxEventAge) {
  auto config = small_config();
  config.clock = ClockMode::wall;
  config.max_event_age = 3600;
  double wall = 1'000'000;
  Namespace ns(config, [&] { return wall; });
  std::vector<Event> batch = {{"a", wall - 10, 1}, {"b", 0, 1}};
  try {
    ns.apply(batch);
    FAIL() << "an event of 1970 was counted";
  } catch (const BatchError& e) {
    EXPECT_EQ(e.index(), 1u);
    EXPECT_EQ(e.field(), "timestamp");
    EXPECT_EQ(e.message(), "is 1000000 s older than the server clock (1000000), more than the namespace's max_event_age of 1h");
  }
  EXPECT_EQ(ns.stats().events, 0u);
  std::vector<Event> oldest_allowed = {{"a", wall - 3600, 2}};
  ns.apply(oldest_allowed);
  EXPECT_EQ(ns.count("a", ViewSpec::all_time()).item.estimate, 2);
  ns.set_time_guards(INFINITY, INFINITY);  // no guard: history loads
  ns.apply(batch);
  EXPECT_EQ(ns.count("b", ViewSpec::all_time()).item.estimate, 1);
  EXPECT_THROW(ns.set_time_guards(0, 1), InvalidArgument);
}

// On the event clock one far-future timestamp (a millisecond time among
// seconds) must not move "now" for good: it is refused, later events count
// at full weight, and so is an event too far behind the newest.
TEST(Namespace, EventClockRefusesAJumpAheadAndEventsTooOld) {
  auto config = small_config();
  config.max_time_jump = 86400;
  config.max_event_age = 7 * 86400;
  Namespace ns(config);
  std::vector<Event> first = {{"a", 1'700'000'000, 1}};
  ns.apply(first);
  std::vector<Event> ms = {{"a", 1'700'000'001, 1}, {"a", 1'700'000'002'000, 1}};
  try {
    ns.apply(ms);
    FAIL() << "a millisecond timestamp moved now";
  } catch (const BatchError& e) {
    EXPECT_EQ(e.index(), 1u);
    EXPECT_EQ(e.field(), "timestamp");
    EXPECT_EQ(e.message(), "is 1698300001999 s ahead of the newest event time so far (1700000001), more than the namespace's max_time_jump of 1d");
  }
  EXPECT_EQ(ns.now(), 1'700'000'000);
  std::vector<Event> next = {{"a", 1'700'000'060, 1}};
  ns.apply(next);
  // 60 s later: the 60 s view holds 1 * 2^-1 + 1 = 1.5.
  EXPECT_NEAR(ns.count("a", ViewSpec::decayed(60)).item.estimate, 1.5, kTol);
  // Within a batch the running newest counts: the jump is from the newest so far.
  std::vector<Event> stairs = {{"b", 1'700'080'000, 1}, {"b", 1'700'160'000, 1}};
  ns.apply(stairs);
  EXPECT_EQ(ns.now(), 1'700'160'000);
  std::vector<Event> stale = {{"c", 1'700'160'000 - 7 * 86400 - 1, 1}};
  EXPECT_THROW(ns.apply(stale), BatchError);
  EXPECT_EQ(ns.count("c", ViewSpec::all_time()).item.estimate, 0);
}

// An excluded event is checked but does not move the event clock, so the
// same events pass or fail alike however they are split into batches.
TEST(Namespace, ExcludedEventsDoNotMoveTheEventClock) {
  auto config = small_config();
  config.exclude = {"the"};
  config.max_time_jump = 86400;
  const std::vector<Event> events = {{"a", 1'000'000, 1}, {"the", 1'080'000, 1}, {"b", 1'160'000, 1}};
  Namespace whole(config);
  EXPECT_THROW(whole.apply(events), BatchError);  // b is 160000 s past a, the newest counted event
  Namespace split(config);
  split.apply(std::span(events).subspan(0, 1));
  split.apply(std::span(events).subspan(1, 1));
  EXPECT_EQ(split.now(), 1'000'000);
  EXPECT_THROW(split.apply(std::span(events).subspan(2, 1)), BatchError);
}

// The first event of an event clock has no newest time to compare with: a
// millisecond timestamp is caught against the server clock instead.
TEST(Namespace, EventClockChecksAFirstEventAgainstTheServerClock) {
  auto config = small_config();
  config.max_time_jump = 86400;
  Namespace ns(config, [] { return 1'700'000'000.0; });
  std::vector<Event> ms = {{"a", 1'700'000'000'000, 1}};
  try {
    ns.apply(ms);
    FAIL() << "a millisecond timestamp became now";
  } catch (const BatchError& e) {
    EXPECT_EQ(e.message(), "is 1698300000000 s ahead of the server clock (1700000000), more than the namespace's max_time_jump of 1d");
  }
  std::vector<Event> seconds = {{"a", 1'699'000'000, 1}};  // a backfill of older data is fine
  ns.apply(seconds);
  EXPECT_EQ(ns.now(), 1'699'000'000);
}

TEST(Namespace, ExcludedItemsAreNeverCounted) {
  auto config = small_config();
  config.exclude = {"the", "a"};
  Namespace ns(config);
  std::vector<Event> batch = {{"the", 1, 1}, {"cat", 1, 1}, {"a", 1, 1}, {"cat", 2, 1}};
  ns.apply(batch);
  const auto top = ns.top();
  ASSERT_EQ(top.items.size(), 1u);
  EXPECT_EQ(top.items[0].key, "cat");
  EXPECT_EQ(top.total, 2);
  EXPECT_EQ(ns.stats().excluded, 2u);
  EXPECT_EQ(ns.count("the").item.upper, 0);
}

TEST(Namespace, DecayedRateApproachesTheSteadyRate) {
  auto config = small_config();
  config.half_lives = {10};
  Namespace ns(config);
  std::vector<Event> batch;
  // 50 events/s for 300 s (30 half-lives): lambda * S -> 50.
  for (int i = 0; i < 15000; ++i) batch.push_back({"hot", 1000 + i / 50.0, 1});
  ns.apply(batch);
  EXPECT_NEAR(ns.count("hot", ViewSpec::decayed(10)).rate, 50, 0.5);
  EXPECT_NEAR(ns.count("hot", ViewSpec::all_time()).rate, 50, 0.5);
}

TEST(Namespace, ConfigErrorsNameTheField) {
  auto expect_field = [](NamespaceConfig c, const std::string& field) {
    try {
      Namespace ns(c);
      FAIL() << "accepted bad " << field;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(field + ":", 0), 0u) << e.what();
    }
  };
  auto c = small_config();
  c.name = "bad\nname";
  expect_field(c, "name");
  c = small_config();
  c.k = 0;
  expect_field(c, "k");
  c = small_config();
  c.k = 1001;
  expect_field(c, "k");
  c = small_config();
  c.half_lives = {60, 60};
  expect_field(c, "half_lives");
  c = small_config();
  c.sketch.width = 1000;
  expect_field(c, "sketch_width");
  c = small_config();
  c.candidates = 5;
  expect_field(c, "candidates");
}

TEST(Namespace, UnknownViewsAndBadQueriesAreClearErrors) {
  Namespace ns(small_config());
  try {
    ns.top(ViewSpec::decayed(300));
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("keeps no half-life 5m view"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ns.top(std::nullopt, 0), InvalidArgument);
  EXPECT_THROW(ns.top(std::nullopt, 1001), InvalidArgument);
  EXPECT_THROW(ns.count(""), InvalidArgument);
}

TEST(Namespace, UndersizedAnswersSaySo) {
  auto config = small_config();
  config.candidates = 20;
  Namespace ns(config);
  EXPECT_FALSE(ns.top(std::nullopt, 20).accuracy.undersized);
  EXPECT_TRUE(ns.top(std::nullopt, 21).accuracy.undersized);
}

TEST(Namespace, SameEventsGiveTheSameState) {
  const auto stream = testing::random_stream({}, 5);
  const auto events = as_events(stream);  // views into stream's keys
  Namespace a(small_config()), b(small_config());
  a.apply(events);
  b.apply(events);
  for (const auto& v : a.views()) EXPECT_EQ(a.top(v->spec(), 64).items, b.top(v->spec(), 64).items);
}

PreparedBatch as_prepared(std::span<const Event> events) {
  PreparedBatch b;
  b.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    b.items[i] = events[i].item;
    b.hashes[i] = hash_key(events[i].item);
    b.times[i] = events[i].time;
    b.weights[i] = events[i].weight;
  }
  b.count = events.size();
  return b;
}

// A batch a front end lays out in columns itself counts exactly as the same
// events through apply(events): the same state to the byte, with excluded
// events dropped from the columns, wall-clock times clamped, and a bad event
// named by its index with nothing counted.
TEST(Namespace, PreparedBatchCountsExactlyAsItsEvents) {
  const auto stream = testing::random_stream({}, 21);
  const auto events = as_events(stream);
  for (const bool wall : {false, true}) {
    for (auto summary : {SummaryKind::candidate_heap, SummaryKind::space_saving}) {
      auto config = small_config();
      config.summary = summary;
      config.exclude = {std::string(events[3].item), std::string(events[10].item)};
      double now = 1.7e9 + 3600;
      if (wall) {
        config.clock = ClockMode::wall;
        config.max_future_skew = 1e9;  // every event clamped or taken as is
        now = 1.7e9 + 1800;
      }
      Namespace by_events(config, [&] { return now; }), by_columns(config, [&] { return now; });
      for (std::size_t begin = 0; begin < events.size(); begin += 700) {
        const auto part = std::span<const Event>(events).subspan(begin, std::min<std::size_t>(700, events.size() - begin));
        by_events.apply(part);
        auto batch = as_prepared(part);
        by_columns.apply(batch);
        EXPECT_LE(batch.count, part.size());
      }
      EXPECT_EQ(by_columns.serialize_state(), by_events.serialize_state());
      EXPECT_GT(by_columns.stats().excluded, 0u);
    }
  }
  Namespace ns(small_config());
  std::vector<Event> bad = {{"a", 100, 1}, {"b", 100, 1}, {"c", 100, -1}};
  auto batch = as_prepared(bad);
  try {
    ns.apply(batch);
    FAIL() << "accepted a bad weight";
  } catch (const BatchError& e) {
    EXPECT_EQ(e.index(), 2u);
    EXPECT_EQ(e.field(), "weight");
  }
  EXPECT_EQ(ns.stats().events, 0u);
  EXPECT_EQ(ns.top().total, 0);
  PreparedBatch short_columns;
  short_columns.count = 1;
  EXPECT_THROW(ns.apply(short_columns), InvalidArgument);
}

// The all-time view is a Count-Min sketch feeding a candidate heap, one
// event after the other: however the view batches, prefetches and filters
// the heap's lookups, its state is the one the plain loop gives.
TEST(Namespace, AllTimeViewIsTheSketchAndAugmentedHeapFedInChunks) {
  testing::StreamSpec spec;
  spec.events = 30000;
  spec.universe = 3000;
  const auto stream = testing::random_stream(spec, 4);
  const auto events = as_events(stream);
  auto config = small_config();
  config.half_lives = {};
  Namespace ns(config);
  CountMin sketch(config.sketch);
  AugmentedHeap heap(config.candidates);
  for (std::size_t begin = 0; begin < events.size(); begin += 1000) {
    ns.apply(std::span<const Event>(events).subspan(begin, 1000));
  }
  // The view takes each batch in chunks of the heap's kMaxBatch.
  for (std::size_t begin = 0; begin < events.size(); begin += 1000) {
    for (std::size_t at = begin; at < begin + 1000; at += AugmentedHeap::kMaxBatch) {
      const std::size_t n = std::min(AugmentedHeap::kMaxBatch, begin + 1000 - at);
      std::vector<std::string_view> keys;
      std::vector<std::uint64_t> hashes;
      std::vector<double> weights;
      for (std::size_t i = at; i < at + n; ++i) {
        keys.push_back(events[i].item);
        hashes.push_back(hash_key(events[i].item));
        weights.push_back(events[i].weight);
      }
      heap.apply(sketch, keys.data(), hashes.data(), weights.data(), n);
    }
  }
  const auto answer = ns.top(ViewSpec::all_time(), config.candidates);
  const auto want = heap.top(config.candidates);
  ASSERT_EQ(answer.items.size(), want.items.size());
  for (std::size_t i = 0; i < want.items.size(); ++i) EXPECT_EQ(answer.items[i], want.items[i]) << i;
  EXPECT_EQ(answer.total, sketch.total() + heap.absorbed());
  EXPECT_EQ(answer.accuracy.guarantee_threshold, heap.threshold());
}

// A view's one-pass scan (RESP's TOPK.ADD asks it for a whole batch) gives
// exactly the keys held_scores() says are held that high, with the same
// scores, and declines when the summary holds more keys than the caller
// will pay for, when more keys than asked for are that high, or when its
// summary cannot tell (Space-Saving).
TEST(Namespace, HeldAtLeastAnswersAsHeldScoresOrDeclines) {
  testing::StreamSpec spec;
  spec.events = 20000;
  spec.universe = 500;
  const auto stream = testing::random_stream(spec, 9);
  const auto events = as_events(stream);
  auto config = small_config();
  config.half_lives = {60};
  Namespace ns(config);
  for (std::size_t begin = 0; begin < events.size(); begin += 1000) ns.apply(std::span<const Event>(events).subspan(begin, 1000));
  const View& view = ns.view(std::nullopt);
  std::vector<std::string> universe;
  for (const auto& e : stream) universe.push_back(e.key);
  std::sort(universe.begin(), universe.end());
  universe.erase(std::unique(universe.begin(), universe.end()), universe.end());
  std::vector<std::string_view> items(universe.begin(), universe.end());
  std::vector<std::uint64_t> hashes;
  for (const auto& k : universe) hashes.push_back(hash_key(k));
  std::vector<std::optional<double>> scores(items.size());
  ASSERT_TRUE(view.held_scores(items, hashes, scores));
  std::vector<double> held;
  for (const auto& s : scores) {
    if (s) held.push_back(*s);
  }
  ASSERT_EQ(held.size(), config.candidates);
  std::sort(held.begin(), held.end());
  for (const double bound : std::vector<double>{held.front(), held[held.size() / 2], held.back(), -INFINITY}) {
    std::map<std::string, double> want;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (scores[i] && *scores[i] >= bound) want.emplace(universe[i], *scores[i]);
    }
    std::vector<HeldScore> out;
    ASSERT_TRUE(view.held_at_least(bound, config.candidates, want.size(), out));
    std::map<std::string, double> got;
    for (const auto& h : out) got.emplace(std::string(h.key), h.score);
    EXPECT_EQ(got, want) << bound;
    out.clear();
    EXPECT_FALSE(view.held_at_least(bound, config.candidates - 1, want.size(), out)) << bound;
    EXPECT_FALSE(view.held_at_least(bound, config.candidates, want.size() - 1, out)) << bound;
  }
  config.summary = SummaryKind::space_saving;
  Namespace ss(config);
  ss.apply(std::span<const Event>(events).first(1000));
  std::vector<HeldScore> out;
  EXPECT_FALSE(ss.view(std::nullopt).held_at_least(-INFINITY, 1u << 20, 1u << 20, out));
  EXPECT_TRUE(out.empty());
}

// The list's tail is flagged when its bounds cannot tell it from what was
// left out. Candidates 2: a (5) and b (3) are held from their first
// events, exact; c's fourth event brings its estimate to 4 > 3, so b
// leaves (bounded by the minimum, 4) and c comes in with lower bound 1
// (its one event since) and upper bound 4.
TEST(Namespace, AnswerFlagsATailItsBoundsCannotSeparate) {
  auto config = small_config();
  config.half_lives = {};
  config.k = 2;
  config.candidates = 2;
  Namespace ns(config);
  std::vector<Event> events;
  for (int i = 0; i < 5; ++i) events.push_back({"a", 10, 1});
  for (int i = 0; i < 3; ++i) events.push_back({"b", 10, 1});
  ns.apply(events);
  auto two = ns.top(ViewSpec::all_time(), 2);
  EXPECT_EQ(two.items, (std::vector<CountedItem>{{"a", 5, 5, 5}, {"b", 3, 3, 3}}));
  EXPECT_FALSE(two.accuracy.tail_uncertain);
  EXPECT_EQ(two.unlisted_upper, 3);  // full: the minimum bounds any other key
  events.assign(4, Event{"c", 11, 1});
  ns.apply(events);
  two = ns.top(ViewSpec::all_time(), 2);
  EXPECT_EQ(two.items, (std::vector<CountedItem>{{"a", 5, 5, 5}, {"c", 4, 1, 4}}));
  EXPECT_EQ(two.unlisted_upper, 4);
  EXPECT_TRUE(two.accuracy.tail_uncertain);  // b (3) may outrank c
  const auto one = ns.top(ViewSpec::all_time(), 1);
  EXPECT_EQ(one.unlisted_upper, 4);
  EXPECT_FALSE(one.accuracy.tail_uncertain);  // a's 5 is surely first
  // The sketch never under-counts b, which it holds again.
  EXPECT_EQ(ns.count("b", ViewSpec::all_time()).item, (CountedItem{"b", 3, 0, 3}));
}

// A checkpoint restored into a namespace of the same configuration answers
// exactly as the original, and keeps counting the same way.
TEST(Namespace, StateRoundTripsThroughACheckpoint) {
  const auto stream = testing::random_stream({}, 8);
  const auto events = as_events(stream);
  const std::size_t half = events.size() / 2;
  for (auto summary : {SummaryKind::candidate_heap, SummaryKind::space_saving}) {
    auto config = small_config();
    config.summary = summary;
    Namespace original(config), restored(config);
    original.apply(std::span<const Event>(events.data(), half));
    restored.restore_state(original.serialize_state());
    for (const auto& v : original.views()) EXPECT_EQ(restored.top(v->spec(), 64).items, original.top(v->spec(), 64).items);
    EXPECT_EQ(restored.stats().events, original.stats().events);
    original.apply(std::span<const Event>(events.data() + half, events.size() - half));
    restored.apply(std::span<const Event>(events.data() + half, events.size() - half));
    for (const auto& v : original.views()) EXPECT_EQ(restored.top(v->spec(), 64).items, original.top(v->spec(), 64).items);
    EXPECT_EQ(restored.serialize_state(), original.serialize_state());
  }
}

TEST(Namespace, CheckpointOfAnotherConfigurationIsRejectedAndChangesNothing) {
  Namespace a(small_config());
  std::vector<Event> batch = {{"x", 10, 1}};
  a.apply(batch);
  auto other = small_config();
  other.half_lives = {60};
  Namespace b(other);
  b.apply(batch);
  const auto before = b.serialize_state();
  EXPECT_THROW(b.restore_state(a.serialize_state()), FormatError);
  std::string damaged = a.serialize_state();
  damaged[damaged.size() / 2] ^= 1;
  Namespace c(small_config());
  EXPECT_THROW(c.restore_state(damaged), FormatError);
  EXPECT_EQ(b.serialize_state(), before);
}

// Decay can make different counts equal when they are read (rounding, or
// underflow to 0 after a long idle spell); the answer must still be in
// report order, ties by key. Found by fuzz/fuzz_namespace_state.
TEST(Namespace, DecayedTopStaysInReportOrderWhenCountsUnderflow) {
  NamespaceConfig config = small_config();
  config.all_time = false;
  config.half_lives = {1};
  config.clock = ClockMode::wall;
  double wall = 1000;
  Namespace ns(config, [&] { return wall; });
  const std::vector<Event> batch = {{"b", 1000, 2}, {"a", 1000, 1}, {"c", 1000, 3}};
  ns.apply(batch);
  auto top = ns.top();
  ASSERT_EQ(top.items.size(), 3u);
  EXPECT_EQ(top.items[0].key, "c");
  wall = 1000 + 5000;  // 5000 half-lives: every count reads 0
  top = ns.top();
  ASSERT_EQ(top.items.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(top.items[i].key, std::string(1, static_cast<char>('a' + i)));
    EXPECT_EQ(top.items[i].estimate, 0.0);
  }
}

// A checkpoint state whose figures no run can produce (a NaN or negative
// time, a negative total, a flag other than 0 or 1) is refused like any
// other corrupt state, and the namespace is left as it was. Until then the
// namespace's own figures were taken as they came while every part inside
// checked its own (prompted by fuzz/fuzz_namespace_state, whose first find
// restored a state with a newest event time of 4e41: finite, still taken).
TEST(Namespace, StateWithImpossibleFiguresIsRejected) {
  Namespace source(small_config());
  const std::vector<Event> batch = {{"x", 10, 1}, {"y", 12, 2}};
  source.apply(batch);
  const std::string good = source.serialize_state();
  const auto payload = std::string(open_blob(good, BlobKind::namespace_state, 3).payload);
  auto with = [&](std::size_t offset, auto value) {
    std::string p = payload;
    std::memcpy(p.data() + offset, &value, sizeof value);
    return seal_blob(BlobKind::namespace_state, 3, p);
  };
  // Payload: u64 events, u64 excluded, u64 batches, f64 weight (24), f64 newest time (32), u8 seen (40), ...
  const std::pair<std::string, std::string> cases[] = {
      {with(24, -1.0), "corrupt namespace state: bad total weight"},
      {with(24, std::numeric_limits<double>::infinity()), "corrupt namespace state: bad total weight"},
      {with(32, std::nan("")), "corrupt namespace state: bad newest event time"},
      {with(32, -5.0), "corrupt namespace state: bad newest event time"},
      {with(40, std::uint8_t{2}), "corrupt namespace state: bad seen-event flag"},
  };
  Namespace target(small_config());
  const std::string before = target.serialize_state();
  for (const auto& [blob, message] : cases) {
    try {
      target.restore_state(blob);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const FormatError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
    EXPECT_EQ(target.serialize_state(), before);
  }
  target.restore_state(good);
  EXPECT_EQ(target.serialize_state(), good);

  // A view's first event time likewise: the last 16 bytes of its payload are f64 first time, u64 rebases.
  DecayedView view(ViewSpec::decayed(60), small_config());
  const std::string view_blob = source.view(ViewSpec::decayed(60)).serialize_state();
  std::string view_payload(open_blob(view_blob, BlobKind::decayed_view, 2).payload);
  const double bad_time = -1;
  std::memcpy(view_payload.data() + view_payload.size() - 16, &bad_time, 8);
  try {
    view.restore_state(seal_blob(BlobKind::decayed_view, 2, view_payload));
    ADD_FAILURE() << "accepted a negative first event time";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "corrupt decayed view: bad first event time");
  }
  view.restore_state(view_blob);
  EXPECT_EQ(view.serialize_state(), view_blob);
}

TEST(Namespace, ValidateThenApplyAtUsesOneClockReading) {
  auto config = small_config();
  config.clock = ClockMode::wall;
  config.max_future_skew = 5;
  double wall = 1000;
  Namespace ns(config, [&] { return wall; });
  std::vector<Event> batch = {{"a", 1004, 1}, {"b", 900, 1}};
  ns.validate(batch, 1000);
  wall = 990;  // the clock steps back: apply_at still uses the validated reading
  ns.apply_at(batch, 1000);
  EXPECT_EQ(ns.stats().events, 2u);
  std::vector<Event> bad = {{"a", 1, 1}, {"b", 1006, 1}};
  try {
    ns.validate(bad, 1000);
    FAIL();
  } catch (const BatchError& e) {
    EXPECT_EQ(e.index(), 1u);
    EXPECT_EQ(e.field(), "timestamp");
  }
}

TEST(Namespace, KAndExclusionsChangeAtRunTime) {
  Namespace ns(small_config());
  ns.set_k(50);
  EXPECT_EQ(ns.config().k, 50u);
  EXPECT_EQ(ns.top().items.size(), 0u);
  EXPECT_THROW(ns.set_k(0), InvalidArgument);
  EXPECT_THROW(ns.set_k(65), InvalidArgument);  // beyond the 64 candidates
  ns.set_exclude({"spam"});
  std::vector<Event> batch = {{"spam", 1, 1}, {"ham", 1, 1}};
  ns.apply(batch);
  EXPECT_EQ(ns.top().total, 1);
  EXPECT_THROW(ns.set_exclude({""}), InvalidArgument);
  EXPECT_EQ(ns.config().exclude, std::vector<std::string>{"spam"});
}

}  // namespace
}  // namespace ebb::engine
