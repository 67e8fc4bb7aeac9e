#pragma once
// Prometheus metrics of the server (text exposition format 0.0.4). Request
// metrics are recorded here; namespace metrics are read from the registry at
// scrape time, so ingest pays nothing for them. Every metric is listed,
// with its type and help, in docs/api.md; a test checks the two agree.
//
//   ebb_http_requests_total{route,status}                counter
//   ebb_http_request_duration_seconds{route,status}      histogram
//   ebb_errors_total{code}                               counter (error responses by code)
//   ebb_events_ingested_total{namespace}                 counter (accepted, incl. excluded)
//   ebb_events_excluded_total{namespace}                 counter
//   ebb_ingest_bytes_total{namespace}                    counter (request body bytes)
//   ebb_namespace_memory_bytes{namespace}                gauge
//   ebb_namespaces                                       gauge
//   ebb_checkpoints_total{result}                        counter (ok, error)
//   ebb_checkpoint_*, ebb_wal_*, ebb_recovery_*, ...     the service's (service_metrics.hpp)
//   ebb_accept_errors_total                              counter (failed accepts on the listener)
//   ebb_process_resident_memory_bytes                    gauge
//   ebb_up                                               gauge (1)
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "ebb/service/service_metrics.hpp"

namespace ebb::server {

class Metrics {
 public:
  static constexpr std::array<double, 14> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                      0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   2.5};

  void observe_request(const std::string& route, int status, double seconds);
  void count_error(const std::string& code);
  void count_accept_error() { accept_errors_.fetch_add(1, std::memory_order_relaxed); }
  std::string render(const service::ServiceMetrics& service) const;

 private:
  struct Histogram {
    std::uint64_t count = 0;
    double sum = 0;
    std::array<std::uint64_t, kBuckets.size()> buckets{};  // cumulative at render
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, Histogram> requests_;
  std::map<std::string, std::uint64_t> errors_;
  std::atomic<std::uint64_t> accept_errors_{0};
};

}  // namespace ebb::server
