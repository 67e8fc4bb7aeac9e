#pragma once
// `ebb serve`: the HTTP service.
#include <string>

#include "ebb/resp/resp_server.hpp"
#include "ebb/server/http_server.hpp"
#include "ebb/service/limits.hpp"

namespace CLI {
class App;
}

namespace ebb::cli {

struct ServeOptions {
  server::HttpServerOptions http;
  service::ServiceLimits limits;
  std::string data_dir = "./ebb-data";
  std::string checkpoint_interval = "10s";
  std::string history_interval = "10s";
  std::string history_retention = "90d";
  std::string history_min_free = "512MiB";
  std::string answer_cache_ttl = "100ms";
  std::string hot_key_interval = "100ms";
  std::string audit_interval = "10s";
  double distribution_rate = 1.0 / 3600;  // lambda of new distributions, 1/s
  std::string distribution_decay = "exact";  // or "poisson" (bitly's)
  double distribution_min_count = 1e-3;
  std::size_t distribution_max_bins = 10000;
  std::string log_level = "info";
  std::string max_future_skew = "60s";
  std::string max_event_age = "7d";
  std::string max_time_jump = "1d";
  std::string idle_timeout = "60s";
  std::string header_timeout = "10s";
  std::string request_timeout = "30s";
  std::string shutdown_timeout = "30s";
  std::string fsync = "batch";
  std::string fsync_interval = "1s";
  std::string max_memory;  // default: half the machine's memory
  std::string idempotency_window = "1h";
  std::uint64_t segment_bytes = 64u << 20;
  std::string auth_token_file;  // empty: no tokens, everything open
  bool auth_reads = false;
  bool repair_log = false;
  // The RESP front end (docs/resp.md): off unless --resp-port is given.
  int resp_port = -1;
  std::string resp_bind;  // default: --bind
  resp::RespServerOptions resp;
  // Cluster mode (docs/cluster.md): off unless --nats is given.
  std::string nats;      // nats://host:port[,nats://host:port...]
  std::string node_id;   // default: <hostname>-<HTTP port>
  std::uint32_t nats_partitions = 16;
  int nats_replicas = 1;
  std::string nats_stream = "EBB";
  std::string nats_query_timeout = "2s";
  std::string nats_consumer_idle = "60s";
  std::string nats_checkpoint_interval = "1m";
  std::string nats_retention = "1h";
};

CLI::App* add_serve_command(CLI::App& app, ServeOptions& opts);
int run_serve(ServeOptions opts);

}  // namespace ebb::cli
