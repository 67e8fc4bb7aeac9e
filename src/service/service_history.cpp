// History: snapshots of every view's top K into SQLite, answers as of a
// past time (memory first, then the snapshots), and an item's series.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>

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

// What an answer from history needs of its namespace, copied under the
// entry's lock so that SQLite is read after it is released: a query held up
// by the database (a busy file, a slow disk) never holds up ingest.
struct PastView {
  std::string ns;
  engine::ViewSpec spec;
  double now = 0;
  std::uint32_t candidates = 0;
  std::uint32_t k = 0;
};

PastView past_view(const NamespaceEntry& e, const std::optional<engine::ViewSpec>& view) {
  return {e.name, e.ns.view(view).spec(), e.ns.now(), e.ns.config().candidates, e.ns.config().k};
}

// The snapshot the answer comes from, or history_unavailable saying why.
storage::HistorySnapshot snapshot_at(const Service::State& s, const PastView& p, double as_of) {
  if (!s.history) {
    throw invalid("history_unavailable", "timestamp: the " + p.spec.label() + " view keeps no past that far in memory, and this server keeps no history (" +
                                             (s.options.data_dir ? "--history-interval 0" : "no data directory") + ")");
  }
  auto snap = s.history->at(p.ns, history_key(p.spec), as_of);
  if (!snap) {
    throw invalid("history_unavailable", "timestamp: no snapshot of the " + p.spec.label() + " view at or before it (history is written every " +
                                             format_duration(s.options.history_interval) + " and kept " +
                                             format_duration(s.options.history_retention.hours) + ")");
  }
  return std::move(*snap);
}

template <typename Answer>
void describe(Answer& a, const Service::State& s, const PastView& p, const storage::HistorySnapshot& h, double as_of) {
  a.view = p.spec;
  a.as_of = h.t;
  a.window_start = h.window_start;
  a.window_end = h.window_end;
  a.source = "history";
  // The spacing kept at that age; wider when the snapshot found is further
  // back than that (history was off, or the server down, around T).
  a.granularity = std::max(spacing(s, p.now - h.t), as_of - h.t);
  a.accuracy.epsilon = h.epsilon;
  a.accuracy.confidence = h.confidence;
  a.accuracy.max_error = h.max_error;
  a.accuracy.guarantee_threshold = h.guarantee_threshold;
  a.accuracy.candidates = p.candidates;
}

engine::PointAnswer point_from(const Service::State& s, const PastView& p, const storage::HistorySnapshot& h, std::string_view item, double as_of) {
  engine::PointAnswer a;
  describe(a, s, p, h, as_of);
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
    if (p.spec.kind == engine::ViewSpec::Kind::decayed) {
      a.rate = std::log(2.0) / p.spec.half_life * a.item.estimate;
    } else if (h.window_end > h.window_start) {
      a.rate = a.item.estimate / (h.window_end - h.window_start);
    }
  }
  return a;
}

}  // namespace

engine::TopKAnswer top_as_of(const Service::State& s, const NamespaceEntry& e, const std::optional<engine::ViewSpec>& view,
                             std::optional<std::size_t> k, double as_of) {
  PastView p;
  {
    std::shared_lock lock(e.mu);
    if (auto memory = e.ns.top_at(view, k, as_of)) {
      memory->source = "memory";
      return std::move(*memory);
    }
    p = past_view(e, view);
  }
  const auto h = snapshot_at(s, p, as_of);
  engine::TopKAnswer a;
  describe(a, s, p, h, as_of);
  a.total = h.total;
  const std::size_t want = k.value_or(p.k);
  for (std::size_t i = 0; i < h.items.size() && i < want; ++i) a.items.push_back({h.items[i].item, h.items[i].estimate, h.items[i].lower, h.items[i].upper});
  a.accuracy.undersized = want > h.k;  // the snapshot holds its K: more cannot be told
  return a;
}

std::vector<engine::PointAnswer> points_as_of(const Service::State& s, const NamespaceEntry& e, std::span<const std::string> items,
                                              const std::optional<engine::ViewSpec>& view, double as_of) {
  std::vector<engine::PointAnswer> out;
  out.reserve(items.size());
  if (items.empty()) return out;
  PastView p;
  {
    std::shared_lock lock(e.mu);
    if (auto first = e.ns.count_at(items.front(), view, as_of)) {
      // The rings reach: every item from memory.
      first->source = "memory";
      out.push_back(std::move(*first));
      for (std::size_t i = 1; i < items.size(); ++i) {
        auto q = e.ns.count_at(items[i], view, as_of);
        q->source = "memory";
        out.push_back(std::move(*q));
      }
      return out;
    }
    p = past_view(e, view);
  }
  const auto h = snapshot_at(s, p, as_of);
  for (const auto& item : items) out.push_back(point_from(s, p, h, item, as_of));
  return out;
}

engine::TopKAnswer Service::top_at(const std::string& name, const std::optional<engine::ViewSpec>& view, std::optional<std::size_t> k,
                                   double as_of) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto e = s_->require(name, "namespace");
  return on_query([&] { return top_as_of(*s_, *e, view, k, as_of); });
}

engine::PointAnswer Service::count_at(const std::string& name, std::string_view item, const std::optional<engine::ViewSpec>& view,
                                      double as_of) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto e = s_->require(name, "namespace");
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
    // Retention runs even when the snapshot fails (a full disk is when
    // deleting old points matters most); the failure is still reported.
    std::exception_ptr failed;
    try {
      const auto n = snapshot_history();
      if (n > 0) s.log->debug("history snapshots={}", n);
    } catch (...) {
      failed = std::current_exception();
    }
    if (std::chrono::steady_clock::now() - last_retention > std::chrono::minutes(1)) {
      last_retention = std::chrono::steady_clock::now();
      const auto deleted = s.history->apply_retention(wall_clock_now(), s.options.history_retention);
      if (deleted > 0) s.log->debug("history retention deleted={}", deleted);
    }
    if (failed) std::rethrow_exception(failed);
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
