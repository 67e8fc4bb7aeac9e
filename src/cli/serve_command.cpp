// `ebb serve`: wires the registry, the storage, the API and the HTTP server.
#include "serve_command.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"
#include "ebb/server/api.hpp"
#include "ebb/server/http_server.hpp"
#include "ebb/server/metrics.hpp"
#include "ebb/server/registry.hpp"
#include "ebb/server/router.hpp"
#include "ebb/storage/checkpoint_store.hpp"
#include "duration_validator.hpp"

namespace ebb::cli {
namespace {


// Checkpoints dirty namespaces every interval until stopped.
class Checkpointer {
 public:
  Checkpointer(server::Registry& registry, server::Metrics& metrics, std::shared_ptr<spdlog::logger> log, double interval)
      : registry_(registry), metrics_(metrics), log_(std::move(log)) {
    thread_ = std::thread([this, interval] {
      std::unique_lock lock(mu_);
      while (!stop_) {
        cv_.wait_for(lock, std::chrono::duration<double>(interval), [this] { return stop_; });
        if (stop_) break;
        lock.unlock();
        run_once();
        lock.lock();
      }
    });
  }
  ~Checkpointer() { stop(); }
  void stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  bool run_once() {
    try {
      const auto n = registry_.checkpoint();
      metrics_.count_checkpoint(true);
      if (n > 0) log_->debug("checkpoint wrote={}", n);
      return true;
    } catch (const std::exception& e) {
      metrics_.count_checkpoint(false);
      log_->error("checkpoint failed: {}", e.what());
      return false;
    }
  }

 private:
  server::Registry& registry_;
  server::Metrics& metrics_;
  std::shared_ptr<spdlog::logger> log_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  auto* cmd = app.add_subcommand("serve", "The HTTP JSON API: namespaces, ingest, top-K and point queries, metrics");
  cmd->footer("Options can also come from a file: ebb serve --config FILE (TOML/INI, a [serve] section of these long names, e.g.\n"
              "  [serve]\n  port = 9090\n  checkpoint-interval = \"5s\"\n); command-line flags win. The API: docs/api.md and docs/openapi.yaml.");
  cmd->add_option("--bind", o.http.bind, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o.http.port, "Port to listen on (0: any free port, printed at start)")->capture_default_str();
  cmd->add_option("--data-dir", o.data_dir, "Directory for namespace configurations and checkpoints")->capture_default_str();
  o.http.threads = std::max(1u, std::thread::hardware_concurrency());
  cmd->add_option("--threads", o.http.threads, "Event-loop threads")->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--checkpoint-interval", o.checkpoint_interval,
                  "How often namespaces counted since their last checkpoint are written to the data directory")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn, error or off (debug logs every request)")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  cmd->add_option("--max-body-bytes", o.limits.max_body_bytes, "Largest request body (413 beyond)")->capture_default_str()->check(CLI::Range(1024ul, 1ul << 32));
  cmd->add_option("--max-batch-events", o.limits.max_batch_events, "Most events in one POST /events, ids in one POST /counts (413 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(1ul, 100'000'000ul));
  cmd->add_option("--max-item-bytes", o.limits.max_item_bytes, "Longest item_id (400 beyond)")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-namespaces", o.limits.max_namespaces, "Most namespaces on the server")->capture_default_str()->check(CLI::Range(1ul, 1'000'000ul));
  cmd->add_option("--max-namespace-bytes", o.limits.max_namespace_bytes, "Most sketch memory one namespace may ask for (all views)")
      ->capture_default_str()
      ->check(CLI::Range(1ul << 10, 1ul << 40));
  cmd->add_option("--max-future-skew", o.max_future_skew, "Default for wall-clock namespaces: how far ahead of the clock an event may be")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--idle-timeout", o.idle_timeout, "Close keep-alive connections idle this long")->capture_default_str()->check(duration_validator());
  cmd->add_option("--header-timeout", o.header_timeout, "From the first byte of a request, time allowed for its whole header (408 beyond)")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--request-timeout", o.request_timeout, "Once the header is in, time allowed for the body (408 beyond); also to send an answer")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--shutdown-timeout", o.shutdown_timeout, "On SIGTERM/SIGINT, how long in-flight requests may take")
      ->capture_default_str()
      ->check(duration_validator());
  return cmd;
}

int run_serve(ServeOptions o) {
  auto log = spdlog::stderr_logger_mt("ebb");
  log->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  log->set_level(spdlog::level::from_str(o.log_level));
  log->flush_on(spdlog::level::info);

  o.limits.default_max_future_skew = parse_duration(o.max_future_skew);
  o.http.idle_timeout = parse_duration(o.idle_timeout);
  o.http.header_timeout = parse_duration(o.header_timeout);
  o.http.request_timeout = parse_duration(o.request_timeout);
  o.http.shutdown_timeout = parse_duration(o.shutdown_timeout);
  o.http.max_body_bytes = o.limits.max_body_bytes;
  const double checkpoint_every = parse_duration(o.checkpoint_interval);

  std::unique_ptr<storage::CheckpointStore> store;
  try {
    store = std::make_unique<storage::CheckpointStore>(o.data_dir);
  } catch (const std::exception& e) {
    log->error("{}", e.what());
    return 1;
  }
  server::Registry registry(o.limits, store.get());
  server::Metrics metrics;
  std::atomic<bool> ready{false};
  server::Router router;
  server::ApiContext ctx{registry, metrics, o.limits, ready};
  server::add_api_routes(router, ctx);

  server::HttpServer http(o.http, router, metrics, log);
  try {
    http.listen();
  } catch (const std::exception& e) {
    log->error("{}", e.what());
    return 1;
  }
  // Machine-readable for scripts and tests that ask for --port 0.
  std::printf("ebb serve: listening on http://%s:%u\n", o.http.bind.c_str(), static_cast<unsigned>(http.port()));
  std::fflush(stdout);
  log->info("listening address={} port={} threads={} data_dir={}", o.http.bind, http.port(), o.http.threads, o.data_dir);

  // Recover before serving anything but /healthz, /readyz and /metrics (503 until then).
  std::atomic<bool> recovery_failed{false};
  std::thread recovery([&] {
    try {
      const auto n = registry.load();
      log->info("recovered namespaces={} from {}", n, o.data_dir);
      ready = true;
    } catch (const std::exception& e) {
      log->critical("recovery failed: {}; refusing to serve with missing data", e.what());
      recovery_failed = true;
      http.shutdown();
    }
  });
  http.on_shutdown([&] { ready = false; });
  Checkpointer checkpointer(registry, metrics, log, checkpoint_every);
  http.run();  // until SIGTERM/SIGINT
  recovery.join();
  checkpointer.stop();
  if (recovery_failed) return 1;
  // Final checkpoint: everything acknowledged is on disk before exit.
  const bool ok = checkpointer.run_once();
  log->info("stopped{}", ok ? "" : " (the final checkpoint failed: see above)");
  return ok ? 0 : 1;
}

}  // namespace ebb::cli
