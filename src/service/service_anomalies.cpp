// Rank-jump anomalies (Service::anomalies) and the watches behind the
// hot-key stream's `anomaly` events: the checks, the reads of the window
// and its baseline (under one lock on a single node; from the partitions
// in a cluster), then engine/anomalies.hpp's arithmetic.
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <variant>

#include "ebb/core/duration.hpp"
#include "service_cluster.hpp"
#include "service_state.hpp"

namespace ebb::service {

// One stream's watch: its question, its listener and the items it was
// told of at the last evaluation.
struct AnomalyWatch {
  EntryPtr entry;  // the namespace watched (deleted: the stream ends)
  std::string name;
  AnomalyRequest request;
  Service::AnomalyListener listener;
  // Under the evaluation's lock: the items told and still passing, and
  // whether the last question failed (logged once until it answers).
  std::set<std::string> told;
  bool failing = false;
  std::atomic<bool> cancelled{false};
};

namespace {

// Two watches asking this are asking the same question (every number to
// the bit).
std::string question_key(const std::string& name, const AnomalyRequest& r) {
  const auto& t = r.thresholds;
  std::string key = name;
  for (double d : {r.window, r.baseline.value_or(-1), r.baseline_offset.value_or(-1), static_cast<double>(r.k.value_or(0)), t.min_jump,
                   static_cast<double>(t.min_rank_jump), t.min_score, t.min_count}) {
    char bits[sizeof d];
    std::memcpy(bits, &d, sizeof d);
    key += '\0';
    key.append(bits, sizeof bits);
  }
  return key;
}

std::string kept_windows(const engine::Namespace& ns) {
  std::string out;
  for (const auto& v : ns.views()) {
    if (v->spec().kind != engine::ViewSpec::Kind::window) continue;
    out += (out.empty() ? "" : ", ") + v->spec().name();
  }
  return out.empty() ? "it keeps none" : "it keeps " + out;
}

void require_window(const engine::Namespace& ns, double seconds, const std::string& field) {
  for (const auto& v : ns.views()) {
    if (v->spec() == engine::ViewSpec::sliding(seconds)) return;
  }
  throw invalid("bad_parameter", field + ": the namespace keeps no " + format_duration(seconds) + " window (" + kept_windows(ns) + ")");
}

// Every parameter, against the namespace's configuration; returns k.
std::size_t check_request(const engine::Namespace& ns, const AnomalyRequest& r) {
  require_window(ns, r.window, "window");
  if (r.baseline && r.baseline_offset) throw invalid("bad_parameter", "baseline: give baseline or baseline_offset, not both");
  if (!r.baseline && !r.baseline_offset) {
    throw invalid("bad_parameter", "baseline: required: a longer window the namespace keeps (baseline=1h), or baseline_offset=DUR (the same window that long ago)");
  }
  if (r.baseline) {
    require_window(ns, *r.baseline, "baseline");
    if (!(*r.baseline > r.window)) throw invalid("bad_parameter", "baseline: must be longer than window (" + format_duration(r.window) + ")");
  }
  // A shorter offset would overlap the window it is compared with.
  if (r.baseline_offset && !(std::isfinite(*r.baseline_offset) && *r.baseline_offset >= r.window)) {
    throw invalid("bad_parameter", "baseline_offset: must be at least the window (" + format_duration(r.window) + ")");
  }
  const auto& t = r.thresholds;
  for (const auto& [field, value] : {std::pair{"min_jump", t.min_jump}, std::pair{"min_score", t.min_score}, std::pair{"min_count", t.min_count}}) {
    if (!(std::isfinite(value) && value >= 0)) throw invalid("bad_parameter", std::string(field) + ": must be a number >= 0");
  }
  if (t.min_rank_jump > engine::NamespaceConfig::kMaxK) {
    throw invalid("bad_parameter", "min_rank_jump: must be in [0, " + std::to_string(engine::NamespaceConfig::kMaxK) + "]");
  }
  return on_query([&] { return ns.checked_k(r.k); });
}

struct Reads {
  engine::TopKAnswer current, baseline;
  std::vector<engine::PointAnswer> points;
};

std::vector<std::string> keys_of(const engine::TopKAnswer& a) {
  std::vector<std::string> keys;
  keys.reserve(a.items.size());
  for (const auto& item : a.items) keys.push_back(item.key);
  return keys;
}

// A read of the shifted baseline: its time problems are baseline_offset's.
template <typename F>
auto shifted(bool offset, F&& read) {
  try {
    return read();
  } catch (const ServiceError& e) {
    const std::string what = e.what();
    if (!offset || !what.starts_with("timestamp:")) throw;
    throw ServiceError(e.kind(), e.code(), "baseline_offset:" + what.substr(10));
  }
}

// A single node. Live against a longer window: one lock, one state for the
// three reads. Otherwise the as-of helpers, which read history (outside
// the lock) when memory does not reach.
Reads read_local(const Service::State& s, const NamespaceEntry& e, const AnomalyRequest& r, std::size_t k) {
  const auto window = engine::ViewSpec::sliding(r.window);
  const auto view = r.baseline ? engine::ViewSpec::sliding(*r.baseline) : window;
  const std::size_t current_depth = engine::anomaly_current_depth(k), baseline_depth = engine::anomaly_baseline_depth(k, r.thresholds);
  Reads out;
  if (!r.as_of) {
    std::shared_lock lock(e.mu);
    if (e.deleted) throw deleted_namespace(e.name);
    out.current = on_query([&] { return e.ns.top(window, current_depth); });
    if (r.baseline) {
      out.baseline = on_query([&] { return e.ns.top(view, baseline_depth); });
      const auto keys = keys_of(out.current);
      if (!keys.empty()) out.points = on_query([&] { return e.ns.counts(keys, view); });
      return out;
    }
  } else {
    out.current = on_query([&] { return top_as_of(s, e, window, current_depth, *r.as_of); });
  }
  const double then = r.baseline ? out.current.as_of : out.current.as_of - *r.baseline_offset;
  const bool offset = !r.baseline;
  out.baseline = shifted(offset, [&] { return on_query([&] { return top_as_of(s, e, view, baseline_depth, then); }); });
  const auto keys = keys_of(out.current);
  if (!keys.empty()) out.points = shifted(offset, [&] { return on_query([&] { return points_as_of(s, e, keys, view, then); }); });
  return out;
}

// A cluster: the partitions' lists, merged, then the baseline's list and
// the current items' baseline counts asked at once. A partition that does
// not answer is missing from the answer (partial), never silently zero.
Reads read_cluster(const Service::State& s, const std::string& name, const AnomalyRequest& r, std::size_t k) {
  const auto window = engine::ViewSpec::sliding(r.window);
  const auto view = r.baseline ? engine::ViewSpec::sliding(*r.baseline) : window;
  Reads out;
  out.current = cluster_mode::top(s, name, window, engine::anomaly_current_depth(k), r.as_of);
  // Live against a longer window: the baseline live too (the merged as_of
  // is the latest partition's, which another node's clock may not have
  // reached yet).
  const std::optional<double> then =
      r.baseline ? r.as_of : std::optional<double>(out.current.as_of - *r.baseline_offset);
  const bool offset = !r.baseline;
  const auto keys = keys_of(out.current);
  engine::Coverage point_coverage;
  out.points = shifted(offset, [&] {
    return cluster_mode::top_and_counts(s, name, view, engine::anomaly_baseline_depth(k, r.thresholds), keys, then, out.baseline, point_coverage);
  });
  // The traffic's share compares totals over the partitions each list
  // spans: when a partition answered one read and not the other, they do
  // not compare, and nothing is listed (the answer says it is partial).
  const bool comparable = out.current.coverage.missing == out.baseline.coverage.missing;
  cluster_mode::add_missing(out.current.coverage, point_coverage);
  cluster_mode::add_missing(out.current.coverage, out.baseline.coverage);
  if (!comparable) {
    out.current.items.clear();
    out.points.clear();
  }
  return out;
}

}  // namespace

engine::AnomalyAnswer Service::anomalies(const std::string& name, const AnomalyRequest& request) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto e = s_->require_known(name, "namespace");
  std::size_t k = 0;
  {
    std::shared_lock lock(e->mu);
    k = check_request(e->ns, request);  // (the reads check timestamp)
  }
  Reads reads = s_->options.cluster ? read_cluster(*s_, name, request, k) : read_local(*s_, *e, request, k);
  // As of a past time, both windows must end then: one list from memory
  // and the other from an earlier history snapshot would not compare.
  if (request.as_of && request.baseline && reads.baseline.as_of != reads.current.as_of) {
    throw invalid("history_unavailable", "timestamp: the " + format_duration(*request.baseline) + " baseline is kept that far back only as of " +
                                             std::to_string(reads.baseline.as_of) + " (" + reads.baseline.source + "), the " +
                                             format_duration(request.window) + " window as of " + std::to_string(reads.current.as_of) +
                                             " (" + reads.current.source + "): they would not end at the same time");
  }
  // A partition missing from the current list is missing from the answer;
  // one missing from the baseline only (its items' counts then) too.
  return engine::find_anomalies(std::move(reads.current), std::move(reads.baseline), reads.points, request.thresholds, k);
}

std::shared_ptr<void> Service::subscribe_anomalies(const std::string& name, const AnomalyRequest& request, AnomalyListener listener) {
  State& s = *s_;
  if (request.as_of) throw invalid("bad_parameter", "timestamp: a stream follows now; ask GET /anomalies for a past time");
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto watch = std::make_shared<AnomalyWatch>();
  watch->entry = s.require_known(name, "namespace");
  {
    // A bad question is a 400 whatever the count.
    std::shared_lock lock(watch->entry->mu);
    check_request(watch->entry->ns, request);
  }
  if (s.hot_key_streams.fetch_add(1) >= s.options.limits.max_hot_key_streams) {
    --s.hot_key_streams;
    throw ServiceError(ErrorKind::overloaded, "too_many_streams",
                       "the server holds its limit of " + std::to_string(s.options.limits.max_hot_key_streams) +
                           " hot-key and anomaly subscriptions (--max-hot-key-streams); retry later");
  }
  // The handle: dropping it (or failing below, which drops it) cancels the
  // watch and gives its place back, once. (Were its making to throw, the
  // deleter would run then.)
  std::atomic<std::size_t>* streams = &s.hot_key_streams;
  std::shared_ptr<void> handle(nullptr, [watch, streams](void*) {
    watch->cancelled = true;
    --*streams;
  });
  const auto first = anomalies(name, request);  // its errors are the subscriber's (history, a cluster's partitions)
  watch->name = name;
  watch->request = request;
  watch->listener = std::move(listener);
  std::lock_guard lock(s.anomaly_watches_mu);
  for (const auto& item : first.items) {
    watch->told.insert(item.key);
    watch->listener({AnomalyNotice::Kind::anomaly, first.current.as_of, item, {}});
  }
  s.anomaly_watches.push_back(watch);
  return handle;
}

std::size_t Service::evaluate_anomaly_watches() {
  State& s = *s_;
  if (!s.recovered) return 0;
  // One evaluation at a time (the hot-key thread's; a test's call): each
  // watch hears every change once and in order.
  std::lock_guard evaluating(s.anomaly_evaluation_mu);
  const double now = steady_seconds();
  std::vector<std::shared_ptr<AnomalyWatch>> watches;
  {
    std::lock_guard lock(s.anomaly_watches_mu);
    std::erase_if(s.anomaly_watches, [](const auto& w) { return w->cancelled.load(); });
    watches = s.anomaly_watches;
  }
  const bool heartbeat = now - s.last_anomaly_heartbeat >= kStreamHeartbeatSeconds;
  if (heartbeat) s.last_anomaly_heartbeat = now;
  // Watches asking the same question share one answer (or error) a pass.
  std::map<std::string, std::variant<engine::AnomalyAnswer, std::exception_ptr>> answers;
  for (const auto& w : watches) {
    {
      std::lock_guard lock(s.thread_mu);
      if (s.stop) break;  // shutting down: the streams close with the server
    }
    if (w->cancelled) continue;
    auto end = [&](const std::string& reason) {
      AnomalyNotice notice;
      notice.kind = AnomalyNotice::Kind::closed;
      notice.reason = reason;
      w->listener(notice);
      w->cancelled = true;
    };
    bool deleted = false;
    {
      std::shared_lock lock(w->entry->mu);
      deleted = w->entry->deleted;
    }
    if (deleted) {
      end("namespace deleted");  // (one made again under its name is another)
      continue;
    }
    auto [it, fresh] = answers.try_emplace(question_key(w->name, w->request));
    if (fresh) {
      try {
        it->second = anomalies(w->name, w->request);
      } catch (...) {
        it->second = std::current_exception();
      }
    }
    try {
      if (auto* failed = std::get_if<std::exception_ptr>(&it->second)) std::rethrow_exception(*failed);
      const auto& answer = std::get<engine::AnomalyAnswer>(it->second);
      // Told once while it keeps passing (wherever it ranks); again after
      // it stopped passing and came back. A partial answer (a cluster
      // partition that did not answer) forgets nobody: its items' absence
      // says nothing.
      std::set<std::string> told;
      if (answer.current.coverage.partial()) told = w->told;
      for (const auto& key : answer.passing) {
        if (w->told.contains(key)) told.insert(key);
      }
      for (const auto& item : answer.items) {
        if (told.insert(item.key).second) w->listener({AnomalyNotice::Kind::anomaly, answer.current.as_of, item, {}});
      }
      w->told = std::move(told);
      w->failing = false;
    } catch (const ServiceError& e) {
      if (e.kind() == ErrorKind::not_found) {
        end("namespace deleted");
        continue;
      }
      if (e.kind() == ErrorKind::invalid) {
        // The question no longer holds (a window patched away, history
        // thinned past the offset): the stream ends, saying why.
        end(e.what());
        continue;
      }
      if (!w->failing) s.log->warn("anomaly stream of namespace '{}': {} ({}); until it answers again", w->name, e.what(), e.code());
      w->failing = true;
    } catch (const std::exception& e) {
      if (!w->failing) s.log->warn("anomaly stream of namespace '{}': {}; until it answers again", w->name, e.what());
      w->failing = true;
    }
    if (heartbeat && !w->cancelled) {
      AnomalyNotice notice;
      notice.kind = AnomalyNotice::Kind::heartbeat;
      w->listener(notice);
    }
  }
  return watches.size();
}

}  // namespace ebb::service
