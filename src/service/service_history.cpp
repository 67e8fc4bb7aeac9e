// History: snapshots of every view's top K into SQLite, answers as of a
// past time (memory first, then the snapshots), and an item's series.
#include <chrono>
#include <cmath>

#include "ebb/core/clock.hpp"
#include "ebb/core/duration.hpp"
#include "service_state.hpp"

namespace ebb::service {
namespace {

// How a view is named in the history database: "all", "w:1h", "h:5m".
std::string history_key(const engine::ViewSpec& v) {
  switch (v.kind) {
    case engine::ViewSpec::Kind::all_time: return "all";
    case engine::ViewSpec::Kind::window: return "w:" + v.name();
    case engine::ViewSpec::Kind::decayed: return "h:" + v.name();
  }
  return "?";
}

storage::HistorySnapshot snapshot_of(const std::string& ns, const engine::TopKAnswer& a, std::uint32_t k) {
  storage::HistorySnapshot h;
  h.ns = ns;
  h.view = history_key(a.view);
  h.t = a.as_of;
  h.window_start = a.window_start;
  h.window_end = a.view.kind == engine::ViewSpec::Kind::window ? a.window_end : a.as_of;
  h.total = a.total;
  h.epsilon = a.accuracy.epsilon;
  h.confidence = a.accuracy.confidence;
  h.max_error = a.accuracy.max_error;
  h.guarantee_threshold = a.accuracy.guarantee_threshold;
  h.k = k;
  for (const auto& i : a.items) h.items.push_back({i.key, i.estimate, i.lower, i.upper});
  return h;
}

// How far apart the snapshots kept at this age are: the answer's
// granularity.
double spacing(const Service::State& s, double age) {
  const auto& r = s.options.history_retention;
  if (age <= r.full) return s.options.history_interval;
  return age <= r.minutes ? 60 : 3600;
}

double now_of(const NamespaceEntry& e) { return e.ns.now(); }

// The snapshot the answer comes from, or history_unavailable saying why.
storage::HistorySnapshot snapshot_at(const Service::State& s, const NamespaceEntry& e, const engine::ViewSpec& spec, double as_of) {
  if (!s.history) {
    throw invalid("history_unavailable", "timestamp: the " + spec.label() + " view keeps no past that far in memory, and this server keeps no history (" +
                                             (s.options.data_dir ? "--history-interval 0" : "no data directory") + ")");
  }
  auto snap = s.history->at(e.name, history_key(spec), as_of);
  if (!snap) {
    throw invalid("history_unavailable", "timestamp: no snapshot of the " + spec.label() + " view at or before it (history is written every " +
                                             format_duration(s.options.history_interval) + " and kept " +
                                             format_duration(s.options.history_retention.hours) + ")");
  }
  return std::move(*snap);
}

template <typename Answer>
void describe(Answer& a, const Service::State& s, const NamespaceEntry& e, const engine::ViewSpec& spec, const storage::HistorySnapshot& h) {
  a.view = spec;
  a.as_of = h.t;
  a.window_start = h.window_start;
  a.window_end = h.window_end;
  a.source = "history";
  a.granularity = spacing(s, now_of(e) - h.t);
  a.accuracy.epsilon = h.epsilon;
  a.accuracy.confidence = h.confidence;
  a.accuracy.max_error = h.max_error;
  a.accuracy.guarantee_threshold = h.guarantee_threshold;
  a.accuracy.candidates = e.ns.config().candidates;
}

engine::PointAnswer point_from(const Service::State& s, const NamespaceEntry& e, const engine::ViewSpec& spec, const storage::HistorySnapshot& h,
                               std::string_view item) {
  engine::PointAnswer a;
  describe(a, s, e, spec, h);
  a.item.key = std::string(item);
  a.listed = false;
  for (const auto& i : h.items) {
    if (i.item != item) continue;
    a.item = {i.item, i.estimate, i.lower, i.upper};
    a.listed = true;
    a.tracked = true;
    break;
  }
  if (!*a.listed) a.item.upper = h.unlisted_bound();
  // Rates as the views define them, from the listed estimate.
  if (*a.listed) {
    if (spec.kind == engine::ViewSpec::Kind::decayed) {
      a.rate = std::log(2.0) / spec.half_life * a.item.estimate;
    } else if (h.window_end > h.window_start) {
      a.rate = a.item.estimate / (h.window_end - h.window_start);
    }
  }
  return a;
}

}  // namespace

engine::TopKAnswer top_as_of(const Service::State& s, const NamespaceEntry& e, const std::optional<engine::ViewSpec>& view,
                             std::optional<std::size_t> k, double as_of) {
  if (auto memory = e.ns.top_at(view, k, as_of)) {
    memory->source = "memory";
    return std::move(*memory);
  }
  const auto spec = e.ns.view(view).spec();
  const auto h = snapshot_at(s, e, spec, as_of);
  engine::TopKAnswer a;
  describe(a, s, e, spec, h);
  a.total = h.total;
  const std::size_t want = k.value_or(e.ns.config().k);
  for (std::size_t i = 0; i < h.items.size() && i < want; ++i) a.items.push_back({h.items[i].item, h.items[i].estimate, h.items[i].lower, h.items[i].upper});
  a.accuracy.undersized = want > h.k;  // the snapshot holds its K: more cannot be told
  return a;
}

std::vector<engine::PointAnswer> points_as_of(const Service::State& s, const NamespaceEntry& e, std::span<const std::string> items,
                                              const std::optional<engine::ViewSpec>& view, double as_of) {
  std::vector<engine::PointAnswer> out;
  out.reserve(items.size());
  if (items.empty()) return out;
  if (auto first = e.ns.count_at(items.front(), view, as_of)) {
    // The rings reach: every item from memory.
    first->source = "memory";
    out.push_back(std::move(*first));
    for (std::size_t i = 1; i < items.size(); ++i) {
      auto p = e.ns.count_at(items[i], view, as_of);
      p->source = "memory";
      out.push_back(std::move(*p));
    }
    return out;
  }
  const auto spec = e.ns.view(view).spec();
  const auto h = snapshot_at(s, e, spec, as_of);
  for (const auto& item : items) out.push_back(point_from(s, e, spec, h, item));
  return out;
}

engine::TopKAnswer Service::top_at(const std::string& name, const std::optional<engine::ViewSpec>& view, std::optional<std::size_t> k,
                                   double as_of) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto e = s_->require(name, "namespace");
  std::shared_lock lock(e->mu);
  return on_query([&] { return top_as_of(*s_, *e, view, k, as_of); });
}

engine::PointAnswer Service::count_at(const std::string& name, std::string_view item, const std::optional<engine::ViewSpec>& view,
                                      double as_of) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto e = s_->require(name, "namespace");
  std::shared_lock lock(e->mu);
  const std::string one(item);
  return on_query([&] { return std::move(points_as_of(*s_, *e, std::span<const std::string>(&one, 1), view, as_of).front()); });
}

std::size_t Service::snapshot_history() {
  State& s = *s_;
  if (!s.history) return 0;
  std::lock_guard pass(s.history_mu);
  std::vector<EntryPtr> entries;
  {
    std::shared_lock lock(s.map_mu);
    for (const auto& [_, e] : s.entries) entries.push_back(e);
  }
  std::vector<storage::HistorySnapshot> snapshots;
  for (const auto& e : entries) {
    std::shared_lock lock(e->mu);
    if (e->deleted || e->ns.stats().events == 0) continue;
    const std::uint32_t k = e->ns.config().k;
    for (const auto& v : e->ns.views()) snapshots.push_back(snapshot_of(e->name, e->ns.top(v->spec(), k), k));
  }
  // Written outside every namespace lock: ingest never waits on SQLite.
  s.history->write(snapshots);
  return snapshots.size();
}

void Service::start_history() {
  State& s = *s_;
  if (!s.history || s.historian.joinable()) return;
  auto last_retention = std::chrono::steady_clock::now();
  s.historian = s.every(s.options.history_interval, "history snapshot failed (ingest and queries go on)", [this, &s, last_retention]() mutable {
    const auto n = snapshot_history();
    if (n > 0) s.log->debug("history snapshots={}", n);
    if (std::chrono::steady_clock::now() - last_retention > std::chrono::minutes(1)) {
      last_retention = std::chrono::steady_clock::now();
      const auto deleted = s.history->apply_retention(wall_clock_now(), s.options.history_retention);
      if (deleted > 0) s.log->debug("history retention deleted={}", deleted);
    }
  });
}

HistorySeries Service::history(const std::string& name, std::string_view item, const std::optional<engine::ViewSpec>& view, double from,
                               double to, std::size_t max_points) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto e = s_->require(name, "namespace");
  HistorySeries series;
  {
    std::shared_lock lock(e->mu);
    series.view = on_query([&] { return e->ns.view(view).spec(); });
    if (item.empty() || item.size() > e->ns.config().max_item_bytes) {
      throw invalid("bad_parameter", "item_id: must be 1 to " + std::to_string(e->ns.config().max_item_bytes) + " bytes");
    }
  }
  if (!s_->history) throw invalid("history_unavailable", "this server keeps no history (--history-interval 0 or no data directory)");
  series.points = s_->history->series(name, history_key(series.view), item, from, to, max_points + 1);
  if (series.points.size() > max_points) {
    series.points.resize(max_points);
    series.truncated = true;
  }
  return series;
}

}  // namespace ebb::service
