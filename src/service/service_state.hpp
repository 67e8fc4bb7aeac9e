#pragma once
// The service's private state, shared by service.cpp (ingest, queries,
// admin), service_recovery.cpp and service_checkpoint.cpp.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>

#include "ebb/core/error.hpp"
#include "ebb/service/service.hpp"
#include "answer_cache.hpp"
#include "ebb/storage/checkpoint_store.hpp"
#include "ebb/storage/history_store.hpp"
#include "idempotency_table.hpp"

namespace ebb::service {

struct NamespaceEntry {
  // `share`: a cluster partition's (engine::partition_share; 1: whole).
  NamespaceEntry(NamespaceSpec s, std::uint64_t lsn, std::uint64_t reserved, double answer_ttl, std::uint32_t share = 1)
      : name(s.config.name), spec(std::move(s)), redis_type(spec.redis ? std::optional(spec.redis->type) : std::nullopt),
        ns(engine::partition_share(spec.config, share)), applied_lsn(lsn), config_lsn(lsn), created_lsn(lsn), reserved_bytes(reserved),
        answers(answer_ttl) {}

  const std::string name;
  mutable std::shared_mutex mu;  // guards everything below but the atomics
  NamespaceSpec spec;   // as asked (what answers, checkpoints and the log show)
  // spec.redis's type, fixed for the entry's life (a patch cannot set
  // `redis`, and keeps it): read without `mu`, so a query's type check
  // does not wait for a batch being counted.
  const std::optional<RedisKey::Type> redis_type;
  engine::Namespace ns;  // counting with spec.config, or a cluster partition's share of it
  std::uint64_t applied_lsn;  // the newest log record counted here (checkpoints, replay)
  // The log record that set the configuration (its create or last patch):
  // a cluster's batches name the one they were checked against.
  std::uint64_t config_lsn;
  // The log record that created it, as the log has it (a cluster's catalog:
  // which of two creates of one name holds; a checkpoint's restore gives
  // its start instead, and nothing asks it there).
  const std::uint64_t created_lsn;
  // Set by remove() under `mu` (exclusively) once its delete is logged: a
  // request that found it before sees 404. Read without `mu` by lookups:
  // until remove() erases it from the map it is there but not found.
  std::atomic<bool> deleted{false};
  // Merges that involve it now (Service::held_long): counted before they
  // take its lock, until they have let it go.
  std::atomic<std::uint32_t> long_holds{0};
  std::uint64_t reserved_bytes;  // of the budget (--max-memory); changes with a patch
  std::atomic<std::uint64_t> ingest_bytes{0};
  // Bumped with every batch counted and every patch, under the exclusive
  // lock: the version a cached answer must still match. (Recovery changes
  // ns before any query is served.)
  std::atomic<std::uint64_t> version{0};
  AnswerCache answers;

  // Hot keys: who listens (GET /hot-keys/stream), and how many keys turned
  // hot / cooled (metrics). `notice_mu` spans an evaluation and the
  // delivery of its changes, and a subscription's first snapshot, so each
  // listener hears every change once and in order. Lock order: notice_mu,
  // then mu.
  std::mutex notice_mu;
  std::vector<std::shared_ptr<struct HotKeySubscriber>> subscribers;
  std::atomic<std::uint64_t> turned_hot{0}, cooled{0};
  // The version the last evaluation saw (under notice_mu): with no new
  // batch and no hot key, an evaluation can change nothing and is skipped.
  std::uint64_t evaluated_version = ~std::uint64_t{0};
  // Cluster mode: the hot keys its streams were last told (under
  // notice_mu), merged from the partitions; known once asked.
  std::map<std::string, engine::HotKey, std::less<>> cluster_hot;
  bool cluster_hot_known = false;

  // Call after changing ns, holding mu exclusively.
  void changed() noexcept { version.fetch_add(1, std::memory_order_release); }
};

using EntryPtr = std::shared_ptr<NamespaceEntry>;

// One shard of the distributions (Service::incr): a store and its lock.
struct DistributionShard {
  explicit DistributionShard(const engine::DistributionOptions& o) : store(o) {}
  mutable std::mutex mu;  // guards everything below
  engine::DistributionStore store;
  std::uint64_t applied_lsn = 0;  // the newest log record counted here (checkpoints, replay)
};
// Fixed: a distribution's shard (its name's hash_key modulo this) is part
// of the checkpoint's layout (parts "distributions.00" to ".15").
constexpr std::size_t kDistributionShards = 16;
std::string distribution_part_name(std::size_t shard);

struct HotKeySubscriber {
  std::atomic<bool> cancelled{false};  // the handle was dropped: pruned at the next delivery
  Service::HotKeyListener listener;
};

// Seconds between heartbeats to a stream's listeners (hot keys, anomalies):
// under the idle timeouts of common proxies (60 s), often enough to notice
// a client gone.
inline constexpr double kStreamHeartbeatSeconds = 15;
inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Hands a namespace's hot-key changes (from an evaluation or a patch) to its
// listeners, the log and the counters; the caller holds e.notice_mu.
void deliver_hot_keys(Service::State& s, NamespaceEntry& e, const std::vector<engine::HotKeyEvent>& changes);

struct Service::State {
  ServiceOptions options;
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<storage::CheckpointStore> store;  // null: not persistent
  std::unique_ptr<storage::SegmentLog> wal;         // null: not persistent

  mutable std::shared_mutex map_mu;
  std::map<std::string, EntryPtr, std::less<>> entries;
  std::atomic<std::uint64_t> reserved{0};

  IdempotencyTable keys{options.limits.idempotency_window, options.limits.max_idempotency_keys};
  std::atomic<bool> recovered{false};
  std::atomic<std::size_t> inflight{0};

  // Checkpoints.
  std::mutex checkpoint_mu;  // one pass at a time
  storage::Manifest last_manifest;
  std::mutex thread_mu;
  std::condition_variable thread_cv;
  bool stop = false;
  std::thread checkpointer;

  // History (null: not persistent, or history_interval 0).
  std::unique_ptr<storage::HistoryStore> history;
  std::thread historian;
  // Held across a snapshot pass (collect, then write) and a namespace's
  // history drop, so a pass that read a namespace before its delete cannot
  // write it back after the drop.
  std::mutex history_mu;
  // Deleted namespaces whose history could not be removed yet (a locked or
  // failing database): retried before every pass; meanwhile no pass writes
  // a namespace of that name and no answer reads its history.
  // Kept in <data dir>/history-pending-drops too (rewritten under
  // pending_file_mu), so a crash does not forget them: a namespace of the
  // name may be created again before the restart.
  mutable std::mutex pending_mu;
  // A name once per delete waiting on it, each mark with its own number.
  // A delete under way drops its own mark's history itself (or unmarks it
  // when it fails); the history thread's retries take only the marks
  // handed over to them: a drop the database refused, a replay's, the
  // ones a crash left in the file. (A retry that took a mark still under
  // way could drop before the pass that then wrote the namespace's last
  // snapshot, or drop a namespace whose delete then failed.)
  struct PendingDrop {
    std::uint64_t mark;
    bool handed_over;
  };
  std::multimap<std::string, PendingDrop, std::less<>> pending_drops;
  std::uint64_t last_drop_mark = 0;  // under pending_mu
  std::mutex pending_file_mu;
  bool pending_drop(std::string_view name) const {
    std::lock_guard lock(pending_mu);
    return pending_drops.contains(name);
  }
  // Why history is off though configured (it could not be opened), or why
  // its passes fail or pause; under metrics_mu. Shown by /readyz.
  std::string history_off;
  std::string history_error;
  std::string pending_file_error;

  // Hot keys.
  std::thread hot_key_evaluator;
  std::atomic<std::size_t> hot_key_streams{0};
  // Cluster mode: the namespaces with hot-key streams, which the evaluator
  // thread asks the partitions about (a deleted one stays until its
  // streams are told).
  std::mutex cluster_streams_mu;
  std::vector<EntryPtr> cluster_streams;
  double last_heartbeat = 0;  // steady seconds; the evaluator thread's
  // Anomaly watches (GET /hot-keys/stream with a window), evaluated by a
  // thread of their own (service_anomalies.cpp), so that they never hold
  // up hot-key detection; they count in hot_key_streams.
  std::thread anomaly_evaluator;
  std::thread auditor;  // the accuracy audit's passes
  // audit_resize, per namespace with it on: the widths last refused
  // (views, windows), so a refusal is logged once, not every pass; and on
  // a cluster's catalog when it last widened (steady seconds), so it waits
  // for the partitions' audits of the new width before it widens again.
  std::mutex audit_resize_mu;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>, std::less<>> audit_resize_refused;
  std::map<std::string, double, std::less<>> audit_resize_at;
  std::mutex anomaly_watches_mu;
  std::vector<std::shared_ptr<struct AnomalyWatch>> anomaly_watches;
  std::mutex anomaly_evaluation_mu;   // one pass at a time
  double last_anomaly_heartbeat = 0;  // steady seconds, under anomaly_evaluation_mu

  // Distributions.
  std::vector<std::unique_ptr<DistributionShard>> distribution_shards;
  std::atomic<std::uint64_t> distribution_bins{0};  // all shards' (the --max-distribution-bins cap)
  std::atomic<std::uint64_t> distribution_increments{0}, distributions_expired{0};
  std::thread distribution_expirer;
  DistributionShard& shard_of(std::string_view distribution) const;
  // What an increment must pass against its distribution as this state
  // holds it (under its shard's lock): ServiceError invalid otherwise.
  void check_increment(std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at) const;

  // Metrics.
  mutable std::mutex metrics_mu;
  ServiceMetrics counters;  // namespaces and log filled at read
  std::string checkpoint_error;
  std::atomic<std::uint64_t> idempotent_replays{0}, persist_failures{0}, overloaded{0};
  // A full disk fails every write: its error is logged at most once a
  // second, with how many failed in between (the count is in /metrics).
  std::atomic<std::int64_t> append_error_logged_at{0};  // steady clock, ns; 0: never
  std::atomic<std::uint64_t> append_errors_unlogged{0};
  std::atomic<std::uint64_t> answer_cache_hits{0}, answer_cache_misses{0};

  // A background thread running `pass` every `seconds` until `stop`; a pass
  // that throws is logged (as `what` failed) and the next one runs on time.
  std::thread every(double seconds, const char* what, std::function<void()> pass);
  // A checkpoint whose start is `start_lsn` (every record up to it is in
  // the states captured); the caller holds checkpoint_mu. Returns the
  // states written.
  std::size_t write_checkpoint(std::uint64_t start_lsn);

  explicit State(ServiceOptions o, std::shared_ptr<spdlog::logger> l) : options(std::move(o)), log(std::move(l)) {
    for (std::size_t i = 0; i < kDistributionShards; ++i) distribution_shards.push_back(std::make_unique<DistributionShard>(options.distributions));
  }

  // The namespace of this name, not deleted (nullptr: none).
  EntryPtr find(std::string_view name) const {
    std::shared_lock lock(map_mu);
    auto it = entries.find(name);
    return it == entries.end() || it->second->deleted ? nullptr : it->second;
  }
  // Namespaces in the map not deleted (the caller holds map_mu).
  std::size_t live_entries() const {
    return static_cast<std::size_t>(std::count_if(entries.begin(), entries.end(), [](const auto& kv) { return !kv.second->deleted; }));
  }
  EntryPtr require(std::string_view name, const std::string& field) const;
  // find(), but in cluster mode a namespace created on another node a
  // moment ago is waited for (the catalog catches up with the log) before
  // it is called missing (nullptr). Not on the catalog's applying thread.
  EntryPtr find_known(std::string_view name) const;
  // Whether every namespace named is still at the configuration named (a
  // cluster record's check; no lock is held across the names: the
  // applying thread is the only one that changes them).
  bool configs_hold(const ConfigRevisions& configs) const;
  // require(), but in cluster mode a namespace created on another node a
  // moment ago is waited for (the catalog catches up with the log) before
  // the name is called unknown. Not on the catalog's applying thread.
  EntryPtr require_known(std::string_view name, const std::string& field) const;
  // Every namespace now, not deleted (the map lock held only to copy the
  // pointers; one may be deleted after, which its lock then shows).
  std::vector<EntryPtr> all_entries() const {
    std::shared_lock lock(map_mu);
    std::vector<EntryPtr> out;
    out.reserve(entries.size());
    for (const auto& [_, e] : entries) {
      if (!e->deleted) out.push_back(e);
    }
    return out;
  }
  // Memory a namespace of this configuration plans to hold (the budget's unit).
  static std::uint64_t planned_bytes(const engine::NamespaceConfig& c);
  // ServiceError overloaded (429) while --max-inflight-batches writes wait
  // for the disk; `writes` names them in the message.
  void refuse_when_overloaded(const char* writes);
  // Takes `need` bytes of the --max-memory budget, or throws ServiceError
  // insufficient_storage; give them back with `reserved -= need`.
  void reserve(std::uint64_t need);
  // Appends a record without waiting for the disk (ServiceError
  // unavailable): callers release their locks, then wait(lsn).
  std::uint64_t append(std::string_view payload);
  void wait(std::uint64_t lsn);
};

// A namespace found, then deleted before its lock was taken: not_found.
inline ServiceError deleted_namespace(const std::string& name) {
  return {ErrorKind::not_found, "namespace_not_found", "namespace '" + name + "' was deleted"};
}

// A RESP command met a namespace that is a Redis key of the other type
// (deleted and made again since the command checked it): conflict
// "wrong_type", RESP's WRONGTYPE.
inline ServiceError wrong_type(const std::string& name) {
  return {ErrorKind::conflict, "wrong_type", "namespace '" + name + "' is a Redis key of another type"};
}

// That the entry (its lock held) answers commands for Redis keys of
// `type` (none: HTTP's, which answer any), else wrong_type.
inline void require_redis_type(const NamespaceEntry& e, std::optional<RedisKey::Type> type) {
  if (type && e.redis_type && *e.redis_type != *type) throw wrong_type(e.name);
}

// A patch's new configuration (`edit` of the entry's spec, the caller
// holding the entry's lock), checked whole as the engine will take it
// before it is logged: ServiceError invalid "invalid_field" naming the field.
NamespaceSpec checked_patch(const NamespaceEntry& e, const std::function<NamespaceSpec(const NamespaceSpec&)>& edit);

// A point query's ids, checked before any is read: ServiceError invalid
// "item_ids[i]: must be 1 to <max_item_bytes> bytes" (element i). The
// caller holds the entry's lock.
inline void check_item_ids(const engine::NamespaceConfig& config, std::span<const std::string> items) {
  const auto max_bytes = config.max_item_bytes;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].empty() || items[i].size() > max_bytes) {
      const std::string problem = "must be 1 to " + std::to_string(max_bytes) + " bytes";
      throw ServiceError(ErrorKind::invalid, "invalid_field", "item_ids[" + std::to_string(i) + "]: " + problem, {i, "", problem});
    }
  }
}

// An unknown view or a bad k / item / time is the caller's mistake: 400
// naming it.
template <typename F>
auto on_query(F&& f) {
  try {
    return f();
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    const bool parameter = what.starts_with("k:") || what.starts_with("item_id:") || what.starts_with("timestamp:") || what.starts_with("min_count:");
    throw invalid(parameter ? "bad_parameter" : "unknown_view", what);
  }
}

// Answers as of a past time (service_history.cpp), for a caller NOT holding
// the entry's lock (they take it shared, and read SQLite after releasing
// it): from the view's memory while it reaches, else from
// the newest persisted snapshot at or before as_of (ServiceError
// history_unavailable when there is none). InvalidArgument for a bad view
// or time.
// A namespace's history about to go (its delete is not logged yet): from
// here no pass writes the name and no answer reads it, and the pending drop
// is on disk, so neither a namespace created again with the name nor a
// crash can bring the old history back.
// Returns the mark, which the delete then drops or unmarks, or hands over
// to the history thread; `handed_over`: the history thread's from the start
// (a replayed delete's).
std::uint64_t mark_history_pending(Service::State& s, const std::string& name, bool handed_over = false);
// Removes it now (true), or hands it over to the history thread's next
// pass when the database refuses (false).
bool drop_history(Service::State& s, const std::string& name, std::uint64_t mark);
// Undoes mark_history_pending() for a delete that did not happen.
void unmark_history_pending(Service::State& s, const std::string& name, std::uint64_t mark);
// Leaves the mark to the history thread (a delete that cannot drop it).
void hand_over_history_mark(Service::State& s, const std::string& name, std::uint64_t mark);
// Drops the history of every name with marks handed over, each drop
// satisfying the ones there were when it began (the history thread,
// before each pass; the caller holds history_mu).
void retry_history_drops(Service::State& s);

engine::TopKAnswer top_as_of(const Service::State& s, const NamespaceEntry& e, const std::optional<engine::ViewSpec>& view,
                             std::optional<std::size_t> k, double as_of);
std::vector<engine::PointAnswer> points_as_of(const Service::State& s, const NamespaceEntry& e, std::span<const std::string> items,
                                              const std::optional<engine::ViewSpec>& view, double as_of);

}  // namespace ebb::service
