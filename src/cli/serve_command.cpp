// `ebb serve`: wires the registry, the storage, the API and the HTTP server.
#include "serve_command.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

#include <unistd.h>

#include <sstream>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "ebb/cluster/cluster_node.hpp"
#include "ebb/cluster/nats_library.hpp"
#include "ebb/core/byte_size.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"
#include "ebb/resp/commands.hpp"
#include "ebb/resp/resp_server.hpp"
#include "ebb/server/api.hpp"
#include "ebb/server/http_server.hpp"
#include "ebb/server/metrics.hpp"
#include "ebb/server/router.hpp"
#include "ebb/service/service.hpp"
#include "byte_size_transform.hpp"
#include "duration_validator.hpp"
#include "version.hpp"

namespace ebb::cli {
namespace {

std::uint64_t default_max_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2 : 0;
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  auto* cmd = app.add_subcommand("serve", "The HTTP JSON API: namespaces, ingest, top-K and point queries, metrics");
  cmd->footer("Options can also come from a file: ebb serve --config FILE (TOML/INI, a [serve] section of these long names, e.g.\n"
              "  [serve]\n  port = 9090\n  checkpoint-interval = \"5s\"\n); command-line flags win. The API: docs/api.md and docs/openapi.yaml.");
  cmd->add_option("--bind", o.http.bind, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o.http.port, "Port to listen on (0: any free port, printed at start)")->capture_default_str();
  cmd->add_option("--resp-port", o.resp_port,
                  "Also serve the Redis protocol (RedisBloom's TOPK.* and CMS.* on the same namespaces) on this port (0: any free port); off unless given")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--resp-bind", o.resp_bind, "Address the Redis protocol listens on (default: --bind)");
  cmd->add_option("--resp-threads", o.resp.threads, "Event-loop threads of the Redis protocol")->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--resp-max-arguments", o.resp.limits.max_arguments, "Most arguments one RESP command may have")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{2}, std::size_t{1} << 24));
  cmd->add_option("--resp-max-bulk-bytes", o.resp.limits.max_bulk_bytes, "Longest argument of a RESP command, bytes")
      ->capture_default_str()
      ->transform(byte_size_transform())->check(CLI::Range(std::size_t{16}, std::size_t{512} << 20));
  cmd->add_option("--data-dir", o.data_dir, "Directory for the write-ahead log and checkpoints")->capture_default_str();
  cmd->add_flag("--repair-log", o.repair_log,
                "Start even when a log segment before the last is damaged, dropping the records from the damage on (set aside as .corrupt files)");
  cmd->add_option("--auth-token-file", o.auth_token_file,
                  "Bearer tokens (one per line) that writes and admin routes require: 'Authorization: Bearer TOKEN' or ?access_token=");
  cmd->add_flag("--auth-reads", o.auth_reads, "With --auth-token-file, require a token for queries, listings and /metrics too (not /healthz, /readyz)");
  cmd->add_option("--fsync", o.fsync,
                  "When a write counts as durable: batch (204 only once it is on disk; concurrent batches share an fsync), "
                  "interval (204 at once, fsync every --fsync-interval: a crash loses at most that), off (the OS decides)")
      ->capture_default_str()
      ->check(CLI::IsMember({"batch", "interval", "off"}));
  cmd->add_option("--fsync-interval", o.fsync_interval, "With --fsync interval: how often the log is synced")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--log-segment-bytes", o.segment_bytes, "Write-ahead log segment size (a new file past it)")
      ->capture_default_str()
      ->transform(byte_size_transform())->check(CLI::Range(1ul << 16, 1ul << 34));
  cmd->add_option("--max-memory", o.max_memory, "Budget for all namespaces' memory, e.g. 8GiB (507 on a create past it; default: half the machine's memory)");
  cmd->add_option("--max-inflight-batches", o.limits.max_inflight_batches, "Batches waiting for their fsync at most (429 with Retry-After beyond)")
      ->capture_default_str()
      ->check(CLI::Range(1ul, 1'000'000ul));
  cmd->add_option("--idempotency-window", o.idempotency_window, "How long an Idempotency-Key is remembered")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--max-idempotency-keys", o.limits.max_idempotency_keys, "Idempotency keys remembered at most (oldest forgotten first)")
      ->capture_default_str()
      ->check(CLI::Range(1ul, 100'000'000ul));
  o.http.threads = std::max(1u, std::thread::hardware_concurrency());
  cmd->add_option("--threads", o.http.threads, "Event-loop threads")->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--answer-cache-ttl", o.answer_cache_ttl,
                  "How long a rendered top-K answer may be reused while its namespace is unchanged (answers state their as_of); 0 turns the cache off")
      ->capture_default_str()
      ->check(duration_or_zero_validator());
  cmd->add_option("--checkpoint-interval", o.checkpoint_interval,
                  "How often namespaces changed since the last checkpoint are written to the data directory (the log is replayed from there)")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--history-interval", o.history_interval,
                  "How often every view's top K is snapshotted into <data dir>/history.sqlite3 (answers as of a past time, GET /history); 0: no history")
      ->capture_default_str()
      ->check(duration_or_zero_validator());
  cmd->add_option("--hot-key-interval", o.hot_key_interval,
                  "How often the hot-key detectors are evaluated, at most 10s (a key is reported hot at most this late; streams' heartbeats ride on it)")
      ->capture_default_str()
      ->check(duration_validator())
      ->check(CLI::Validator(
          [](std::string& s) -> std::string { return parse_duration(s) <= 10 ? "" : "must be at most 10s (got " + s + ")"; }, "", "at most 10s"));
  cmd->add_option("--audit-interval", o.audit_interval,
                  "How often each namespace's accuracy audit compares its exact sample with the views' estimates (GET /namespaces/{name}, "
                  "ebb_audit_relative_error); 0: never")
      ->capture_default_str()
      ->check(duration_or_zero_validator());
  cmd->add_option("--max-hot-key-streams", o.limits.max_hot_key_streams, "Hot-key and anomaly subscriptions of GET /hot-keys/stream at most (a stream with both holds two; 429 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(1ul, 1'000'000ul));
  cmd->add_option("--distribution-rate", o.distribution_rate,
                  "Decay rate (lambda, 1/s) of new distributions (GET /incr): with exact decay a bin's count falls by e every 1/rate seconds; with "
                  "poisson, rate x count counts are lost a second on average; a read's ?rate= overrides it")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--distribution-decay", o.distribution_decay,
                  "Decay of new distributions: exact (deterministic exponential) or poisson (bitly forgettable's: a Poisson number of counts "
                  "lost per bin, each bin stopping at 1)")
      ->capture_default_str()
      ->check(CLI::IsMember({"exact", "poisson"}));
  cmd->add_option("--distribution-min-count", o.distribution_min_count, "A distribution's bins decayed under this count are pruned; a distribution with none left expires")
      ->capture_default_str()
      ->check(CLI::Range(1e-12, 1e12));
  cmd->add_option("--distribution-max-bins", o.distribution_max_bins, "Most bins in one distribution (400 on an /incr past it)")
      ->capture_default_str()
      ->check(CLI::Range(1ul, 10'000'000ul));
  cmd->add_option("--max-distribution-bins", o.limits.max_distribution_bins, "Most bins of all distributions together (507 on an /incr past it; about 46 bytes a bin)")
      ->capture_default_str()
      ->check(CLI::Range(1ul, 1ul << 40));
  cmd->add_option("--history-retention", o.history_retention,
                  "How long history is kept: every point for a day, one a minute for 7 days, one an hour until this age")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--history-min-free", o.history_min_free,
                  "History pauses while the data directory's filesystem has less free space than this (the log needs it more); 0: never")
      ->capture_default_str();
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn, error or off (debug logs every request)")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  cmd->add_option("--max-body-bytes", o.limits.max_body_bytes, "Largest request body (413 beyond)")->capture_default_str()->transform(byte_size_transform())->check(CLI::Range(1024ul, 1ul << 29));  // a log record must stay under 1 GiB
  cmd->add_option("--max-batch-events", o.limits.max_batch_events, "Most events in one POST /events, ids in one POST /counts (413 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(1ul, 100'000'000ul));
  cmd->add_option("--max-user-items", o.limits.max_user_items, "Most user items in one POST /top-k/personalised (413 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}));
  cmd->add_option("--max-item-bytes", o.limits.max_item_bytes, "Longest item_id (400 beyond)")->capture_default_str()->transform(byte_size_transform())->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-namespaces", o.limits.max_namespaces, "Most namespaces on the server")->capture_default_str()->check(CLI::Range(1ul, 1'000'000ul));
  cmd->add_option("--max-namespace-bytes", o.limits.max_namespace_bytes, "Most sketch memory one namespace may ask for (all views)")
      ->capture_default_str()
      ->transform(byte_size_transform())->check(CLI::Range(1ul << 10, 1ul << 40));
  cmd->add_option("--max-future-skew", o.max_future_skew, "Default for wall-clock namespaces: how far ahead of the clock an event may be")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--max-event-age", o.max_event_age,
                  "Default max_event_age of new namespaces: an event older than this behind now is refused (400)")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--max-time-jump", o.max_time_jump,
                  "Default max_time_jump of new event-clock namespaces: an event this far ahead of the newest is refused (400)")
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
  cmd->add_option("--nats", o.nats,
                  "Run as a node of a cluster on NATS JetStream (docs/cluster.md): the servers' URLs, comma-separated "
                  "(nats://host:4222,...). JetStream is the log then: no local write-ahead log; --data-dir keeps the partitions' checkpoints");
  cmd->add_option("--node-id", o.node_id, "With --nats: this node's name in the cluster, stable across restarts (default: <hostname>-<port>)");
  cmd->add_option("--nats-partitions", o.nats_partitions, "With --nats: partitions of a new cluster's stream (an existing stream keeps its own)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--nats-replicas", o.nats_replicas, "With --nats: JetStream replicas of a new stream and bucket (1, or 3 with a 3-server NATS cluster)")
      ->capture_default_str()
      ->check(CLI::IsMember({1, 3, 5}));
  cmd->add_option("--nats-stream", o.nats_stream,
                  "With --nats: the JetStream stream's name, also its subjects' prefix (clusters sharing NATS servers need their own)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            const bool ok = !s.empty() && s.size() <= 32 && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
            return ok ? "" : "must be 1 to 32 letters, digits, '_' or '-' (got '" + s + "')";
          },
          "", "NAME"));
  cmd->add_option("--nats-query-timeout", o.nats_query_timeout,
                  "With --nats: how long a query waits for every partition's owner to catch up and answer (then it answers partial)")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--nats-consumer-idle", o.nats_consumer_idle,
                  "With --nats: how long JetStream keeps a partition's idle reader before dropping it (readers are made again as needed)")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--nats-checkpoint-interval", o.nats_checkpoint_interval,
                  "With --nats and --data-dir: how often a partition's owner uploads its newest checkpoint to JetStream, where the "
                  "partition's next owner resumes from (0: never)")
      ->capture_default_str()
      ->check(duration_or_zero_validator());
  cmd->add_option("--nats-retention", o.nats_retention,
                  "With --nats: the stream keeps at least this much of its newest records (30s or more) and drops older ones once "
                  "every partition's shared checkpoint and the catalog's snapshot include them (0: keeps everything; every node "
                  "should run with the same)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            if (s == "0") return {};
            std::string copy = s;
            if (std::string problem = duration_validator()(copy); !problem.empty()) return problem + " (or 0 for off)";
            // A batch's parts may take three publish waits (15 s) to be
            // acknowledged, and its commit is refused past half of this.
            return parse_duration(s) >= 30 ? "" : "must be 0 or at least 30s (got '" + s + "')";
          },
          "DUR|0", "duration or 0"));
  return cmd;
}

int run_serve(ServeOptions o) {
  auto log = spdlog::stderr_logger_mt("ebb");
  log->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  log->set_level(spdlog::level::from_str(o.log_level));
  log->flush_on(spdlog::level::info);

  service::ServiceOptions so;
  // The durations were checked by their validators when parsed; the size is read here.
  o.limits.default_max_future_skew = parse_duration(o.max_future_skew);
  o.limits.default_max_event_age = parse_duration(o.max_event_age);
  o.limits.default_max_time_jump = parse_duration(o.max_time_jump);
  o.limits.idempotency_window = parse_duration(o.idempotency_window);
  try {
    o.limits.max_memory = o.max_memory.empty() ? default_max_memory() : parse_byte_size(o.max_memory);
  } catch (const InvalidArgument& e) {
    log->error("--max-memory: {}", e.what());
    return 2;
  }
  try {
    so.history_min_free_bytes = o.history_min_free == "0" ? 0 : parse_byte_size(o.history_min_free);
  } catch (const InvalidArgument& e) {
    log->error("--history-min-free: {}", e.what());
    return 2;
  }
  o.http.idle_timeout = parse_duration(o.idle_timeout);
  o.http.header_timeout = parse_duration(o.header_timeout);
  o.http.request_timeout = parse_duration(o.request_timeout);
  o.http.shutdown_timeout = parse_duration(o.shutdown_timeout);
  o.http.max_body_bytes = o.limits.max_body_bytes;
  so.limits = o.limits;
  so.data_dir = o.data_dir;
  so.checkpoint_interval = parse_duration(o.checkpoint_interval);
  so.history_interval = o.history_interval == "0" ? 0 : parse_duration(o.history_interval);
  so.history_retention.hours = parse_duration(o.history_retention);
  so.history_retention.minutes = std::min(so.history_retention.minutes, so.history_retention.hours);
  so.history_retention.full = std::min(so.history_retention.full, so.history_retention.hours);
  so.answer_cache_ttl = o.answer_cache_ttl == "0" ? 0 : parse_duration(o.answer_cache_ttl);
  so.hot_key_interval = parse_duration(o.hot_key_interval);
  so.audit_interval = o.audit_interval == "0" ? 0 : parse_duration(o.audit_interval);
  so.distributions.default_rate = o.distribution_rate;
  so.distributions.default_decay = o.distribution_decay == "poisson" ? engine::DistributionDecay::poisson : engine::DistributionDecay::exact;
  so.distributions.min_count = o.distribution_min_count;
  so.distributions.max_bins = o.distribution_max_bins;
  so.distributions.max_name_bytes = o.limits.max_item_bytes;
  so.log.policy = o.fsync == "batch" ? storage::FsyncPolicy::batch : o.fsync == "interval" ? storage::FsyncPolicy::interval : storage::FsyncPolicy::off;
  so.log.fsync_interval = parse_duration(o.fsync_interval);
  so.log.segment_bytes = o.segment_bytes;
  so.log.repair = o.repair_log;

  service::AccessTokens tokens;
  if (!o.auth_token_file.empty()) {
    try {
      tokens = service::AccessTokens::from_file(o.auth_token_file, o.auth_reads);
    } catch (const std::exception& e) {
      log->error("{}", e.what());
      return 2;
    }
    for (const auto& w : tokens.warnings()) log->warn("{}", w);
  } else if (o.auth_reads) {
    log->error("--auth-reads needs --auth-token-file");
    return 2;
  }

  // Cluster mode: the node is the service's link to the cluster; it starts
  // (connects, catches its catalog up) where recovery would run.
  std::shared_ptr<cluster::ClusterNode> node;
  if (!o.nats.empty()) {
    cluster::ClusterOptions co;
    std::stringstream urls(o.nats);
    for (std::string url; std::getline(urls, url, ',');) {
      if (!url.empty()) co.urls.push_back(url);
    }
    if (co.urls.empty()) {
      log->error("--nats: give at least one URL, e.g. nats://127.0.0.1:4222");
      return 2;
    }
    // Opened before anything listens: a missing library is a start that
    // fails, not a port that answers and then goes away.
    try {
      cluster::load_nats_library();
    } catch (const std::exception& e) {
      log->error("{}", e.what());
      return 1;
    }
    co.layout.stream = o.nats_stream;
    co.layout.prefix = o.nats_stream;  // its subjects too: clusters sharing NATS servers stay apart
    co.layout.partitions = o.nats_partitions;
    co.replicas = o.nats_replicas;
    co.query_wait = std::chrono::milliseconds(static_cast<std::int64_t>(parse_duration(o.nats_query_timeout) * 1000));
    co.consumer_idle = std::chrono::milliseconds(std::max<std::int64_t>(1000, static_cast<std::int64_t>(parse_duration(o.nats_consumer_idle) * 1000)));
    co.share_interval = std::chrono::milliseconds(
        o.nats_checkpoint_interval == "0" ? 0 : std::max<std::int64_t>(1, static_cast<std::int64_t>(parse_duration(o.nats_checkpoint_interval) * 1000)));
    co.retention = std::chrono::milliseconds(
        o.nats_retention == "0" ? 0 : std::max<std::int64_t>(1, static_cast<std::int64_t>(parse_duration(o.nats_retention) * 1000)));
    co.hand_over_wait = std::chrono::milliseconds(static_cast<std::int64_t>(o.http.shutdown_timeout * 500));
    co.partition_options = so;
    co.node_id = o.node_id;
    if (!o.data_dir.empty()) co.checkpoint_dir = std::filesystem::path(o.data_dir) / "cluster" / o.nats_stream;
    node = std::make_shared<cluster::ClusterNode>(co, log);
    so.cluster = node;
    so.data_dir.reset();
  }

  service::Service service(so, log);
  resp::ServerFigures resp_figures;
  server::Metrics metrics;
  std::atomic<bool> stopping{false};
  // Admin operations allocate and wait for fsyncs: off the event loops.
  // (Cluster mode also runs queries there: they wait on the network.)
  boost::asio::thread_pool blocking(node ? 16 : 2);
  // What may wait out a merge into a namespace (reads of the namespaces'
  // stats: list, describe, metrics; the queries and batches of a namespace
  // a merge holds now): off the loops, and apart from the admin operations.
  boost::asio::thread_pool lock_waiters(node ? 8 : 2);  // (cluster mode: stats reads ask the partitions, over the network)
  server::Router router;
  server::ApiContext ctx{service, metrics, stopping, [&blocking](std::function<void()> work) { boost::asio::post(blocking, std::move(work)); },
                         tokens, [&lock_waiters](std::function<void()> work) { boost::asio::post(lock_waiters, std::move(work)); }};
  server::add_api_routes(router, ctx);

  server::HttpServer http(o.http, router, metrics, log);
  try {
    http.listen();
  } catch (const std::exception& e) {
    log->error("{}", e.what());
    return 1;
  }
  if (node && o.node_id.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "node");
    node->set_node_id(std::string(host) + "-" + std::to_string(http.port()));
  }
  // Machine-readable for scripts and tests that ask for --port 0.
  std::printf("ebb serve: listening on http://%s:%u\n", o.http.bind.c_str(), static_cast<unsigned>(http.port()));
  std::fflush(stdout);
  log->info("listening address={} port={} threads={} data_dir={} fsync={} auth={}", o.http.bind, http.port(), o.http.threads, o.data_dir, o.fsync,
            !tokens.enabled() ? "off" : tokens.protects_reads() ? "all routes" : "writes and admin");

  // The Redis protocol on the same service, on its own event loops; it
  // stops when HTTP does (SIGTERM/SIGINT, a failed recovery).
  std::optional<resp::Commands> resp_commands;
  std::optional<resp::RespServer> resp_server;
  if (o.resp_port >= 0) {
    o.resp.bind = o.resp_bind.empty() ? o.http.bind : o.resp_bind;
    o.resp.port = static_cast<std::uint16_t>(o.resp_port);
    if (node) o.resp.blocking_threads = 16;  // every read and write waits on the network (as HTTP's queries above)
    resp_commands.emplace(service, tokens, resp_figures, kVersion);
    resp_server.emplace(o.resp, *resp_commands, log);
    try {
      resp_server->listen();
    } catch (const std::exception& e) {
      log->error("{}", e.what());
      return 1;
    }
    std::printf("ebb serve: RESP on %s:%u (redis-cli -p %u)\n", o.resp.bind.c_str(), static_cast<unsigned>(resp_server->port()),
                static_cast<unsigned>(resp_server->port()));
    std::fflush(stdout);
    log->info("resp listening address={} port={} threads={}", o.resp.bind, resp_server->port(), o.resp.threads);
  }
  std::thread resp_thread;
  if (resp_server) resp_thread = std::thread([&] { resp_server->run(); });

  // Recover before serving anything but /healthz, /readyz and /metrics (503 until then).
  std::atomic<bool> recovery_failed{false};
  std::thread recovery([&] {
    try {
      if (node) {
        // Cluster mode: JetStream is the log; the catalog follows it.
        node->start(service);
        service.recover();
        service.start_hot_keys();  // the hot-key streams follow the partitions
        service.start_audit();     // (audit_resize: the partitions' audits added up)
        log->info("cluster: {}", node->status());
        return;
      }
      const auto r = service.recover();
      log->info("recovered namespaces={} distributions={} checkpoint={} replayed_records={} log_bytes={} seconds={:.3f}", r.namespaces,
                service.distributions(), r.checkpoint.empty() ? "none" : r.checkpoint, r.records_replayed, r.log_bytes, r.seconds);
      if (r.records_skipped > 0) log->error("recovery skipped {} batches that no longer applied (see the errors above)", r.records_skipped);
      service.start_checkpoints();
      service.start_history();
      service.start_hot_keys();
      service.start_audit();
      service.start_distribution_expiry();
    } catch (const std::exception& e) {
      log->critical("recovery failed: {}; not serving", e.what());
      recovery_failed = true;
      http.shutdown();
    }
  });
  // A cluster node's stop never outlasts --shutdown-timeout (and the time
  // to let its partitions go): with NATS not
  // answering, its client's waits (5 s each: the hand-over's reads, the
  // last uploads, the unsubscribes) added up past it. At the deadline it
  // exits at once: JetStream holds every acknowledged write (a node keeps
  // no log of its own), and the partitions resume from their newest
  // checkpoints, as after a crash.
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopped = false;
  std::thread watchdog;
  auto end_watchdog = [&] {
    {
      std::lock_guard lock(stop_mu);
      stopped = true;
    }
    stop_cv.notify_all();
    if (watchdog.joinable()) watchdog.join();
  };
  struct EndWatchdog {
    std::function<void()> end;
    ~EndWatchdog() { end(); }
  } end_watchdog_on_return{end_watchdog};
  http.on_shutdown([&] {
    stopping = true;
    if (resp_server) resp_server->shutdown();
    if (node) {
      if (!watchdog.joinable()) {
        // The drain and the hand-over end by the timeout; letting the
        // partitions go (their last checkpoints) comes after: half the
        // timeout more, 5 s at least.
        const double limit = o.http.shutdown_timeout + std::max(5.0, o.http.shutdown_timeout / 2);
        const auto deadline = std::chrono::steady_clock::now() +
                              std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(limit));
        watchdog = std::thread([&, deadline, limit] {
          std::unique_lock lock(stop_mu);
          if (stop_cv.wait_until(lock, deadline, [&] { return stopped; })) return;
          log->error("stopping took longer than --shutdown-timeout and the time to let partitions go ({} s in all; NATS not answering?): "
                     "exiting now. JetStream holds every acknowledged write; the partitions resume from their newest checkpoints",
                     limit);
          log->flush();
          std::_Exit(1);
        });
      }
      node->cancel();  // a start still catching up gives up
      // The drain and the partitions' hand-over share --shutdown-timeout.
      node->leave_by(std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o.http.shutdown_timeout)));
    }
  });
  http.run();  // until SIGTERM/SIGINT
  if (resp_server) resp_server->shutdown();  // (also when HTTP stopped for a failed recovery)
  if (resp_thread.joinable()) resp_thread.join();
  recovery.join();
  blocking.join();
  lock_waiters.join();
  if (node) {
    // The service's threads first (the hot-key streams' poll asks the
    // node), then the node. JetStream holds every acknowledged write; the
    // partitions write their last checkpoints as the node stops.
    try {
      service.shutdown();
    } catch (const std::exception& e) {
      log->error("stopping: {}", e.what());
    }
    node->stop();
    end_watchdog();
    if (recovery_failed) return 1;
    log->info("stopped");
    return 0;
  }
  if (recovery_failed) return 1;
  // Everything acknowledged is in the synced log; the last checkpoint
  // shortens the next start.
  try {
    service.shutdown();
    log->info("stopped");
    return 0;
  } catch (const std::exception& e) {
    log->error("stopped, but the last checkpoint failed: {} (acknowledged writes are in the log and replay at the next start)", e.what());
    return 1;
  }
}

}  // namespace ebb::cli
