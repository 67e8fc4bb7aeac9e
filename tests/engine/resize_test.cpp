// A resize (a wider sketch_width or window_sketch_width, Namespace::
// reconfigure): against a brute-force model on random streams (random
// weights, times out of order), every view keeps never under-counting and
// stays within the bound it states, answers nothing different at the
// moment of the resize (the counts are carried), counts what comes after
// with the new width's error, and its state round-trips with the mixed
// widths; the audit compares afresh; a width that cannot be is refused and
// changes nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <map>
#include <random>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/accuracy_audit.hpp"
#include "ebb/engine/decayed_view.hpp"
#include "ebb/engine/namespace.hpp"

namespace ebb::engine {
namespace {

constexpr double kStart = 1'700'000'000;

NamespaceConfig narrow_config() {
  NamespaceConfig c;
  c.name = "grow";
  c.k = 10;
  c.all_time = true;
  c.half_lives = {600, 1};  // (1 s: rebased within the stream, the carried error with it)
  c.windows = {60, 3600};    // (two ring levels: a top level twice as wide, children added into parents)
  c.sketch = CountMinShape::with_dimensions(16, 2);
  c.window_sketch_width = 16;
  c.candidates = 16;
  c.clock = ClockMode::event;
  c.max_event_age = INFINITY;
  c.max_time_jump = INFINITY;
  c.audit_sample = 32;
  c.audit_top = 10;
  return c;
}

struct Stream {
  std::deque<std::string> keys;  // what the events' items view (a deque never moves them)
  std::vector<Event> events;
  std::map<std::string, std::vector<std::pair<double, double>>> truth;  // per item: (time, weight)
};

// `n` events of a skewed key set over [from, from + seconds), times a few
// seconds out of order, weights 1..4.
void extend(Stream& s, std::uint64_t seed, std::size_t n, double from, double seconds, std::size_t universe) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(std::pow(u(rng), 3) * static_cast<double>(universe));
    const double t = std::max(from, std::floor(from + seconds * static_cast<double>(i) / static_cast<double>(n) - 3 * u(rng)));
    const double w = 1 + static_cast<double>(rng() % 4);
    s.keys.push_back("k" + std::to_string(k));
    s.events.push_back({s.keys.back(), t, w});
    s.truth["k" + std::to_string(k)].emplace_back(t, w);
  }
}

void apply(Namespace& ns, const Stream& s, std::size_t from, std::size_t to) {
  for (std::size_t at = from; at < to; at += 250) {
    const auto end = std::min(to, at + 250);
    ns.apply(std::span(s.events).subspan(at, end - at));
  }
}

// The true count of an item in a view at `now` (the stream's events so far).
double exact(const Stream& s, std::size_t upto, const std::string& item, const ViewSpec& view, double now, double window_start) {
  double sum = 0;
  for (std::size_t i = 0; i < upto; ++i) {
    const Event& e = s.events[i];
    if (e.item != item) continue;
    if (view.kind == ViewSpec::Kind::decayed) sum += e.weight * std::exp2(-(now - e.time) / view.half_life);
    else if (view.kind == ViewSpec::Kind::window) sum += e.time >= window_start && e.time <= now ? e.weight : 0;
    else sum += e.weight;
  }
  return sum;
}

// Every item of the stream in every view: never under the truth (always),
// over it by more than the stated bound for at most the share the stated
// confidence allows (each estimate stays within it with that probability:
// with depth 2, 1 - e^-2; the fixture's count is fixed, and the test
// fails should it pass that share).
void check_bounds(const Namespace& ns, const Stream& s, std::size_t upto) {
  for (const auto& v : ns.views()) {
    SCOPED_TRACE(v->spec().label());
    std::size_t outside = 0, n = 0;
    double confidence = 1;
    for (const auto& [item, _] : s.truth) {
      const PointAnswer a = ns.count(item, v->spec());
      const double truth = exact(s, upto, item, v->spec(), a.as_of, a.window_start);
      const double slack = 1e-9 * std::max(1.0, truth);
      EXPECT_GE(a.item.upper + slack, truth) << item;
      outside += a.item.upper - truth > a.accuracy.max_error + slack;
      ++n;
      confidence = a.accuracy.confidence;
    }
    EXPECT_LE(static_cast<double>(outside), (1 - confidence) * static_cast<double>(n)) << outside << " of " << n << " items";
  }
}

TEST(Resize, AWiderSketchAnswersTheSameAtOnceNeverUnderCountsAndCountsOnWithTheNewWidthsError) {
  Stream s;
  extend(s, 1, 4000, kStart, 200, 600);
  extend(s, 2, 4000, kStart + 200, 300, 600);
  Namespace ns(narrow_config());
  apply(ns, s, 0, 4000);
  check_bounds(ns, s, 4000);

  // The moment of the resize: every answer as it was (nothing counted
  // differently; only the bound's future share changes).
  std::vector<TopKAnswer> before;
  for (const auto& v : ns.views()) before.push_back(ns.top(v->spec()));
  NamespaceConfig wide = ns.config();
  wide.sketch = CountMinShape::with_dimensions(256, 2);
  wide.window_sketch_width = 128;
  ns.reconfigure(wide);
  EXPECT_EQ(ns.config().sketch.width, 256u);
  EXPECT_EQ(ns.config().window_sketch_width, 128u);
  for (std::size_t i = 0; i < ns.views().size(); ++i) {
    const TopKAnswer after = ns.top(ns.views()[i]->spec());
    SCOPED_TRACE(after.view.label());
    ASSERT_EQ(after.items.size(), before[i].items.size());
    for (std::size_t j = 0; j < after.items.size(); ++j) {
      EXPECT_EQ(after.items[j].key, before[i].items[j].key);
      EXPECT_EQ(after.items[j].estimate, before[i].items[j].estimate);
      EXPECT_EQ(after.items[j].upper, before[i].items[j].upper);
    }
    const bool window = after.view.kind == ViewSpec::Kind::window;
    if (!window) {
      EXPECT_DOUBLE_EQ(after.accuracy.max_error, before[i].accuracy.max_error) << "what was counted keeps its bound (rounding aside)";
    } else {
      // A window's top-level buckets, twice as wide, were stated at the
      // narrower width below them; from the resize on that is their own.
      EXPECT_LE(after.accuracy.max_error, before[i].accuracy.max_error * (1 + 1e-12));
    }
    EXPECT_EQ(after.accuracy.epsilon, CountMinShape::with_dimensions(window ? 128 : 256, 2).epsilon());
  }

  apply(ns, s, 4000, 8000);
  check_bounds(ns, s, 8000);
  EXPECT_GT(dynamic_cast<const DecayedView&>(ns.view(ViewSpec::decayed(1))).rebases(), 0u) << "the fixture must rebase after the resize";
  // The all-time bound: the old epsilon x the total at the resize, the new
  // one x what came since.
  double total_before = 0, total = 0;
  for (std::size_t i = 0; i < 8000; ++i) (i < 4000 ? total_before : total) += s.events[i].weight;
  total += total_before;
  const TopKAnswer all = ns.top(ViewSpec::all_time());
  const double e16 = CountMinShape::with_dimensions(16, 2).epsilon(), e256 = CountMinShape::with_dimensions(256, 2).epsilon();
  EXPECT_NEAR(all.accuracy.max_error, e16 * total_before + e256 * (total - total_before), 1e-9 * total);
  // The 1m window now covers buckets opened after the resize alone: the
  // new width's bound, epsilon x total.
  const TopKAnswer window = ns.top(ViewSpec::sliding(60));
  EXPECT_EQ(window.accuracy.max_error, CountMinShape::with_dimensions(128, 2).epsilon() * window.total);
}

TEST(Resize, TheMixedWidthsRoundTripThroughTheNamespacesState) {
  Stream s;
  extend(s, 3, 3000, kStart, 100, 400);
  extend(s, 4, 3000, kStart + 100, 100, 400);
  Namespace ns(narrow_config());
  apply(ns, s, 0, 3000);
  NamespaceConfig wide = ns.config();
  wide.sketch = CountMinShape::with_dimensions(64, 2);
  wide.window_sketch_width = 64;
  ns.reconfigure(wide);
  apply(ns, s, 3000, 4500);  // the 1m window holds buckets of both widths
  const std::string state = ns.serialize_state();

  Namespace back(wide);
  back.restore_state(state);
  EXPECT_EQ(back.serialize_state(), state);
  for (const auto& v : ns.views()) {
    const TopKAnswer a = ns.top(v->spec()), b = back.top(v->spec());
    SCOPED_TRACE(v->spec().label());
    EXPECT_EQ(a.accuracy.max_error, b.accuracy.max_error);
    ASSERT_EQ(a.items.size(), b.items.size());
    for (std::size_t j = 0; j < a.items.size(); ++j) {
      EXPECT_EQ(a.items[j].key, b.items[j].key);
      EXPECT_EQ(a.items[j].upper, b.items[j].upper);
    }
  }
  // Both count on alike.
  apply(ns, s, 4500, 6000);
  apply(back, s, 4500, 6000);
  EXPECT_EQ(back.serialize_state(), ns.serialize_state());
  check_bounds(back, s, 6000);
  // The narrow configuration cannot read the wide views' state.
  Namespace narrow(narrow_config());
  EXPECT_THROW(narrow.restore_state(state), FormatError);
}

TEST(Resize, TheAuditComparesAfreshFromTheResize) {
  Stream s;
  extend(s, 5, 3000, kStart, 100, 400);
  NamespaceConfig c = narrow_config();
  Namespace ns(c);
  apply(ns, s, 0, 3000);
  ns.audit_pass();
  ASSERT_TRUE(ns.audit()->report()[0].passed());
  ASSERT_TRUE(ns.audit()->summary().from_start);
  const std::uint64_t histogram = ns.audit()->report()[0].histogram.count;
  c.sketch = CountMinShape::with_dimensions(64, 2);
  ns.reconfigure(c);
  EXPECT_FALSE(ns.audit()->report()[0].passed()) << "the last pass judged the old width";
  EXPECT_EQ(ns.audit()->report()[0].histogram.count, histogram) << "the histogram keeps every comparison";
  EXPECT_FALSE(ns.audit()->summary().from_start);
  // Tracked items start again from the views' estimates now: nothing since.
  const std::string top = ns.top(ViewSpec::all_time()).items.front().key;
  EXPECT_EQ(ns.audit()->exact(top, 0, ns.now()), 0.0);
  ns.audit_pass();
  EXPECT_EQ(ns.audit()->report()[0].max_error, 0.0) << "nothing counted since the resize: no error yet";
}

TEST(Resize, AWidthThatCannotBeIsRefusedAndChangesNothing) {
  Stream s;
  extend(s, 6, 500, kStart, 10, 50);
  Namespace ns(narrow_config());
  apply(ns, s, 0, 500);
  NamespaceConfig wide = ns.config();
  wide.sketch = CountMinShape::with_dimensions(64, 2);
  wide.window_sketch_width = 64;
  ns.reconfigure(wide);
  const std::string state = ns.serialize_state();
  auto refused = [&](auto change, const std::string& field) {
    NamespaceConfig c = ns.config();
    change(c);
    try {
      ns.reconfigure(c);
      ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(field + ":", 0), 0u) << e.what();
    }
    EXPECT_EQ(ns.serialize_state(), state);
    EXPECT_EQ(ns.config().sketch.width, 64u);
    EXPECT_EQ(ns.config().window_sketch_width, 64u);
  };
  refused([](NamespaceConfig& c) { c.sketch = CountMinShape::with_dimensions(32, 2); }, "sketch_width");
  refused([](NamespaceConfig& c) { c.window_sketch_width = 32; }, "window_sketch_width");
  refused([](NamespaceConfig& c) { c.window_sketch_width = 96; }, "window_sketch_width");
  refused([](NamespaceConfig& c) { c.sketch = CountMinShape::with_dimensions(32, 3); }, "sketch_depth");
  NamespaceConfig budgeted = narrow_config();
  budgeted.memory = 64 << 10;
  budgeted.audit_resize = true;
  EXPECT_THROW(budgeted.validate(), InvalidArgument);
  NamespaceConfig unaudited = narrow_config();
  unaudited.audit_sample = 0;
  unaudited.audit_top = 0;
  unaudited.audit_resize = true;
  EXPECT_THROW(unaudited.validate(), InvalidArgument);
}

}  // namespace
}  // namespace ebb::engine
