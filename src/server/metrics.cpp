#include "ebb/server/metrics.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <fstream>

#include "ebb/server/registry.hpp"

namespace ebb::server {
namespace {

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

void Metrics::count_checkpoint(bool ok) {
  std::lock_guard lock(mu_);
  ++(ok ? checkpoints_ok_ : checkpoints_failed_);
}

std::string Metrics::render(const Registry& registry) const {
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
    header(out, "ebb_checkpoints_total", "counter", "Checkpoint passes by result.");
    out += "ebb_checkpoints_total{result=\"ok\"} " + std::to_string(checkpoints_ok_) + "\n";
    out += "ebb_checkpoints_total{result=\"error\"} " + std::to_string(checkpoints_failed_) + "\n";
  }
  header(out, "ebb_accept_errors_total", "counter", "Failed accepts of new connections (e.g. out of file descriptors); the listener backs off meanwhile.");
  out += "ebb_accept_errors_total " + std::to_string(accept_errors_.load(std::memory_order_relaxed)) + "\n";
  const auto entries = registry.list();
  struct Row {
    std::string name;
    engine::NamespaceStats stats;
    std::uint64_t bytes;
  };
  std::vector<Row> rows;
  for (const auto& e : entries) {
    std::shared_lock lock(e->mu);
    rows.push_back({e->name, e->ns.stats(), e->ingest_bytes.load()});
  }
  header(out, "ebb_events_ingested_total", "counter", "Events accepted per namespace (including excluded ones).");
  for (const auto& r : rows) out += "ebb_events_ingested_total{namespace=\"" + r.name + "\"} " + std::to_string(r.stats.events + r.stats.excluded) + "\n";
  header(out, "ebb_events_excluded_total", "counter", "Events dropped by a namespace's exclusion list.");
  for (const auto& r : rows) out += "ebb_events_excluded_total{namespace=\"" + r.name + "\"} " + std::to_string(r.stats.excluded) + "\n";
  header(out, "ebb_ingest_bytes_total", "counter", "Request body bytes ingested per namespace.");
  for (const auto& r : rows) out += "ebb_ingest_bytes_total{namespace=\"" + r.name + "\"} " + std::to_string(r.bytes) + "\n";
  header(out, "ebb_namespace_memory_bytes", "gauge", "Memory held by a namespace's sketches and summaries.");
  for (const auto& r : rows) out += "ebb_namespace_memory_bytes{namespace=\"" + r.name + "\"} " + std::to_string(r.stats.memory_bytes) + "\n";
  header(out, "ebb_namespaces", "gauge", "Namespaces on the server.");
  out += "ebb_namespaces " + std::to_string(rows.size()) + "\n";
  header(out, "ebb_process_resident_memory_bytes", "gauge", "Resident set size of the server process.");
  out += "ebb_process_resident_memory_bytes " + std::to_string(resident_bytes()) + "\n";
  header(out, "ebb_up", "gauge", "1 while the server runs.");
  out += "ebb_up 1\n";
  return out;
}

}  // namespace ebb::server
