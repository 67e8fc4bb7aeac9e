#include "ebb/server/metrics.hpp"

#include "ebb/core/hash.hpp"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>


namespace ebb::server {
namespace {

// A label value as the exposition format quotes it: a namespace name may
// hold '"' and '\\' (names hold no line breaks).
std::string label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Shortest text that reads back as the same double ("0.00025", not "0.00025000000000000001").
std::string num(double v) {
  char buf[40];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

}  // namespace

void Metrics::observe_request(const std::string& route, int status, double seconds) {
  std::lock_guard lock(mu_);
  Histogram& h = requests_[{route, status}];
  ++h.count;
  h.sum += seconds;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      ++h.buckets[i];
      break;
    }
  }
}

void Metrics::count_error(const std::string& code) {
  std::lock_guard lock(mu_);
  ++errors_[code];
}

template <std::size_t N, std::size_t M>
void histogram(std::string& out, const char* name, const std::array<double, N>& bounds, const std::array<std::uint64_t, M>& counts,
               double sum) {
  std::uint64_t cumulative = 0, total = 0;
  for (auto c : counts) total += c;
  for (std::size_t i = 0; i < N; ++i) {
    cumulative += counts[i];
    out += std::string(name) + "_bucket{le=\"" + num(bounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += std::string(name) + "_bucket{le=\"+Inf\"} " + std::to_string(total) + "\n";
  out += std::string(name) + "_sum " + num(sum) + "\n";
  out += std::string(name) + "_count " + std::to_string(total) + "\n";
}

void single(std::string& out, const char* name, const char* type, const char* help, const std::string& value) {
  header(out, name, type, help);
  out += name;
  out += ' ';
  out += value;
  out += '\n';
}

namespace {

// A view as the query parameter that asks for it: "window=all",
// "window=1h", "half_life=5m" (a window and a half-life may share a name).
std::string view_label(const engine::ViewSpec& v) {
  return (v.kind == engine::ViewSpec::Kind::decayed ? "half_life=" : "window=") + v.name();
}

// The accuracy audit's figures (engine/accuracy_audit.hpp) per namespace
// and view: every comparison's relative error since start, and the last
// pass's worst figures.
void render_audit(std::string& out, const std::vector<service::NamespaceMetrics>& rows) {
  using engine::AuditHistogram;
  header(out, "ebb_audit_relative_error", "histogram",
         "Accuracy audit: each comparison's |estimate - exact count| / (epsilon x total), by namespace and view (the query parameter that asks for it).");
  for (const auto& r : rows) {
    if (!r.stats.audit.enabled) continue;
    for (const auto& v : r.stats.views) {
      if (!v.audit.passed()) continue;  // no pass yet (a cluster node's catalog: its partitions audit)
      const std::string labels = "namespace=\"" + label(r.name) + "\",view=\"" + label(view_label(v.view)) + "\"";
      const auto& h = v.audit.histogram;
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < AuditHistogram::kBounds.size(); ++i) {
        cumulative += h.counts[i];
        out += "ebb_audit_relative_error_bucket{" + labels + ",le=\"" + num(AuditHistogram::kBounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
      }
      out += "ebb_audit_relative_error_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
      out += "ebb_audit_relative_error_sum{" + labels + "} " + num(h.sum) + "\n";
      out += "ebb_audit_relative_error_count{" + labels + "} " + std::to_string(h.count) + "\n";
    }
  }
  struct Gauge {
    const char* name;
    const char* help;
    double (*value)(const engine::ViewAudit&);
  };
  static const Gauge gauges[] = {
      {"ebb_audit_max_relative_error", "Accuracy audit, last pass: the largest |error| / (epsilon x total) of a view (+Inf: an error where the bound is 0).",
       [](const engine::ViewAudit& a) { return a.max_relative_error; }},
      {"ebb_audit_outside_bound_ratio", "Accuracy audit, last pass: the share of a view's compared estimates off by more than epsilon x total.",
       [](const engine::ViewAudit& a) { return a.compared > 0 ? static_cast<double>(a.outside_bound) / static_cast<double>(a.compared) : 0.0; }},
      {"ebb_audit_top_max_error_share", "Accuracy audit, last pass: the largest error of a view's top item as a share of its count (what audit_sla bounds).",
       [](const engine::ViewAudit& a) { return a.top_max_error_share; }},
  };
  for (const auto& g : gauges) {
    header(out, g.name, "gauge", g.help);
    for (const auto& r : rows) {
      if (!r.stats.audit.enabled) continue;
      for (const auto& v : r.stats.views) {
        if (!v.audit.passed()) continue;
        const double x = g.value(v.audit);
        out += std::string(g.name) + "{namespace=\"" + label(r.name) + "\",view=\"" + label(view_label(v.view)) + "\"} " +
               (std::isinf(x) ? std::string("+Inf") : num(x)) + "\n";
      }
    }
  }
}

}  // namespace

std::string Metrics::render(const service::ServiceMetrics& sm) const {
  std::string out;
  {
    std::lock_guard lock(mu_);
    header(out, "ebb_http_requests_total", "counter", "HTTP requests by route and status.");
    for (const auto& [key, h] : requests_) {
      out += "ebb_http_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " + std::to_string(h.count) + "\n";
    }
    header(out, "ebb_http_request_duration_seconds", "histogram", "HTTP request latency by route and status, from request read to response queued.");
    for (const auto& [key, h] : requests_) {
      const std::string labels = "route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"";
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < kBuckets.size(); ++i) {
        cumulative += h.buckets[i];
        out += "ebb_http_request_duration_seconds_bucket{" + labels + ",le=\"" + num(kBuckets[i]) + "\"} " + std::to_string(cumulative) + "\n";
      }
      out += "ebb_http_request_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
      out += "ebb_http_request_duration_seconds_sum{" + labels + "} " + num(h.sum) + "\n";
      out += "ebb_http_request_duration_seconds_count{" + labels + "} " + std::to_string(h.count) + "\n";
    }
    header(out, "ebb_errors_total", "counter", "Error responses by error code.");
    for (const auto& [code, n] : errors_) out += "ebb_errors_total{code=\"" + code + "\"} " + std::to_string(n) + "\n";
  }
  header(out, "ebb_checkpoints_total", "counter", "Checkpoint passes by result.");
  out += "ebb_checkpoints_total{result=\"ok\"} " + std::to_string(sm.checkpoints_ok) + "\n";
  out += "ebb_checkpoints_total{result=\"error\"} " + std::to_string(sm.checkpoints_failed) + "\n";
  header(out, "ebb_accept_errors_total", "counter", "Failed accepts of new connections (e.g. out of file descriptors); the listener backs off meanwhile.");
  out += "ebb_accept_errors_total " + std::to_string(accept_errors_.load(std::memory_order_relaxed)) + "\n";
  single(out, "ebb_checkpoint_duration_seconds", "gauge", "Duration of the last successful checkpoint.", num(sm.last_checkpoint_seconds));
  single(out, "ebb_checkpoint_last_bytes", "gauge", "State bytes the last checkpoint wrote (unchanged namespaces write none).",
         std::to_string(sm.last_checkpoint_bytes));
  single(out, "ebb_checkpoint_bytes_total", "counter", "State bytes written by checkpoints.", std::to_string(sm.checkpoint_bytes_total));
  if (sm.history) {
    header(out, "ebb_history_passes_total", "counter",
           "History snapshot passes by result (low_disk: skipped while the data directory's filesystem has less free than --history-min-free).");
    out += "ebb_history_passes_total{result=\"ok\"} " + std::to_string(sm.history_passes_ok) + "\n";
    out += "ebb_history_passes_total{result=\"error\"} " + std::to_string(sm.history_passes_failed) + "\n";
    out += "ebb_history_passes_total{result=\"low_disk\"} " + std::to_string(sm.history_passes_low_disk) + "\n";
    single(out, "ebb_history_snapshots_total", "counter", "View snapshots (one view's top K at one time) written to history.",
           std::to_string(sm.history_snapshots));
    single(out, "ebb_history_bytes", "gauge", "Size of the history database (its pages).", std::to_string(sm.history_bytes));
  }
  const auto& log = sm.log;
  single(out, "ebb_wal_bytes", "gauge", "Bytes in the write-ahead log's live segments.", std::to_string(log.bytes));
  single(out, "ebb_wal_segments", "gauge", "Live write-ahead log segment files.", std::to_string(log.segments));
  single(out, "ebb_wal_records_total", "counter", "Records appended to the write-ahead log since start.", std::to_string(log.records));
  single(out, "ebb_wal_append_errors_total", "counter", "Appends the log could not write (disk full, read-only...).",
         std::to_string(log.append_errors));
  header(out, "ebb_wal_fsync_duration_seconds", "histogram", "Duration of each log fsync.");
  histogram(out, "ebb_wal_fsync_duration_seconds", storage::LogStats::kFsyncBuckets, log.fsync_buckets, log.fsync_seconds_sum);
  header(out, "ebb_wal_group_commit_records", "histogram", "Log records made durable by one fsync (group commit).");
  histogram(out, "ebb_wal_group_commit_records", storage::LogStats::kGroupBuckets, log.group_buckets,
            static_cast<double>(log.group_records_sum));
  single(out, "ebb_wal_truncated_tails_total", "counter", "Torn or corrupt log tails cut at recovery.", std::to_string(sm.truncated_tails));
  single(out, "ebb_recovery_duration_seconds", "gauge", "Time the last recovery took (checkpoint load and log replay).",
         num(sm.recovery_seconds));
  single(out, "ebb_recovery_records_replayed", "gauge", "Log records replayed by the last recovery.", std::to_string(sm.recovery_records));
  single(out, "ebb_recovery_records_skipped", "gauge",
         "Batches of the last recovery's replay that no longer applied to their namespace (each is logged as an error).",
         std::to_string(sm.recovery_records_skipped));
  single(out, "ebb_persist_failures_total", "counter", "Writes refused (503) because they could not be persisted.",
         std::to_string(sm.persist_failures));
  single(out, "ebb_overloaded_total", "counter", "Batches refused (429) because too many waited for the disk.", std::to_string(sm.overloaded));
  single(out, "ebb_answer_cache_hits_total", "counter", "Top-K answers served from the answer cache (nothing changed since they were computed).",
         std::to_string(sm.answer_cache_hits));
  single(out, "ebb_answer_cache_misses_total", "counter", "Top-K answers computed (the namespace changed, the cached one was older than --answer-cache-ttl or was dropped, the question is new, or the cache is off).",
         std::to_string(sm.answer_cache_misses));
  single(out, "ebb_idempotency_keys", "gauge", "Idempotency keys remembered.", std::to_string(sm.idempotency_keys));
  single(out, "ebb_idempotent_replays_total", "counter", "Retried batches answered without counting again.",
         std::to_string(sm.idempotent_replays));
  single(out, "ebb_memory_reserved_bytes", "gauge", "Memory the namespaces plan to hold (what --max-memory limits).",
         std::to_string(sm.memory_reserved));
  single(out, "ebb_memory_budget_bytes", "gauge", "The --max-memory budget (0: none).", std::to_string(sm.memory_budget));
  const auto& rows = sm.namespaces;
  header(out, "ebb_events_ingested_total", "counter", "Events accepted per namespace (including excluded ones).");
  for (const auto& r : rows) out += "ebb_events_ingested_total{namespace=\"" + label(r.name) + "\"} " + std::to_string(r.stats.events + r.stats.excluded) + "\n";
  header(out, "ebb_events_excluded_total", "counter", "Events dropped by a namespace's exclusion list.");
  for (const auto& r : rows) out += "ebb_events_excluded_total{namespace=\"" + label(r.name) + "\"} " + std::to_string(r.stats.excluded) + "\n";
  header(out, "ebb_ingest_bytes_total", "counter", "Request body bytes ingested per namespace.");
  for (const auto& r : rows) out += "ebb_ingest_bytes_total{namespace=\"" + label(r.name) + "\"} " + std::to_string(r.ingest_bytes) + "\n";
  header(out, "ebb_window_dropped_events_total", "counter", "Events older than a window when they arrived: counted in the other views, too late for that window's live answer.");
  for (const auto& r : rows) {
    for (const auto& v : r.stats.views) {
      if (v.view.kind != engine::ViewSpec::Kind::window) continue;
      out += "ebb_window_dropped_events_total{namespace=\"" + label(r.name) + "\",window=\"" + v.view.name() + "\"} " + std::to_string(v.dropped) + "\n";
    }
  }
  render_audit(out, rows);
  header(out, "ebb_namespace_memory_bytes", "gauge", "Memory held by a namespace's sketches and summaries.");
  for (const auto& r : rows) out += "ebb_namespace_memory_bytes{namespace=\"" + label(r.name) + "\"} " + std::to_string(r.stats.memory_bytes) + "\n";
  single(out, "ebb_hot_key_streams", "gauge", "Open GET /hot-keys/stream subscriptions, hot-key and anomaly (--max-hot-key-streams limits them).",
         std::to_string(sm.hot_key_streams));
  header(out, "ebb_hot_keys", "gauge", "Keys at or above their namespace's hot_key_threshold (namespaces with detection on).");
  for (const auto& r : rows) {
    if (r.hot_key_detection) out += "ebb_hot_keys{namespace=\"" + label(r.name) + "\"} " + std::to_string(r.hot_keys.size()) + "\n";
  }
  header(out, "ebb_hot_key_rate", "gauge",
         "Rate (events/s, an upper bound) of each hot key, labelled by key_hash: the key's 64-bit hash in hex; the log names the key.");
  for (const auto& r : rows) {
    for (const auto& k : r.hot_keys) {
      out += "ebb_hot_key_rate{namespace=\"" + label(r.name) + "\",key_hash=\"" + key_hash_hex(k.key) + "\"} " + num(k.rate) + "\n";
    }
  }
  header(out, "ebb_hot_key_transitions_total", "counter", "Keys that turned hot (event=\"hot\") or cooled (event=\"cool\").");
  for (const auto& r : rows) {
    out += "ebb_hot_key_transitions_total{namespace=\"" + label(r.name) + "\",event=\"hot\"} " + std::to_string(r.turned_hot) + "\n";
    out += "ebb_hot_key_transitions_total{namespace=\"" + label(r.name) + "\",event=\"cool\"} " + std::to_string(r.cooled) + "\n";
  }
  single(out, "ebb_distributions", "gauge", "Distributions held (an idle one until the expiry step drops it).", std::to_string(sm.distributions));
  single(out, "ebb_distribution_bins", "gauge", "Bins of all distributions (--max-distribution-bins limits them).", std::to_string(sm.distribution_bins));
  single(out, "ebb_distribution_increments_total", "counter", "GET /incr requests counted.", std::to_string(sm.distribution_increments));
  single(out, "ebb_distributions_expired_total", "counter", "Idle distributions dropped (every bin decayed under the minimum count).",
         std::to_string(sm.distributions_expired));
  header(out, "ebb_namespaces", "gauge", "Namespaces on the server.");
  out += "ebb_namespaces " + std::to_string(rows.size()) + "\n";
  header(out, "ebb_process_resident_memory_bytes", "gauge", "Resident set size of the server process.");
  out += "ebb_process_resident_memory_bytes " + std::to_string(resident_bytes()) + "\n";
  header(out, "ebb_up", "gauge", "1 while the server runs.");
  out += "ebb_up 1\n";
  return out;
}

}  // namespace ebb::server
