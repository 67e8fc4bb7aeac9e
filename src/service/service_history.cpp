// History: snapshots of every view's top K into SQLite, answers as of a
// past time (memory first, then the snapshots), and an item's series.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <vector>

#include "ebb/core/clock.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/storage/file_io.hpp"
#include "service_cluster.hpp"
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
  h.unlisted = a.unlisted_upper;
  for (const auto& i : a.items) h.items.push_back({i.key, i.estimate, i.lower, i.upper});
  return h;
}

// How far apart the snapshots kept at this age are: the answer's
// granularity. Retention thins by the wall clock, so the age is the wall
// clock's (an event-clock namespace's "now" may lag it by days).
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
  std::uint32_t candidates = 0;
  std::uint32_t k = 0;
};

PastView past_view(const NamespaceEntry& e, const std::optional<engine::ViewSpec>& view) {
  return {e.name, e.ns.view(view).spec(), e.ns.config().candidates, e.ns.config().k};
}

// Why this server answers nothing from history: off by configuration, or
// a database it could not open.
std::string no_history(const Service::State& s) {
  std::lock_guard lock(s.metrics_mu);
  if (!s.history_off.empty()) return s.history_off;
  if (s.options.external_log) {  // a cluster partition's
    return std::string("this partition keeps no history (") +
           (s.options.data_dir ? "--history-interval 0" : "no data directory for it: no --data-dir, or its folder is not usable") + ")";
  }
  return std::string("this server keeps no history (") + (s.options.data_dir ? "--history-interval 0" : "no data directory") + ")";
}

// The snapshot the answer comes from, or history_unavailable saying why.
storage::HistorySnapshot snapshot_at(const Service::State& s, const PastView& p, double as_of) {
  if (!s.history) throw invalid("history_unavailable", "timestamp: the " + p.spec.label() + " view keeps no past that far in memory, and " + no_history(s));
  if (s.pending_drop(p.ns)) {
    throw invalid("history_unavailable", "timestamp: the history of a deleted namespace of this name is still being removed; none is kept for this one yet");
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
  a.granularity = std::max(spacing(s, wall_clock_now() - h.t), as_of - h.t);
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
  a.unlisted_upper = h.unlisted_bound();
  for (std::size_t i = a.items.size(); i < h.items.size(); ++i) a.unlisted_upper = std::max(a.unlisted_upper, h.items[i].upper);
  a.accuracy.tail_uncertain = engine::tail_uncertain(a.items, a.unlisted_upper);
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
  if (s_->options.cluster) return cluster_mode::top(*s_, name, view, k, as_of);
  auto e = s_->require(name, "namespace");
  return on_query([&] { return top_as_of(*s_, *e, view, k, as_of); });
}

engine::PointAnswer Service::count_at(const std::string& name, std::string_view item, const std::optional<engine::ViewSpec>& view,
                                      double as_of) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (s_->options.cluster) {
    engine::TopKAnswer view_answer;
    const std::string items[] = {std::string(item)};
    return cluster_mode::counts(*s_, name, items, view, view_answer, as_of).at(0);
  }
  auto e = s_->require(name, "namespace");
  const std::string one(item);
  return on_query([&] { return std::move(points_as_of(*s_, *e, std::span<const std::string>(&one, 1), view, as_of).front()); });
}

namespace {

std::filesystem::path pending_file(const Service::State& s) { return *s.options.data_dir / "history-pending-drops"; }

// Writes the pending drops to their file (one name a line; none: no file).
void save_pending(Service::State& s) {
  std::lock_guard file(s.pending_file_mu);
  std::string lines;
  {
    std::lock_guard lock(s.pending_mu);
    for (const auto& [name, pending] : s.pending_drops) lines += name + "\n";  // (read back as handed over)
  }
  try {
    if (lines.empty()) {
      std::filesystem::remove(pending_file(s));
    } else {
      storage::write_file_atomically(pending_file(s), lines);
    }
    std::lock_guard lock(s.metrics_mu);
    s.pending_file_error.clear();
  } catch (const std::exception& e) {
    s.log->error("history: cannot record the deleted namespaces whose history is still to be removed: {}", e.what());
    std::lock_guard lock(s.metrics_mu);
    s.pending_file_error = std::string("history: deleted namespaces whose history is still to be removed are not recorded (a crash would forget them): ") + e.what();
  }
}

// These marks of the name are done with (a drop removes every row of the
// name, so it satisfies every mark there was when it began; one made since
// waits for the next retry).
// Takes these marks of the name out (not saved); the caller holds pending_mu.
void erase_marks(Service::State& s, const std::string& name, std::span<const std::uint64_t> marks) {
  auto [it, end] = s.pending_drops.equal_range(name);
  while (it != end) it = std::find(marks.begin(), marks.end(), it->second.mark) != marks.end() ? s.pending_drops.erase(it) : std::next(it);
}

void forget_pending(Service::State& s, const std::string& name, std::span<const std::uint64_t> marks) {
  {
    std::lock_guard lock(s.pending_mu);
    erase_marks(s, name, marks);
  }
  save_pending(s);
}

// A mark for the name, not yet saved.
std::uint64_t add_mark(Service::State& s, const std::string& name, bool handed_over) {
  std::lock_guard lock(s.pending_mu);
  s.pending_drops.emplace(name, Service::State::PendingDrop{++s.last_drop_mark, handed_over});
  return s.last_drop_mark;
}

// The mark's entry (nullptr: not pending); the caller holds pending_mu.
Service::State::PendingDrop* find_mark(Service::State& s, const std::string& name, std::uint64_t mark) {
  auto [it, end] = s.pending_drops.equal_range(name);
  for (; it != end; ++it) {
    if (it->second.mark == mark) return &it->second;
  }
  return nullptr;
}

}  // namespace

std::uint64_t mark_history_pending(Service::State& s, const std::string& name, bool handed_over) {
  const auto mark = add_mark(s, name, handed_over);
  try {
    save_pending(s);  // (its file's failures it reports itself; this is out of memory)
  } catch (...) {
    std::lock_guard lock(s.pending_mu);
    erase_marks(s, name, {&mark, 1});
    throw;
  }
  return mark;
}

void unmark_history_pending(Service::State& s, const std::string& name, std::uint64_t mark) { forget_pending(s, name, {&mark, 1}); }

void hand_over_history_mark(Service::State& s, const std::string& name, std::uint64_t mark) {
  std::lock_guard lock(s.pending_mu);
  if (auto* pending = find_mark(s, name, mark)) pending->handed_over = true;
}

namespace {

// Drops the name's history and forgets `marks` (true), or logs why the
// database refused and leaves them for the history thread's next pass;
// the caller holds history_mu.
bool try_drop(Service::State& s, const std::string& name, std::span<const std::uint64_t> marks) {
  try {
    s.history->drop_namespace(name);
  } catch (const std::exception& e) {
    s.log->warn("history of deleted namespace '{}' not removed yet ({}); the history thread retries", name, e.what());
    return false;
  }
  forget_pending(s, name, marks);
  return true;
}

}  // namespace

bool drop_history(Service::State& s, const std::string& name, std::uint64_t mark) {
  std::lock_guard pass(s.history_mu);
  {
    // (Pending until now: only its delete forgets a mark under way. While
    // it is, no pass writes the name, so every row of it is the deleted
    // namespace's.)
    std::lock_guard lock(s.pending_mu);
    if (!find_mark(s, name, mark)) return true;
  }
  if (try_drop(s, name, {&mark, 1})) return true;
  hand_over_history_mark(s, name, mark);
  return false;
}

// Each name's drop on its own (one refused name holds up neither the
// others nor the pass).
void retry_history_drops(Service::State& s) {
  std::map<std::string, std::vector<std::uint64_t>, std::less<>> pending;  // name: its marks handed over now (each drop satisfies them all)
  {
    std::lock_guard lock(s.pending_mu);
    for (const auto& [name, drop] : s.pending_drops) {
      if (drop.handed_over) pending[name].push_back(drop.mark);
    }
  }
  for (const auto& [name, marks] : pending) {
    if (try_drop(s, name, marks)) s.log->info("history of deleted namespace '{}' removed", name);
  }
}

namespace {

// Whether the data directory's filesystem has room for history; else
// history_error says why it pauses (logged once per pause).
bool room_for_history(Service::State& s) {
  if (s.options.history_min_free_bytes == 0 || !s.options.data_dir) return true;
  std::error_code ec;
  const auto space = std::filesystem::space(*s.options.data_dir, ec);
  if (ec || space.available >= s.options.history_min_free_bytes) return true;
  const std::string why = "history is paused: " + std::to_string(space.available >> 20) + " MiB free on the data directory's filesystem, under --history-min-free (" +
                          std::to_string(s.options.history_min_free_bytes >> 20) + " MiB); the log keeps the room";
  std::lock_guard lock(s.metrics_mu);
  ++s.counters.history_passes_low_disk;
  if (!s.history_error.starts_with("history is paused")) s.log->warn("{}", why);
  s.history_error = why;
  return false;
}

}  // namespace

std::size_t Service::snapshot_history() {
  State& s = *s_;
  if (!s.history) return 0;
  std::lock_guard pass(s.history_mu);
  try {
    retry_history_drops(s);
    if (!room_for_history(s)) return 0;
    const std::vector<EntryPtr> entries = s.all_entries();
    std::vector<storage::HistorySnapshot> snapshots;
    for (const auto& e : entries) {
      if (s.pending_drop(e->name)) continue;  // an earlier namespace's history is still there
      std::shared_lock lock(e->mu);
      // (A cluster partition snapshots a namespace it holds no items of too:
      // its empty list is its part of the answer as of then.)
      if (e->deleted || (e->ns.stats().events == 0 && !s.options.external_log)) continue;
      const std::uint32_t k = e->ns.config().k;
      for (const auto& v : e->ns.views()) snapshots.push_back(snapshot_of(e->name, e->ns.top(v->spec(), k), k));
    }
    // Written outside every namespace lock: ingest never waits on SQLite.
    const auto written = s.history->write(snapshots);
    const auto bytes = s.history->bytes();
    std::lock_guard lock(s.metrics_mu);
    s.counters.history_bytes = bytes;
    ++s.counters.history_passes_ok;
    s.counters.history_snapshots += written;
    if (!s.history_error.empty()) s.log->info("history snapshots are written again");
    s.history_error.clear();
    return written;
  } catch (const std::exception& e) {
    std::lock_guard lock(s.metrics_mu);
    ++s.counters.history_passes_failed;
    s.history_error = std::string("history snapshots are failing: ") + e.what();
    throw;
  }
}

void Service::open_history() {
  State& s = *s_;
  if (!s.options.data_dir || s.options.history_interval <= 0) return;
  const auto file = *s.options.data_dir / "history.sqlite3";
  try {
    s.history = std::make_unique<storage::HistoryStore>(file);
  } catch (const std::exception& e) {
    // History is derived data: the server serves without it rather than
    // not at all.
    std::lock_guard lock(s.metrics_mu);
    s.history_off = std::string("history is off: ") + e.what() + " (move " + file.string() +
                    " aside to start a new one, or run with --history-interval 0)";
    s.log->error("{}", s.history_off);
  }
}

void Service::sweep_history() {
  State& s = *s_;
  if (!s.history) return;
  // Drops a crash left pending (a namespace of the name may exist again).
  std::error_code ec;
  if (std::filesystem::exists(pending_file(s), ec)) {
    try {
      std::istringstream lines(storage::read_whole_file(pending_file(s)));
      for (std::string name; std::getline(lines, name);) {
        if (!name.empty()) add_mark(s, name, true);
      }
    } catch (const std::exception& e) {
      s.log->error("history: cannot read {}: {}", pending_file(s).string(), e.what());
    }
    try {
      std::lock_guard pass(s.history_mu);
      retry_history_drops(s);
    } catch (const std::exception& e) {
      s.log->warn("history of deleted namespaces not removed yet ({}); the history thread retries", e.what());
    }
  }
  // Namespaces deleted while their history could not be removed and not
  // recorded as such. Once the database refuses one, the rest are left to
  // the history thread: a locked database must not hold up readiness for
  // a busy timeout per name.
  try {
    bool refused = false;
    for (const auto& name : s.history->namespaces()) {
      if (s.find(name)) continue;
      if (refused) {
        add_mark(s, name, true);
        continue;
      }
      refused = !drop_history(s, name, mark_history_pending(s, name));
    }
    if (refused) save_pending(s);
  } catch (const std::exception& e) {
    s.log->warn("history: could not list its namespaces ({}); deleted namespaces' history is removed later", e.what());
  }
}

void Service::start_history() {
  State& s = *s_;
  if (!s.history || s.historian.joinable()) return;
  // Only now does a cluster partition know every namespace the log still has.
  if (s.options.external_log) sweep_history();
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
      try {
        const auto deleted = s.history->apply_retention(wall_clock_now(), s.options.history_retention);
        if (deleted > 0) s.log->debug("history retention deleted={}", deleted);
      } catch (const std::exception& e) {
        std::lock_guard lock(s.metrics_mu);
        ++s.counters.history_passes_failed;
        s.history_error = std::string("history retention is failing: ") + e.what();
        if (!failed) failed = std::current_exception();
      }
    }
    if (failed) std::rethrow_exception(failed);
  });
}

HistorySeries Service::history(const std::string& name, std::string_view item, const std::optional<engine::ViewSpec>& view, double from,
                               double to, std::size_t max_points) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto e = s_->require_known(name, "namespace");
  HistorySeries series;
  {
    std::shared_lock lock(e->mu);
    series.view = on_query([&] { return e->ns.view(view).spec(); });
    on_query([&] { e->ns.check_item(item); });
  }
  // Cluster mode: the item's partition keeps its history (checked here first).
  if (s_->options.cluster) return s_->options.cluster->history(name, item, view, from, to, max_points);
  if (!s_->history) throw invalid("history_unavailable", no_history(*s_));
  if (s_->pending_drop(name)) return series;  // an earlier namespace's history, still being removed
  series.points = s_->history->series(name, history_key(series.view), item, from, to, max_points + 1);
  if (series.points.size() > max_points) {
    series.points.resize(max_points);
    series.truncated = true;
  }
  return series;
}

}  // namespace ebb::service
