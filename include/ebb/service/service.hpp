#pragma once
// The one ingest / query / admin service every front end calls (HTTP today;
// RESP and the cluster mode next). It owns the namespaces, their locks, the
// write-ahead log and the checkpoints, so the rules that make a batch safe
// live here once:
// - a batch is checked whole (every event of every namespace) before any
//   of it is logged or counted: all or nothing, across namespaces;
// - an accepted batch is logged, then counted, under its namespaces' locks,
//   so each namespace counts records in log order and a replay from a
//   checkpoint rebuilds the same state bit for bit;
// - admin operations (create, patch, delete) go through the same log;
// - a front end acknowledges once when_durable() says so (--fsync).
//
// Locks: the name map has a reader-writer lock taken briefly; each
// namespace has its own (ingest and patches exclusive, queries shared).
// Lock order: the map, then namespaces in name order, then the idempotency
// table, then the log.
#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/engine/anomalies.hpp"
#include "ebb/engine/answers.hpp"
#include "ebb/engine/distribution_store.hpp"
#include "ebb/engine/event.hpp"
#include "ebb/engine/namespace.hpp"
#include "ebb/engine/personalised.hpp"
#include "ebb/service/cluster_link.hpp"
#include "ebb/service/limits.hpp"
#include "ebb/service/namespace_spec.hpp"
#include "ebb/service/service_error.hpp"
#include "ebb/service/service_metrics.hpp"
#include "ebb/storage/checkpoint_store.hpp"
#include "ebb/storage/history_store.hpp"
#include "ebb/storage/segment_log.hpp"

namespace ebb::service {

struct ServiceOptions {
  ServiceLimits limits;
  // A cluster partition (or a node's catalog) counts with this share of
  // each namespace's sketches (engine::partition_share): 1/partitions.
  std::uint32_t sketch_share = 1;
  std::optional<std::filesystem::path> data_dir;  // none: nothing is persisted (tests, benchmarks)
  storage::SegmentLogOptions log;
  double checkpoint_interval = 10;  // seconds
  double answer_cache_ttl = 0.1;    // seconds a rendered top-K answer may be reused while nothing changed; 0: never
  double history_interval = 10;     // seconds between history snapshots of every view; 0: none
  double hot_key_interval = 0.1;    // seconds between evaluations of the hot-key detectors
  double audit_interval = 10;       // seconds between accuracy audit passes; 0: none
  storage::HistoryRetention history_retention;
  // Distributions that forget: the rate and pruning of new distributions,
  // the bins of one, and the longest name.
  engine::DistributionOptions distributions;
  double distribution_expire_interval = 1;  // seconds between steps that drop idle distributions
  // History pauses while the data directory's filesystem has less free
  // than this: the log, which holds acknowledged data, needs the room more.
  std::uint64_t history_min_free_bytes = std::uint64_t{512} << 20;
  // Cluster mode (ebb serve --nats): batches and admin records go to the
  // cluster's log and queries to the partitions' owners (cluster_link.hpp);
  // this service keeps the namespace catalog, fed by apply_record(). No
  // data directory then: the cluster's log is the log.
  std::shared_ptr<ClusterLink> cluster;
  // A service fed only by apply_record() from a log kept elsewhere (a
  // cluster partition's replica: JetStream is its log). data_dir then holds
  // checkpoints alone, no write-ahead log: checkpoint_at() names the log
  // position they include, and recover() says where to resume.
  bool external_log = false;
};

// An item's persisted series (GET /history).
struct HistorySeries {
  engine::ViewSpec view;
  std::vector<storage::HistoryPoint> points;
  bool truncated = false;  // more points than the limit
};

// Where a write stands in the log; wait on it with when_durable().
struct Commit {
  std::uint64_t lsn = 0;  // 0: nothing to wait for
};

struct IngestRequest {
  std::span<const engine::Event> events;
  std::span<const std::string_view> namespaces;  // one per event, or one for every event
  std::span<const std::size_t> lines;            // optional: each event's input line, named in errors
  std::span<const std::uint64_t> hashes;         // optional: hash_key() of each event's item, when the caller has them
  double received_at = 0;                        // wall clock; also the default event time
  std::optional<std::string_view> idempotency_key;
  std::uint64_t body_hash = 0;  // what the key must keep naming (same bytes)
  std::size_t body_bytes = 0;   // for the ingest-bytes statistics
  // For answers about what the batch changed (RESP's TOPK.ADD names the
  // items it pushed out of the list, CMS.INCRBY the new counts): called
  // under the namespace's exclusive lock with the namespace just before
  // the batch is logged (counted = false) and just after it is counted.
  // Batches of one namespace only. What it throws is dropped: it cannot
  // stop a logged batch from being counted, so an observer that fails must
  // leave its own answer marked as unknown.
  std::function<void(const engine::Namespace&, bool counted)> observe;
  // RESP: the type of Redis key the command is for, checked under the
  // namespace's lock with the rest of the batch, so that a key deleted and
  // made again as the other type since the command's own check (DEL, then
  // CMS.INITBYDIM) is not counted into: ServiceError conflict "wrong_type".
  // (A namespace made over HTTP answers either.)
  std::optional<RedisKey::Type> redis_type;
};

struct NamespaceInfo {
  NamespaceSpec spec;
  engine::NamespaceStats stats;
  std::uint64_t ingest_bytes = 0;
  // Cluster mode: the stats are the partitions', added up (ClusterLink::
  // stats); the ones that did not answer are missing from them.
  engine::Coverage coverage;
};

// GET /hot-keys: the keys at or above the threshold as of the last
// evaluation (at most hot_key_interval old).
struct HotKeysAnswer {
  std::string ns;
  double threshold = 0, half_life = 0, cool_fraction = 0;  // events/s, seconds, share of the threshold
  double evaluated_at = 0;  // the namespace's "now" of the evaluation
  bool complete = true;     // false: the candidates are too few to rule out a hot key outside them
  std::vector<engine::HotKey> items;  // highest rate first
  engine::Coverage coverage;          // a cluster's: which partitions the list spans
  // hot_keys(name, watch): the watched keys that are not hot, each with its
  // rate as of the evaluation (a cluster's hot-key streams tell a key that
  // cooled in a partition from one that is still hot).
  std::vector<engine::HotKey> watched;
};

// GET /anomalies: a window of the namespace against a baseline, either a
// longer window it keeps ending at the same time or the same window
// `baseline_offset` seconds before (engine/anomalies.hpp).
struct AnomalyRequest {
  double window = 0;
  std::optional<double> baseline;         // seconds: a longer window the namespace keeps
  std::optional<double> baseline_offset;  // seconds back: the same window then (memory, else history)
  std::optional<std::size_t> k;           // none: the namespace's
  engine::AnomalyThresholds thresholds;
  std::optional<double> as_of;            // none: now
};

// What an anomaly subscriber hears: an item that became anomalous (listed
// now, not at the evaluation before); a heartbeat; the namespace's end.
struct AnomalyNotice {
  enum class Kind { anomaly, heartbeat, closed };
  Kind kind = Kind::anomaly;
  double as_of = 0;
  engine::AnomalyItem item;  // anomaly only
  std::string reason;        // closed only: why the stream ends
};

// What a hot-key subscriber hears: a key turned hot or cooled; a
// heartbeat (every few seconds, so a stream can tell its client is still
// there); or the end (the namespace was deleted).
struct HotKeyNotice {
  enum class Kind { hot, cool, heartbeat, closed };
  Kind kind = Kind::hot;
  engine::HotKey key;  // hot and cool only
};

struct RecoveryReport {
  std::size_t namespaces = 0;
  std::string checkpoint;          // the manifest used ("" when none)
  std::uint64_t records_replayed = 0;
  std::uint64_t records_skipped = 0;  // batches that no longer applied (logged each)
  std::uint64_t log_bytes = 0;
  std::string truncation;          // a torn/corrupt log tail that was cut, if any
  // external_log: the log position the recovered state includes (0: none,
  // read the log from its start).
  std::uint64_t log_position = 0;
  std::size_t migrated_legacy = 0; // namespaces read from the pre-log layout
  double seconds = 0;
};

class Service {
 public:
  Service(ServiceOptions options, std::shared_ptr<spdlog::logger> log);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Once, before serving: the newest usable checkpoint, then the log.
  // Throws std::runtime_error naming the path and the problem.
  RecoveryReport recover();
  // Checkpoints every checkpoint_interval from now on (a thread).
  void start_checkpoints();
  // One checkpoint pass now; returns the states written. Throws on failure.
  std::size_t checkpoint();
  // external_log: a checkpoint that includes every record up to `position`
  // of the external log. The caller feeds apply_record() and calls this
  // between records (nothing past `position` applied yet).
  std::size_t checkpoint_at(std::uint64_t position);
  // Stops the checkpoint thread, syncs the log and writes a last
  // checkpoint. Throws when something could not be persisted.
  void shutdown();

  bool recovered() const;
  // Recovered and able to take writes; otherwise why not.
  bool ready() const;
  std::string not_ready_reason() const;
  // Persistence problems that do not stop writes (failing checkpoints).
  std::string warnings() const;

  // Ingest. ServiceError: invalid (names the event and field), not_found,
  // too_large, unprocessable (key reused), overloaded, unavailable.
  Commit ingest(const IngestRequest& request);
  void when_durable(Commit commit, std::function<void(const std::string& error)> done);
  void wait_durable(Commit commit);  // ServiceError unavailable

  // Admin; each returns once its record is durable.
  NamespaceSpec create(NamespaceSpec spec);
  NamespaceSpec patch(const std::string& name, const std::function<NamespaceSpec(const NamespaceSpec&)>& edit);
  void remove(const std::string& name);
  // CMS.MERGE: replaces what `destination` counted by the weighted sum of
  // the sources' counts (engine Namespace::summed: one all-time view each,
  // one sketch shape; a source may be the destination, or come twice),
  // logged as the destination's whole new state under every namespace's
  // lock; returns once the record is durable. ServiceError not_found
  // (names the namespace), invalid "not_summable" (what cannot be summed,
  // named), "sum_overflow" (the summed weight passes 2^53),
  // "state_too_large" (the state is more than a log record holds).
  // Cluster mode: a merge record every partition applies to its own part
  // (apply_merge), checked here first against the catalog and the sources'
  // weights as every partition counted them (unavailable
  // "partition_unavailable" when one does not answer; "namespace_changed"
  // when a namespace changed before the record: nothing merged).
  // `redis_type` (RESP): every namespace must be a Redis key of that type,
  // or made over HTTP, as it is locked (conflict "wrong_type"; nothing
  // merged), as IngestRequest::redis_type for writes.
  void merge(const std::string& destination, std::span<const std::string> sources, std::span<const double> weights,
             std::optional<RedisKey::Type> redis_type = std::nullopt);
  // `redis_type`: as top_rendered's, checked on the namespace described.
  NamespaceInfo describe(const std::string& name, std::optional<RedisKey::Type> redis_type = std::nullopt) const;
  // The namespace's configuration alone (no stats: in cluster mode, no
  // question to the partitions). ServiceError not_found.
  NamespaceSpec spec(const std::string& name) const;
  // What RESP needs of a namespace on every command, without copying its
  // spec: its Redis type and RESERVE arguments (nullopt: made over HTTP).
  // ServiceError not_found.
  std::optional<RedisKey> redis_key(const std::string& name) const;
  bool exists(const std::string& name) const;
  // Cluster mode: waits (bounded) until this node's namespaces include
  // every change in the cluster's log as it stands now, so that a question
  // about the namespaces themselves (RESP's EXISTS, TYPE, DBSIZE) sees a
  // create or delete acknowledged on another node; ServiceError
  // unavailable "catalog_behind" when the deadline passes first. A single
  // node: nothing to wait for.
  void sync_catalog() const;
  std::vector<NamespaceInfo> list() const;
  // This service's own namespaces as its log made them (no question to a
  // cluster's partitions): a cluster catalog's snapshot.
  struct CatalogEntry {
    NamespaceSpec spec;
    std::uint64_t revision = 0;  // the log position of its create or last patch
    double newest_time = 0;      // its newest event time (0: none yet)
  };
  std::vector<CatalogEntry> catalog_entries() const;
  std::size_t size() const;

  // Queries. ServiceError invalid for an unknown view or a bad k / item.
  //
  // The top K, rendered by a front end (`render`, one per `format`; it runs
  // outside the namespace's lock) and reused by later requests for the
  // same view, k and format until the namespace changes (a batch counted,
  // a patch) or answer_cache_ttl passes. The answer states its as_of, so a
  // reused one stays honest. With `redis_type`, a Redis key of another type
  // is refused ("wrong_type"), checked on the very namespace read (a key
  // deleted and made again as the other type between a front end's own
  // check and this read is refused, not read).
  using Rendered = std::shared_ptr<const std::string>;
  Rendered top_rendered(const std::string& name, const std::optional<engine::ViewSpec>& view, std::optional<std::size_t> k,
                        std::string_view format, const std::function<std::string(const engine::TopKAnswer&)>& render,
                        std::optional<RedisKey::Type> redis_type = std::nullopt) const;
  engine::PointAnswer count(const std::string& name, std::string_view item, const std::optional<engine::ViewSpec>& view) const;
  // The view's top K re-ranked for one user (engine/personalised.hpp): the
  // global top kPersonalisedDepth x k and the user's own items, scored
  // alpha x popularity + (1 - alpha) x relevance. ServiceError invalid for
  // an alpha outside [0, 1], a bad k, item, weight or timestamp (naming
  // user_items[i]), too_large past max_batch_events user items.
  engine::PersonalisedAnswer personalised(const std::string& name, const std::optional<engine::ViewSpec>& view, std::optional<std::size_t> k,
                                          double alpha, std::span<const engine::UserItem> user_items) const;
  // Items rising fastest from the long half-life's rate to the short one's
  // (engine/trending.hpp); none given: the namespace's shortest and longest.
  // `since` (a cluster partition's question): the stream's start, measured
  // over every partition (find_trending). `redis_type`: as top_rendered's.
  engine::TrendingAnswer trending(const std::string& name, std::optional<double> short_half_life, std::optional<double> long_half_life,
                                  std::optional<std::size_t> k, double min_count, std::optional<double> since = std::nullopt,
                                  std::optional<RedisKey::Type> redis_type = std::nullopt) const;
  // Throws what ingest() would refuse of these items as its events' item_id
  // (too many, one empty or over the namespace's max_item_bytes: element
  // i; a Redis key of another type than `redis_type`: "wrong_type"),
  // counting nothing: a front end's check of every item of a command
  // before any is counted (an increment of 0 is no event, so ingest()
  // never sees its item).
  void check_event_items(const std::string& name, std::span<const std::string_view> items,
                         std::optional<RedisKey::Type> redis_type = std::nullopt) const;
  // Many items under one lock, in request order; `view_answer` gets the
  // view and accuracy block they share.
  // With `as_of`, as they were then (see top_at()). `redis_type` (RESP):
  // the namespace must be a Redis key of that type, or made over HTTP, as
  // it is read ("wrong_type"), as IngestRequest::redis_type for writes.
  std::vector<engine::PointAnswer> counts(const std::string& name, std::span<const std::string> items,
                                          const std::optional<engine::ViewSpec>& view, engine::TopKAnswer& view_answer,
                                          std::optional<double> as_of = std::nullopt,
                                          std::optional<RedisKey::Type> redis_type = std::nullopt) const;
  // The answers as they were at `as_of` (seconds since the epoch, at most
  // now): from the view's own memory while it reaches that far (a window's
  // bucket rings; source "memory", exact to the stated granularity).
  // Beyond it (and for decayed and all-time views), from the newest
  // persisted snapshot at or before as_of (source "history"; an item not in
  // that list answers listed = false with the bound an unlisted item has);
  // ServiceError invalid "history_unavailable" when there is none.
  engine::TopKAnswer top_at(const std::string& name, const std::optional<engine::ViewSpec>& view, std::optional<std::size_t> k,
                            double as_of) const;
  engine::PointAnswer count_at(const std::string& name, std::string_view item, const std::optional<engine::ViewSpec>& view,
                               double as_of) const;

  // History (persistent services with history_interval > 0): a thread
  // snapshots every namespace's views (their top K) into
  // <data dir>/history.sqlite3 every history_interval and thins old points
  // (history_retention).
  void start_history();
  // (recover() opens the database, and once the namespaces are known drops
  // the history of those that no longer exist.)
  // One snapshot pass now; returns the snapshots written.
  std::size_t snapshot_history();
  // The item's persisted points in [from, to] (at most max_points).
  HistorySeries history(const std::string& name, std::string_view item, const std::optional<engine::ViewSpec>& view, double from, double to,
                        std::size_t max_points) const;

  // Hot keys (namespaces with a hot_key_threshold). A thread evaluates
  // every detector each hot_key_interval (start_hot_keys); hot_keys()
  // evaluates first when the last evaluation is older than that.
  // ServiceError not_found, or invalid "hot_keys_off" while the namespace
  // has no threshold. `watch`: keys whose rates the answer gives in
  // `watched` when they are not hot. `redis_type`: as top_rendered's.
  HotKeysAnswer hot_keys(const std::string& name, std::span<const std::string> watch = {},
                         std::optional<RedisKey::Type> redis_type = std::nullopt) const;
  // Calls `listener` with the namespace's hot keys now (as `hot` notices),
  // then with every change from the next evaluation on, none missed or
  // repeated, until the returned handle is dropped. The listener runs on
  // the evaluating thread holding the namespace's notice lock: it must
  // only hand the notice on (and never drop the handle itself).
  using HotKeyListener = std::function<void(const HotKeyNotice&)>;
  std::shared_ptr<void> subscribe_hot_keys(const std::string& name, HotKeyListener listener);
  void start_hot_keys();
  // Items whose rate or rank jumped (engine/anomalies.hpp). ServiceError
  // invalid "bad_parameter" naming window, baseline, baseline_offset, k or a
  // threshold; "history_unavailable" (baseline_offset: nothing kept that
  // far back); not_found.
  engine::AnomalyAnswer anomalies(const std::string& name, const AnomalyRequest& request) const;
  // Calls `listener` with the items anomalous now, then, at every hot-key
  // evaluation (hot_key_interval, at most once a second), with each item
  // that became anomalous (told once while it keeps passing), until the
  // handle is dropped; `closed` once the namespace is deleted or the
  // question no longer holds (its reason). The request is checked first
  // (anomalies()'s errors; a timestamp is refused); overloaded
  // "too_many_streams" past max_hot_key_streams watches. The listener runs
  // on the evaluating thread (the first notices: on the subscriber's, under
  // the watches' lock): it must only hand the notice on.
  using AnomalyListener = std::function<void(const AnomalyNotice&)>;
  std::shared_ptr<void> subscribe_anomalies(const std::string& name, const AnomalyRequest& request, AnomalyListener listener);
  // One pass over the anomaly watches now (what the hot-key thread runs
  // after its own pass); returns the watches evaluated.
  std::size_t evaluate_anomaly_watches();
  // One evaluation pass now (what the thread runs); returns the number of
  // namespaces with detection on (idle ones skipped included).
  std::size_t evaluate_hot_keys();

  // The accuracy self-audit (engine/accuracy_audit.hpp): a pass over every
  // audited namespace each audit_interval (start_audit; a cluster's
  // partitions run theirs). A view whose top items' error passes its
  // namespace's audit_sla is logged as a warning with the sketch width that
  // would meet it, and again when it recovers. With audit_resize the view
  // is widened to it (a logged PATCH of its width; in a cluster the
  // catalog adds up the partitions' audits and patches). Returns the
  // namespaces audited (0 for a cluster's catalog).
  void start_audit();
  std::size_t audit_namespaces();

  // Distributions that forget (bitly's Forget Table, seed 001;
  // engine/distribution_store.hpp), kept in shards by name, each with its
  // own lock, so increments of different distributions wait for each
  // other little.
  //
  // Adds n to each field at received_at, logged first (wait with
  // when_durable). All or nothing. ServiceError invalid "bad_parameter"
  // (the message names distribution, field or N), insufficient_storage
  // past --max-distribution-bins, overloaded, unavailable.
  Commit incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at);
  // As of `now` (DistributionStore::read): every bin most probable first,
  // `fields` in request order, or the `most_probable` first; nullopt when
  // the distribution holds nothing. ServiceError invalid for a bad rate or N.
  std::optional<engine::DistributionAnswer> distribution(std::string_view name, std::span<const std::string_view> fields, double now,
                                                         std::optional<double> rate = std::nullopt,
                                                         std::optional<std::size_t> most_probable = std::nullopt) const;
  // Distributions held now (an idle one counts until the expiry step
  // drops it: it judges idleness 5 minutes behind the clock, and goes
  // through a million distributions in about 15 s).
  std::size_t distributions() const;
  // What incr() checks of an increment against the distribution's state
  // (a cluster partition's check for the node that takes the write).
  void check_incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at) const;
  // GET /dbsize: distributions() on a single node; a cluster node's adds up
  // its partitions' (ServiceError unavailable when one cannot answer).
  std::uint64_t count_distributions() const;
  const engine::DistributionOptions& distribution_options() const noexcept;
  // One expiry step over every shard (what the expiry thread runs each
  // distribution_expire_interval); returns the distributions dropped.
  std::size_t expire_distributions(double now);
  // One step of what start_distribution_expiry() runs: idle as of now,
  // less a margin for increments still on their way.
  std::size_t expire_idle_distributions();
  void start_distribution_expiry();

  ServiceMetrics metrics() const;
  const ServiceLimits& limits() const noexcept;

  // A log record applied as recovery replays it (log_records.hpp), at
  // position `lsn` (an older one than a namespace's applied LSN is
  // skipped): how a cluster's catalog and its partitions' replicas follow
  // the cluster's log. Batches that no longer apply are logged and skipped;
  // returns false for them. Throws FormatError for a payload that does
  // not decode.
  // `configs` (cluster parts): a batch's group counts only while its
  // namespace's configuration is still the one named (the log position of
  // its create or last patch) when the group was checked; every replica
  // then skips the same groups.
  // `clocks` (cluster parts of event-clock namespaces): a group is checked
  // against the clock its writer checked it against (EventClockCheck).
  using ConfigRevisions = std::map<std::string, std::uint64_t, std::less<>>;
  bool apply_record(std::uint64_t lsn, std::string_view payload, const ConfigRevisions* configs = nullptr,
                    std::span<const EventClockCheck> clocks = {});
  // A cluster commit's event clocks: each namespace still at the
  // configuration named moves its clock to the batch's `after` (every
  // partition, and each node's catalog, whether it counted a part or not).
  // `lsn`: the commit's position.
  void advance_event_clocks(std::uint64_t lsn, std::span<const EventClockCheck> clocks, const ConfigRevisions& configs);
  // A cluster commit's idempotency key (every node's catalog): a retry of
  // the key is answered as the first attempt was, if its batch counted
  // (every namespace still at the configuration named); one that did not
  // count is not remembered, so its retry counts.
  void remember_key(std::uint64_t lsn, std::string_view key, std::uint64_t body_hash, double at, const ConfigRevisions& configs);
  // The idempotency keys still inside their window (a cluster catalog's
  // snapshot carries them, as a checkpoint's manifest does).
  std::vector<storage::ManifestKey> idempotency_keys() const;
  // A cluster's merge record (CMS.MERGE) at log position `lsn`: this
  // service's part of the destination becomes the weighted sum of its parts
  // of the sources, if every namespace is still at the configuration named;
  // otherwise, or when the sum is refused (a count past 2^53 that came
  // after the writer's check), nothing changes and the log says why.
  // Returns whether the merge was applied.
  bool apply_merge(std::uint64_t lsn, const std::string& destination, std::span<const std::string> sources, std::span<const double> weights,
                   const ConfigRevisions& configs);
  // The log position of the namespace's configuration (nullopt: no such namespace).
  std::optional<std::uint64_t> config_revision(std::string_view name) const;
  // Cluster mode: every namespace made from here on counts with this share
  // of its sketches (ServiceOptions::sketch_share); before the catalog has
  // any namespace.
  void share_sketches(std::uint32_t parts);
  // Cluster mode: the link (null on a single node).
  ClusterLink* cluster() const noexcept;
  // Whether a merge holds (or waits for) this namespace's lock now, reading
  // it or writing it, for as long as the merge takes (a second for a sketch
  // of a million columns): a front end sends a request to it off its event
  // loop, whose other connections would wait too. (Racy by nature: a merge
  // that starts just after the check is waited out in place.)
  bool held_long(std::string_view name) const;

  struct State;

 private:
  // audit_resize's PATCH: the namespace's views to `views` wide and its
  // windows' buckets to `windows` (0: unchanged); a refusal (memory
  // limits) is logged once per width.
  void widen_for_audit(const std::string& name, std::uint64_t views, std::uint64_t windows);
  // recover()'s history steps: open the database (a damaged one turns
  // history off, the server still serves), then drop the history of
  // namespaces that no longer exist.
  void open_history();
  void sweep_history();

  std::unique_ptr<State> s_;
};

}  // namespace ebb::service
