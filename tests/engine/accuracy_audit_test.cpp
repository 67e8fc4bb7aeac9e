// The accuracy self-audit against a brute-force model: the items it samples
// hold their exact counts in every view (all-time, decayed, window), the
// errors it reports are those of the views' answers against those counts,
// its sample depends on the set of items alone, a top item's error is
// measured from when it entered the list, an undersized sketch breaches the
// SLA (with the growth that would meet it) where a wide one does not, the
// audit never changes an answer, and its state survives a checkpoint.
#include "ebb/engine/accuracy_audit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "ebb/core/error.hpp"
#include "ebb/engine/namespace.hpp"
#include "support/exact_model.hpp"

namespace ebb::engine {
namespace {

using testing::ModelEvent;

constexpr double kHalfLife = 600, kWindow = 600;  // the window's item buckets are 10 s

NamespaceConfig config(std::uint32_t width, std::uint32_t sample, std::uint32_t top) {
  NamespaceConfig c;
  c.name = "audited";
  c.all_time = true;
  c.half_lives = {kHalfLife};
  c.windows = {kWindow};
  c.window_sketch_width = 16;  // buckets hold few events: only a narrow sketch collides
  c.sketch = CountMinShape::with_dimensions(width, 3);
  c.candidates = 16;  // bucket heaps hold 16 items: the rest is the sketch's estimate
  c.clock = ClockMode::event;
  c.audit_sample = sample;
  c.audit_top = top;
  return c;
}

// Where the namespace keeps a view (views are all-time, windows, half-lives).
std::size_t index_of(const Namespace& ns, const ViewSpec& spec) {
  for (std::size_t v = 0; v < ns.views().size(); ++v) {
    if (ns.views()[v]->spec() == spec) return v;
  }
  throw std::logic_error("no such view");
}

std::vector<ModelEvent> stream(std::uint64_t seed, std::size_t events = 20000, std::size_t universe = 800) {
  testing::StreamSpec spec;
  spec.events = events;
  spec.universe = universe;
  spec.duration = 7200;
  spec.jitter = 20;
  spec.integer_weights = true;
  spec.max_weight = 5;
  return testing::random_stream(spec, seed);
}

void feed(Namespace& ns, const std::vector<ModelEvent>& events, std::size_t batch_size = 300) {
  std::vector<Event> batch;
  for (const auto& e : events) {
    batch.push_back({e.key, e.time, e.weight});
    if (batch.size() == batch_size) {
      ns.apply(batch);
      batch.clear();
    }
  }
  if (!batch.empty()) ns.apply(batch);
}

// The model's count of `key` in the view, as the view's answer covers it.
double model_count(const std::vector<ModelEvent>& events, const std::string& key, const ViewSpec& view, const PointAnswer& answer) {
  double sum = 0;
  for (const auto& e : events) {
    if (e.key != key) continue;
    if (view.kind == ViewSpec::Kind::all_time) sum += e.weight;
    if (view.kind == ViewSpec::Kind::decayed) sum += e.weight * std::exp2(-(answer.as_of - e.time) / view.half_life);
    if (view.kind == ViewSpec::Kind::window && e.time >= answer.window_start) sum += e.weight;
  }
  return sum;
}

std::set<std::string> keys_of(const std::vector<ModelEvent>& events) {
  std::set<std::string> keys;
  for (const auto& e : events) keys.insert(e.key);
  return keys;
}

std::set<std::string> tracked_keys(const Namespace& ns, const std::set<std::string>& keys) {
  std::set<std::string> out;
  for (const auto& k : keys) {
    if (ns.audit()->exact(k, 0, ns.now())) out.insert(k);
  }
  return out;
}

TEST(AccuracyAudit, SampledItemsHoldTheirExactCountsAndTheReportIsTheViewsErrorAgainstThem) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const auto events = stream(seed);
    Namespace ns(config(64, 40, 0));
    feed(ns, events);
    ns.audit_pass();
    const auto keys = keys_of(events);
    const auto sampled = tracked_keys(ns, keys);
    const auto summary = ns.stats().audit;
    ASSERT_TRUE(summary.enabled);
    EXPECT_TRUE(summary.from_start);
    EXPECT_EQ(summary.sampled_items, sampled.size());
    EXPECT_LE(sampled.size(), 40u);
    EXPECT_GT(sampled.size(), 10u) << "the threshold halves only while more than 40 items pass it";
    EXPECT_EQ(summary.top_items, 0u);
    const auto stats = ns.stats();
    for (std::size_t v = 0; v < ns.views().size(); ++v) {
      const ViewSpec spec = ns.views()[v]->spec();
      double max_error = 0, max_relative = 0;
      std::uint64_t outside = 0;
      for (const auto& key : sampled) {
        const PointAnswer a = ns.count(key, spec);
        const double truth = model_count(events, key, spec, a);
        if (spec.kind != ViewSpec::Kind::window) {
          EXPECT_NEAR(*ns.audit()->exact(key, v, a.as_of), truth, 1e-9 * std::max(1.0, truth)) << key << " in " << spec.label();
        }
        const double error = std::abs(a.item.estimate - truth);
        const double exact_error = error <= 1e-9 * std::max(1.0, a.item.estimate) ? 0 : error;
        max_error = std::max(max_error, exact_error);
        max_relative = std::max(max_relative, exact_error / a.accuracy.max_error);
        if (exact_error > a.accuracy.max_error) ++outside;
      }
      const ViewAudit& r = stats.views[v].audit;
      SCOPED_TRACE(spec.label() + ", seed " + std::to_string(seed));
      EXPECT_EQ(r.compared, sampled.size());
      EXPECT_NEAR(r.max_error, max_error, 1e-6 * std::max(1.0, max_error));
      EXPECT_NEAR(r.max_relative_error, max_relative, 1e-6 * std::max(1.0, max_relative));
      EXPECT_EQ(r.outside_bound, outside);
      EXPECT_EQ(r.histogram.count, sampled.size());
      EXPECT_GT(r.max_error, 0) << "a 64-wide sketch over 800 items over-counts some sampled item";
      EXPECT_EQ(r.top_compared, 0u);
    }
  }
}

TEST(AccuracyAudit, TheSampleIsAFunctionOfTheSetOfItems) {
  const auto events = stream(7);
  Namespace in_order(config(256, 30, 0));
  feed(in_order, events);
  auto shuffled = events;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(99));
  std::stable_sort(shuffled.begin(), shuffled.end(), [](const auto& a, const auto& b) { return a.time < b.time; });
  std::reverse(shuffled.begin(), shuffled.end());  // newest first: every batch out of order
  NamespaceConfig c = config(256, 30, 0);
  c.max_event_age = 1e9;
  Namespace reversed(c);
  feed(reversed, shuffled, 7);
  const auto keys = keys_of(events);
  EXPECT_EQ(tracked_keys(in_order, keys), tracked_keys(reversed, keys));
  EXPECT_EQ(in_order.stats().audit.sample_share, reversed.stats().audit.sample_share);
  // And the exact counts agree (the all-time view's do not depend on time).
  for (const auto& k : tracked_keys(in_order, keys)) EXPECT_EQ(*in_order.audit()->exact(k, 0, 0), *reversed.audit()->exact(k, 0, 0)) << k;
}

// With the augmented heap a held item counts exactly from when it came in,
// so a top item's all-time estimate grows by what it counts (error 0 since
// tracked); the window's estimate sums bucket sketches, which over-count.
TEST(AccuracyAudit, ATopItemsErrorIsMeasuredFromWhenItEnteredTheList) {
  const auto events = stream(3, 8000, 2000);
  const std::vector<ModelEvent> first(events.begin(), events.begin() + 4000), second(events.begin() + 4000, events.end());
  Namespace ns(config(16, 0, 5));
  feed(ns, first);
  ns.audit_pass();
  std::set<std::string> tracked_then;
  std::map<std::string, double> all_time_then;
  for (const auto& v : ns.views()) {
    for (const auto& item : ns.top(v->spec(), 5).items) tracked_then.insert(item.key);
  }
  for (const auto& key : tracked_then) all_time_then[key] = ns.count(key, ViewSpec::all_time()).item.estimate;
  for (std::size_t v = 0; v < ns.views().size(); ++v) EXPECT_EQ(ns.stats().views[v].audit.compared, 0u) << "just taken in: nothing to compare yet";
  feed(ns, second);
  std::map<std::size_t, std::vector<CountedItem>> listed_now;
  for (std::size_t v = 0; v < ns.views().size(); ++v) listed_now[v] = ns.top(ns.views()[v]->spec(), 5).items;
  ns.audit_pass();
  const auto stats = ns.stats();
  // All-time: tracked items hold what they counted since; the error since
  // is the estimate's growth less that.
  double all_time_share = 0;
  for (const auto& item : listed_now[0]) {
    if (!tracked_then.contains(item.key)) continue;
    double counted_since = 0;
    for (const auto& e : second) counted_since += e.key == item.key ? e.weight : 0;
    EXPECT_EQ(*ns.audit()->exact(item.key, 0, 0), counted_since) << item.key;
    const double grew = ns.count(item.key, ViewSpec::all_time()).item.estimate - all_time_then[item.key];
    all_time_share = std::max(all_time_share, std::abs(grew - counted_since) / (all_time_then[item.key] + counted_since));
  }
  std::uint64_t all_time_compared = 0;
  for (const auto& item : listed_now[0]) all_time_compared += tracked_then.contains(item.key) ? 1 : 0;
  EXPECT_EQ(stats.views[0].audit.top_compared, all_time_compared) << "listed items tracked before this pass (new ones wait for the next)";
  EXPECT_GE(all_time_compared, 1u);
  EXPECT_NEAR(stats.views[0].audit.top_max_error_share, all_time_share, 1e-12);
  // The window (its start after the first pass): items tracked since then
  // are compared whole; items that entered just now wait for a window that
  // starts after they did.
  const ViewSpec window = ViewSpec::sliding(kWindow);
  double window_share = 0;
  std::uint64_t window_compared = 0;
  const std::size_t w = index_of(ns, window);
  for (const auto& item : listed_now[w]) {
    if (!tracked_then.contains(item.key)) continue;
    const PointAnswer a = ns.count(item.key, window);
    const double truth = model_count(events, item.key, window, a);
    ++window_compared;
    window_share = std::max(window_share, std::abs(a.item.estimate - truth) / truth);
  }
  EXPECT_GE(window_compared, 1u);
  EXPECT_EQ(stats.views[w].audit.top_compared, window_compared);
  EXPECT_NEAR(stats.views[w].audit.top_max_error_share, window_share, 1e-12);
  EXPECT_GT(window_share, 0) << "a 16-wide bucket sketch over 2000 items over-counts a top item";
  // Items that left every list are let go of.
  EXPECT_LE(stats.audit.top_items, 5u * ns.views().size());
}

TEST(AccuracyAudit, AnUndersizedNamespaceBreachesTheSlaAndAWideOneDoesNot) {
  const auto events = stream(11, 20000, 5000);
  NamespaceConfig narrow = config(16, 64, 10);
  narrow.audit_sla = 0.01;
  NamespaceConfig wide = config(1 << 16, 64, 10);
  wide.window_sketch_width = 1 << 14;
  wide.audit_sla = 0.01;
  Namespace small(narrow), large(wide);
  // Top items are tracked from the first pass on: pass twice.
  const std::vector<ModelEvent> first(events.begin(), events.begin() + 5000), second(events.begin() + 5000, events.end());
  feed(small, first);
  feed(large, first);
  EXPECT_TRUE(small.audit_pass().empty());
  EXPECT_TRUE(large.audit_pass().empty());
  feed(small, second);
  feed(large, second);
  const auto changes = small.audit_pass();
  const std::size_t w = index_of(small, ViewSpec::sliding(kWindow));
  ASSERT_TRUE(std::any_of(changes.begin(), changes.end(), [&](const auto& c) { return c.view == w && c.breached; }));
  EXPECT_TRUE(large.audit_pass().empty());
  const ViewAudit bad = small.stats().views[w].audit;
  EXPECT_GT(bad.top_max_error_share, 0.01);
  EXPECT_GE(bad.suggested_growth, 2u);
  EXPECT_GT(bad.max_error, 0);
  for (const auto& v : large.stats().views) {
    EXPECT_EQ(v.audit.max_error, 0) << v.view.label();
    EXPECT_EQ(v.audit.suggested_growth, 0u);
  }
  // A second pass that still breaches says nothing new.
  EXPECT_TRUE(small.audit_pass().empty());
}

TEST(AccuracyAudit, TheAuditChangesNoAnswer) {
  const auto events = stream(5);
  Namespace audited(config(64, 64, 10)), plain(config(64, 0, 0));
  ASSERT_EQ(plain.audit(), nullptr);
  std::vector<ModelEvent> part;
  for (std::size_t i = 0; i < events.size(); ++i) {
    part.push_back(events[i]);
    if (part.size() == 500 || i + 1 == events.size()) {
      feed(audited, part);
      feed(plain, part);
      audited.audit_pass();
      part.clear();
    }
  }
  for (const auto& v : plain.views()) {
    const auto a = audited.top(v->spec(), 20), b = plain.top(v->spec(), 20);
    EXPECT_EQ(a.items, b.items) << v->spec().label();
    EXPECT_EQ(a.total, b.total);
  }
}

TEST(AccuracyAudit, ItsStateSurvivesACheckpointAndAnOlderStateStartsItLate) {
  const auto events = stream(13);
  const std::vector<ModelEvent> first(events.begin(), events.begin() + 3000), second(events.begin() + 3000, events.end());
  Namespace ns(config(64, 30, 5));
  feed(ns, first);
  ns.audit_pass();
  Namespace copy(config(64, 30, 5));
  copy.restore_state(ns.serialize_state());
  EXPECT_EQ(copy.serialize_state(), ns.serialize_state());
  feed(ns, second);
  feed(copy, second);
  ns.audit_pass();
  copy.audit_pass();
  const auto a = ns.stats(), b = copy.stats();
  for (std::size_t v = 0; v < a.views.size(); ++v) {
    EXPECT_EQ(a.views[v].audit.compared, b.views[v].audit.compared);
    EXPECT_EQ(a.views[v].audit.max_error, b.views[v].audit.max_error);
    EXPECT_EQ(a.views[v].audit.top_max_error_share, b.views[v].audit.top_max_error_share);
  }
  EXPECT_EQ(a.audit.sampled_items, b.audit.sampled_items);
  EXPECT_TRUE(b.audit.from_start);
  // A state without the audit (a configuration without one) does not load
  // into one that has it, and the other way round.
  NamespaceConfig off = config(64, 0, 0);
  Namespace unaudited(off);
  EXPECT_THROW(unaudited.restore_state(ns.serialize_state()), FormatError);
  // A damaged audit part is refused and leaves the namespace as it was.
  std::string blob = ns.serialize_state();
  const std::string before = copy.serialize_state();
  blob[blob.size() - 20] ^= 0x55;
  EXPECT_THROW(copy.restore_state(blob), FormatError);
  EXPECT_EQ(copy.serialize_state(), before);
}

// A decayed view rebases its landmark every ~433 half-lives; the audit's
// exact sums rebase their own and stay the model's.
TEST(AccuracyAudit, ExactDecayedSumsSurviveRebasing) {
  NamespaceConfig c = config(64, 20, 0);
  c.half_lives = {1};
  Namespace ns(c);
  testing::StreamSpec spec;
  spec.events = 6000;
  spec.universe = 30;
  spec.duration = 1500;  // 1500 half-lives: several rebases
  spec.jitter = 0.5;
  spec.integer_weights = true;
  const auto events = testing::random_stream(spec, 17);
  feed(ns, events, 50);
  const std::size_t v = index_of(ns, ViewSpec::decayed(1));
  const double now = ns.now();
  std::size_t checked = 0;
  for (const auto& key : keys_of(events)) {
    const auto exact = ns.audit()->exact(key, v, now);
    if (!exact) continue;
    double model = 0;
    for (const auto& e : events) model += e.key == key ? e.weight * std::exp2(-(now - e.time)) : 0;
    EXPECT_NEAR(*exact, model, 1e-9 * std::max(1.0, model)) << key;
    ++checked;
  }
  EXPECT_EQ(checked, ns.stats().audit.sampled_items);
  EXPECT_GE(checked, 10u);
}

// A state written before the audit (namespace state version 2) loads with
// an audit that starts then: its items are tracked part of the time (the
// views' estimates their base), so a window compares them only once it
// starts after the load.
TEST(AccuracyAudit, AStateWithoutTheAuditStartsItLate) {
  const auto events = stream(19, 4000, 300);
  NamespaceConfig c = config(64, 20, 0);
  Namespace source(c);
  const std::vector<ModelEvent> before(events.begin(), events.begin() + 2000), soon(events.begin() + 2000, events.begin() + 2050),
      later(events.begin() + 2050, events.end());
  feed(source, before);
  // The version 3 payload less its audit part (u8 present, u32 length, blob), sealed as version 2.
  const std::string v3 = source.serialize_state();
  const auto opened = open_blob(v3, BlobKind::namespace_state, 3);
  const std::string audit_blob = written([&](BinaryWriter& w) { source.audit()->serialize_state_into(w); });
  const std::string payload(opened.payload.substr(0, opened.payload.size() - 1 - 4 - audit_blob.size()));
  Namespace loaded(c);
  loaded.restore_state(seal_blob(BlobKind::namespace_state, 2, payload));
  EXPECT_FALSE(loaded.stats().audit.from_start);
  EXPECT_EQ(loaded.stats().audit.sampled_items, 0u);
  feed(loaded, soon);
  loaded.audit_pass();
  auto stats = loaded.stats();
  EXPECT_GT(stats.audit.sampled_items, 0u);
  const std::size_t all = index_of(loaded, ViewSpec::all_time()), window = index_of(loaded, ViewSpec::sliding(kWindow));
  // All-time: the estimate's growth since the item's first event after the
  // load against its exact count since then.
  EXPECT_EQ(stats.views[all].audit.compared, stats.audit.sampled_items);
  for (const auto& key : keys_of(soon)) {
    const auto exact = loaded.audit()->exact(key, all, 0);
    if (!exact) continue;
    double since = 0;
    for (const auto& e : soon) since += e.key == key ? e.weight : 0;
    EXPECT_EQ(*exact, since) << key << ": counted from its first event after the load";
  }
  // The 10-minute window still reaches back before the load: nothing compared.
  EXPECT_EQ(stats.views[window].audit.compared, 0u);
  // An hour later it starts after every item's tracking began.
  feed(loaded, later);
  loaded.audit_pass();
  stats = loaded.stats();
  EXPECT_GT(stats.views[window].audit.compared, 0u);
}

// The audit part of a state is checked field by field: a bad one is
// refused with its reason and leaves the audit as it was.
TEST(AccuracyAudit, ABadAuditPartIsRefusedWithItsReason) {
  const auto events = stream(23, 3000);
  NamespaceConfig c = config(64, 20, 3);
  Namespace ns(c);
  feed(ns, events);
  ns.audit_pass();
  const std::string blob = written([&](BinaryWriter& w) { ns.audit()->serialize_state_into(w); });
  const std::string payload(open_blob(blob, BlobKind::accuracy_audit, 1).payload);
  auto with = [&](std::size_t offset, auto value) {
    std::string p = payload;
    std::memcpy(p.data() + offset, &value, sizeof value);
    return seal_blob(BlobKind::accuracy_audit, 1, p);
  };
  // Payload: u8 from start (0), u32 halvings (1), u32 views (5), views x (u8 anchored, f64 landmark) (9, 18, 27), u32 items (36), ...
  const std::pair<std::string, std::string> cases[] = {
      {with(0, std::uint8_t{2}), "corrupt accuracy audit: bad from-start flag"},
      {with(1, std::uint32_t{65}), "corrupt accuracy audit: bad sample threshold"},
      {with(5, std::uint32_t{2}), "corrupt accuracy audit: holds 2 views, the configuration has 3"},
      {with(9, std::uint8_t{1}), "corrupt accuracy audit: a decay landmark for a view that does not decay"},
      {with(36, std::uint32_t{1000}), "corrupt accuracy audit: holds more items than the audit tracks"},
      {seal_blob(BlobKind::accuracy_audit, 1, payload.substr(0, payload.size() - 3)), "corrupt accuracy audit: truncated"},
  };
  AccuracyAudit target(c, ns.views(), true);
  const std::string before = written([&](BinaryWriter& w) { target.serialize_state_into(w); });
  for (const auto& [bad, message] : cases) {
    try {
      target.restore_state(bad);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const FormatError& e) {
      EXPECT_EQ(std::string(e.what()).substr(0, message.size()), message);
    }
    EXPECT_EQ(written([&](BinaryWriter& w) { target.serialize_state_into(w); }), before);
  }
  target.restore_state(blob);
  EXPECT_EQ(written([&](BinaryWriter& w) { target.serialize_state_into(w); }), blob);
}

TEST(AccuracyAudit, ConfigurationLimitsAreCheckedByField) {
  NamespaceConfig c = config(64, 0, 0);
  c.audit_sample = NamespaceConfig::kMaxAuditSample + 1;
  EXPECT_THROW(c.validate(), InvalidArgument);
  c = config(64, 0, 0);
  c.audit_top = NamespaceConfig::kMaxAuditTop + 1;
  EXPECT_THROW(c.validate(), InvalidArgument);
  c = config(64, 0, 0);
  c.audit_sla = 0;
  try {
    c.validate();
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("audit_sla:", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace ebb::engine
