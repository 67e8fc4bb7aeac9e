// Ingest, admin and queries: the rules every front end shares.
#include "ebb/service/service.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <random>

#include "ebb/core/buffer_reuse.hpp"
#include "ebb/core/clock.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/exact_table.hpp"
#include "ebb/engine/view_factory.hpp"
#include "ebb/service/log_records.hpp"
#include "service_cluster.hpp"
#include "service_state.hpp"

namespace ebb::service {
namespace {

// What a thread's log record buffer keeps between batches (a pipelined
// Redis-protocol run of 10,000+ events is ~200 KiB).
constexpr std::size_t kKeptRecordBytes = 4u << 20;

ServiceError unavailable(const std::string& why) {
  return {ErrorKind::unavailable, "persist_failed", "the server cannot persist writes now: " + why};
}

// A CMS key counts whole increments exactly, in doubles, up to 2^53
// (docs/resp.md): a batch that would take its total there is refused
// whole, as a merge that would is. (No item's count exceeds the total, so
// below it every count and every sum of whole increments on the way is
// exact.) Single node only: in cluster mode the partitions count, and this
// node's entry holds no counts.
void require_exact_total(const NamespaceEntry& e, std::span<const engine::Event> events) {
  double total = e.ns.counted_weight();
  for (const auto& ev : events) total += ev.weight;
  if (!(total < engine::Namespace::kMaxSummedWeight)) {
    throw ServiceError(ErrorKind::invalid, "count_overflow",
                       "events: counting them would take the total count of namespace '" + message_text(e.name) +
                           "' to 2^53 or more, where CMS counts stop being exact; nothing was counted");
  }
}

}  // namespace

namespace {

EntryPtr found(EntryPtr e, std::string_view name, const std::string& field) {
  if (!e) throw ServiceError(ErrorKind::not_found, "namespace_not_found", field + ": no namespace '" + message_text(name) + "'");
  return e;
}

}  // namespace

EntryPtr Service::State::require(std::string_view name, const std::string& field) const { return found(find(name), name, field); }

EntryPtr Service::State::find_known(std::string_view name) const {
  if (auto e = find(name)) return e;
  if (!options.cluster) return nullptr;
  // Cluster mode: made on another node a moment ago? Not found is a
  // definite answer only once the catalog has caught up with the log.
  if (!options.cluster->catch_up()) {
    const std::string why = options.cluster->failure();
    throw ServiceError(ErrorKind::unavailable, "catalog_behind",
                       "namespace '" + message_text(name) + "': this node cannot tell whether it exists (its view of the cluster's log is behind" +
                           (why.empty() ? std::string() : ": " + why) + "); try again, or ask another node");
  }
  return find(name);
}

EntryPtr Service::State::require_known(std::string_view name, const std::string& field) const {
  return found(find_known(name), name, field);
}

std::uint64_t Service::State::planned_bytes(const engine::NamespaceConfig& c) {
  // A sketch view: its counters, plus each candidate slot with a key of
  // typical length (the heap, its index and the key bytes). The hot-key
  // detector is one more, whatever the namespace counts with.
  const std::uint64_t per_view = c.sketch.counter_bytes() + std::uint64_t{c.resolved_candidates()} * 128;
  const std::uint64_t detector = c.hot_key_threshold ? per_view : 0;
  const std::uint64_t audit = engine::AccuracyAudit::planned_bytes(c, 128);
  if (c.counting == engine::Counting::exact) return engine::ExactTable::bytes_max(c) + detector + audit;
  const std::uint64_t views = (c.all_time ? 1 : 0) + c.half_lives.size();
  return views * per_view + detector + audit + engine::window_bytes_max(c);
}

void Service::State::refuse_when_overloaded(const char* writes) {
  if (inflight.load(std::memory_order_relaxed) < options.limits.max_inflight_batches) return;
  ++overloaded;
  throw ServiceError(ErrorKind::overloaded, "overloaded",
                     "more than " + std::to_string(options.limits.max_inflight_batches) + " " + writes +
                         " are waiting for the disk (--max-inflight-batches); retry shortly");
}

void Service::State::reserve(std::uint64_t need) {
  const std::uint64_t budget = options.limits.max_memory;
  std::uint64_t have = reserved.load();
  do {
    if (budget != 0 && have + need > budget) {
      throw ServiceError(ErrorKind::insufficient_storage, "insufficient_storage",
                         "the namespace needs " + std::to_string(need >> 20) + " MiB more; " + std::to_string(have >> 20) + " MiB of the " +
                             std::to_string(budget >> 20) + " MiB budget (--max-memory) are taken");
    }
  } while (!reserved.compare_exchange_weak(have, have + need));
}

std::uint64_t Service::State::append(std::string_view payload) {
  if (!wal) return 0;
  try {
    return wal->append(payload);
  } catch (const storage::LogUnavailable& e) {
    ++persist_failures;
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
    std::int64_t last = append_error_logged_at.load(std::memory_order_relaxed);
    if ((last == 0 || now - last >= 1'000'000'000) && append_error_logged_at.compare_exchange_strong(last, now)) {
      const std::uint64_t unlogged = append_errors_unlogged.exchange(0);
      if (unlogged == 0) {
        log->error("log append failed: {}", e.what());
      } else {
        log->error("log append failed: {} ({} more failed since the last of these lines)", e.what(), unlogged);
      }
    } else {
      append_errors_unlogged.fetch_add(1, std::memory_order_relaxed);
    }
    throw unavailable(e.what());
  }
}

void Service::State::wait(std::uint64_t lsn) {
  if (!wal || lsn == 0) return;
  try {
    wal->wait_durable(lsn);
  } catch (const storage::LogUnavailable& e) {
    ++persist_failures;
    throw unavailable(e.what());
  }
}

Service::Service(ServiceOptions options, std::shared_ptr<spdlog::logger> log)
    : s_(std::make_unique<State>(std::move(options), std::move(log))) {}

Service::~Service() {
  {
    std::lock_guard lock(s_->thread_mu);
    s_->stop = true;
  }
  s_->thread_cv.notify_all();
  if (s_->checkpointer.joinable()) s_->checkpointer.join();
  if (s_->historian.joinable()) s_->historian.join();
  if (s_->hot_key_evaluator.joinable()) s_->hot_key_evaluator.join();
  if (s_->anomaly_evaluator.joinable()) s_->anomaly_evaluator.join();
  if (s_->auditor.joinable()) s_->auditor.join();
  if (s_->distribution_expirer.joinable()) s_->distribution_expirer.join();
}

const ServiceLimits& Service::limits() const noexcept { return s_->options.limits; }

bool Service::recovered() const { return s_->recovered; }

bool Service::ready() const { return not_ready_reason().empty(); }

std::string Service::not_ready_reason() const {
  if (!s_->recovered) return "the server is recovering its namespaces";
  if (s_->options.cluster) return s_->options.cluster->failure();
  if (s_->wal) {
    if (auto f = s_->wal->failure(); !f.empty()) return "the write-ahead log failed: " + f;
  }
  return "";
}

std::string Service::warnings() const {
  std::lock_guard lock(s_->metrics_mu);
  std::string out;
  if (!s_->checkpoint_error.empty()) out = "checkpoints are failing (writes are still logged): " + s_->checkpoint_error;
  for (const auto* history : {&s_->history_off, &s_->history_error, &s_->pending_file_error}) {
    if (history->empty()) continue;
    out += (out.empty() ? "" : "; ") + *history;
  }
  return out;
}

namespace {

// Cluster mode: the checked batch goes to the cluster's log (counted by the
// partitions' owners, not here). Retries of one idempotency key and body
// share a batch id, which the log deduplicates (docs/cluster.md says for
// how long); any other batch gets a random one.
template <typename Targets>
std::uint64_t publish_to_cluster(Service::State& s, const BatchRecord& record, const Targets& targets, const IngestRequest& req) {
  std::vector<std::vector<std::uint64_t>> hashes;
  hashes.reserve(targets.size());
  std::map<std::string, std::uint64_t, std::less<>> configs;
  std::vector<EventClockCheck> clocks;
  std::uint64_t revisions = 0;  // a retry after a namespace changed is another batch
  for (const auto& t : targets) {
    hashes.emplace_back(t.hashes.begin(), t.hashes.end());
    configs.emplace(t.entry->name, t.entry->config_lsn);  // read under the entry's lock, which ingest holds
    revisions = mix64(revisions ^ t.entry->config_lsn);
    // An event clock: the catalog's, as the batch was checked against it,
    // and the newest event time after it (this node's catalog moves it when
    // it reads the commit); windows need the newest time too, so that every
    // partition turns its buckets as a single node's turn.
    const auto& ns = t.entry->ns;
    const double after = ns.newest_after_staged();
    if ((ns.config().clock == engine::ClockMode::event || !ns.config().windows.empty()) && std::isfinite(after)) {
      clocks.push_back({t.entry->name, ns.clock_before_staged(), after, ns.config().clock == engine::ClockMode::event});
    }
  }
  char id[40];
  if (req.idempotency_key) {
    std::snprintf(id, sizeof id, "k%016llx%016llx", static_cast<unsigned long long>(hash_key(*req.idempotency_key) ^ revisions),
                  static_cast<unsigned long long>(req.body_hash));
  } else {
    thread_local std::mt19937_64 random{std::random_device{}()};
    const auto a = random(), b = random();
    std::snprintf(id, sizeof id, "r%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  }
  // (The record's key goes in the commit, for every node's key table; the
  // parts do not carry it.)
  const std::uint64_t ticket = s.options.cluster->publish_batch(record, hashes, configs, id, std::move(clocks));
  for (const auto& t : targets) t.entry->ingest_bytes += req.body_bytes * t.hashes.size() / req.events.size();
  return ticket;
}

}  // namespace

namespace {

// ServiceError too_large past --max-batch-events.
void check_batch_size(const Service::State& s, std::size_t events) {
  if (events > s.options.limits.max_batch_events) {
    throw ServiceError(ErrorKind::too_large, "batch_too_large",
                       "events: more than " + std::to_string(s.options.limits.max_batch_events) + " events in one batch (--max-batch-events)");
  }
}

// Where event i is, as errors name it: "events[i]", with its input line
// when the caller knows it ("events[3] (line 5)").
std::string at_event(std::size_t i, std::span<const std::size_t> lines) {
  std::string at = "events[" + std::to_string(i) + "]";
  if (i < lines.size()) at += " (line " + std::to_string(lines[i]) + ")";
  return at;
}

// ServiceError invalid "invalid_event": event i's field and what is wrong
// with it, as text and as the error's element (RESP names the item).
ServiceError invalid_event(std::size_t i, std::span<const std::size_t> lines, const std::string& field,
                           const std::string& problem) {
  return {ErrorKind::invalid, "invalid_event", at_event(i, lines) + "." + field + ": " + problem, {i, field, problem}};
}

}  // namespace

Commit Service::ingest(const IngestRequest& req) {
  State& s = *s_;
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (req.events.size() != req.namespaces.size() && req.namespaces.size() != 1) {
    throw std::logic_error("ingest: one namespace per event, or one for all");
  }
  if (req.events.empty()) return {};
  check_batch_size(s, req.events.size());
  s.refuse_when_overloaded("batches");
  if (req.idempotency_key && (req.idempotency_key->empty() || req.idempotency_key->size() > s.options.limits.max_idempotency_key_bytes)) {
    throw invalid("bad_idempotency_key", "Idempotency-Key: must be 1 to " + std::to_string(s.options.limits.max_idempotency_key_bytes) + " bytes");
  }
  // The answer to a batch whose key was seen: the first one's (422 when the
  // key came with another batch). Needs the key table's lock.
  auto replay_of = [&](const IdempotencyTable::Seen& seen) {
    if (seen.body_hash != req.body_hash) {
      throw ServiceError(ErrorKind::unprocessable, "idempotency_key_reused",
                         "Idempotency-Key: '" + message_text(*req.idempotency_key) + "' was used for a different batch");
    }
    ++s.idempotent_replays;
    // Counted once already; the caller waits for that record (in cluster
    // mode it is in the log: nothing to wait for).
    return s.options.cluster ? Commit{} : Commit{seen.lsn};
  };
  // A retry answers as the first attempt did, whatever happened since (its
  // namespace deleted, its events now older than max_event_age): the key is
  // looked up before the batch is judged again, and once more below under
  // the namespaces' locks for two copies racing.
  if (req.idempotency_key) {
    // Cluster mode: the first attempt may have been taken by another node;
    // this node's key table (fed by the commits) knows it once its catalog
    // has caught up with the log.
    if (s.options.cluster && !s.options.cluster->catch_up()) {
      throw ServiceError(ErrorKind::unavailable, "catalog_behind",
                         "Idempotency-Key: this node cannot tell yet whether the batch was counted (its view of the cluster's log is behind); "
                         "retry");
    }
    std::lock_guard key_lock(s.keys.mutex());
    if (auto seen = s.keys.find(*req.idempotency_key, req.received_at)) return replay_of(*seen);
  }

  // Group by namespace (the common case, one namespace, without copying).
  struct Target {
    EntryPtr entry;
    std::vector<std::size_t> indices;  // empty: every event
    std::vector<engine::Event> events;
    std::vector<std::uint64_t> own_hashes;
    // hash_key() of each of its events: the request's, or own_hashes (set
    // once `targets` is complete; a Target is never copied after that).
    std::span<const std::uint64_t> hashes;
  };
  std::vector<Target> targets;
  const std::string_view first_ns = req.namespaces.front();
  const bool single =
      req.namespaces.size() == 1 || std::all_of(req.namespaces.begin(), req.namespaces.end(), [&](std::string_view n) { return n == first_ns; });
  if (single) {
    targets.push_back({s.require_known(first_ns, at_event(0, req.lines) + ".namespace"), {}, {}, {}, {}});
  } else {
    std::map<std::string_view, std::vector<std::size_t>> groups;  // name order: a fixed lock order
    for (std::size_t i = 0; i < req.events.size(); ++i) groups[req.namespaces[i]].push_back(i);
    for (auto& [name, indices] : groups) {
      Target t{s.require_known(name, at_event(indices.front(), req.lines) + ".namespace"), std::move(indices), {}, {}, {}};
      t.events.reserve(t.indices.size());
      for (std::size_t i : t.indices) t.events.push_back(req.events[i]);
      targets.push_back(std::move(t));
    }
  }
  auto events_of = [&](const Target& t) { return t.indices.empty() ? req.events : std::span<const engine::Event>(t.events); };
  // Keys are hashed before any lock is taken: a namespace's lock is held
  // only to check, log and count (two event loops ingesting into one
  // namespace wait for each other less).
  for (auto& t : targets) {
    const auto events = events_of(t);
    if (single && req.hashes.size() == req.events.size()) {
      t.hashes = req.hashes;
      continue;
    }
    t.own_hashes.resize(events.size());
    for (std::size_t i = 0; i < events.size(); ++i) t.own_hashes[i] = hash_key(events[i].item);
    t.hashes = t.own_hashes;
  }

  // The record is built before any lock is taken (the log's from the
  // events where they lie; the cluster's publisher takes a BatchRecord).
  std::optional<IdempotencyStamp> stamp;
  if (req.idempotency_key) stamp = IdempotencyStamp{*req.idempotency_key, req.body_hash};
  thread_local std::string payload;
  // Kept for the thread's next batch unless it is large: one batch of the
  // largest size (a 64 MiB item refused or not) would otherwise stay with
  // every thread that ingests.
  struct KeepLittle {
    std::string& buffer;
    ~KeepLittle() { release_beyond(buffer, kKeptRecordBytes); }  // (not cleared: the next record's resize() fills only its growth)
  } const keep_little{payload};
  std::string_view record_bytes;  // (the front of payload)
  if (s.wal) {
    std::vector<BatchGroupView> groups;
    groups.reserve(targets.size());
    for (const auto& t : targets) groups.push_back({t.entry->name, events_of(t)});
    record_bytes = encode_batch_compact_at_front(payload, req.received_at, stamp, groups);
  }
  BatchRecord record;
  if (s.options.cluster) {
    record.received_at = req.received_at;
    record.key = stamp;
    for (const auto& t : targets) record.groups.push_back({t.entry->name, {events_of(t).begin(), events_of(t).end()}});
  }

  std::vector<std::unique_lock<std::shared_mutex>> locks;
  locks.reserve(targets.size());
  for (auto& t : targets) locks.emplace_back(t.entry->mu);
  for (auto& t : targets) {
    if (t.entry->deleted) throw deleted_namespace(t.entry->name);
    require_redis_type(*t.entry, req.redis_type);
    try {
      t.entry->ns.stage(events_of(t), t.hashes, req.received_at);
    } catch (const BatchError& e) {
      const std::size_t index = t.indices.empty() ? e.index() : t.indices[e.index()];
      throw invalid_event(index, req.lines, e.field(), e.message());
    }
  }
  if (s.options.cluster) return Commit{publish_to_cluster(s, record, targets, req)};
  // Every event is valid: log, then count (which cannot fail now). An
  // observer sees the namespace before anything is logged; what it does
  // can never stop the count once the record is in the log.
  auto observe = [&](bool counted) noexcept {
    if (!req.observe || targets.size() != 1) return;
    try {
      req.observe(targets[0].entry->ns, counted);
    } catch (...) {
    }
  };
  observe(false);
  std::uint64_t lsn = 0;
  {
    std::unique_lock<std::mutex> key_lock;
    if (req.idempotency_key) {
      key_lock = std::unique_lock(s.keys.mutex());
      if (auto seen = s.keys.find(*req.idempotency_key, req.received_at)) return replay_of(*seen);
    }
    // (Checked once every event is found valid, and a retry is known to be one.)
    for (const auto& t : targets) {
      if (t.entry->redis_type == RedisKey::Type::cms || req.redis_type == RedisKey::Type::cms) require_exact_total(*t.entry, events_of(t));
    }
    lsn = s.wal ? s.append(record_bytes) : 0;
    if (req.idempotency_key) s.keys.insert(*req.idempotency_key, req.body_hash, lsn, req.received_at);
  }
  for (auto& t : targets) {
    t.entry->ns.apply_staged();
    t.entry->changed();
    t.entry->applied_lsn = lsn;
    t.entry->ingest_bytes += req.body_bytes * events_of(t).size() / req.events.size();
  }
  observe(true);
  return Commit{lsn};
}

void Service::when_durable(Commit commit, std::function<void(const std::string& error)> done) {
  State& s = *s_;
  if (s.options.cluster && commit.lsn != 0) {
    ++s.inflight;
    s.options.cluster->when_published(commit.lsn, [&s, done = std::move(done)](const std::string& error) {
      --s.inflight;
      if (!error.empty()) ++s.persist_failures;
      done(error);  // (the link says what became of the batch)
    });
    return;
  }
  if (!s.wal || commit.lsn == 0) return done("");
  ++s.inflight;
  s.wal->when_durable(commit.lsn, [&s, done = std::move(done)](const std::string& error) {
    --s.inflight;
    if (!error.empty()) ++s.persist_failures;
    done(error.empty() ? error : "the server cannot persist writes now: " + error);
  });
}

void Service::wait_durable(Commit commit) {
  if (!s_->options.cluster) return s_->wait(commit.lsn);
  std::promise<std::string> published;
  when_durable(commit, [&published](const std::string& error) { published.set_value(error); });
  if (auto error = published.get_future().get(); !error.empty()) throw unavailable(error);
}

NamespaceSpec Service::create(NamespaceSpec spec) {
  if (s_->options.cluster && s_->recovered) return cluster_mode::create(*s_, std::move(spec));
  State& s = *s_;
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  const std::string name = spec.config.name;
  auto exists = [&] { return ServiceError(ErrorKind::conflict, "namespace_exists", "name: namespace '" + name + "' already exists"); };
  if (s.find(name)) throw exists();
  auto over_limit = [&] {
    return invalid("namespace_limit",
                   "name: the server holds its limit of " + std::to_string(s.options.limits.max_namespaces) + " namespaces (--max-namespaces)");
  };
  if (size() >= s.options.limits.max_namespaces) throw over_limit();
  // Reserve the memory before allocating it, so concurrent creates cannot
  // overshoot the budget together.
  const std::uint64_t need = State::planned_bytes(spec.config);
  s.reserve(need);
  std::shared_ptr<NamespaceEntry> entry;
  bool inserted = false;  // from then on the reservation is the entry's (remove() returns it)
  try {
    // The allocation (up to --max-namespace-bytes) happens here, outside
    // every lock; front ends call create() off their event loops.
    entry = std::make_shared<NamespaceEntry>(spec, 0, need, s.options.answer_cache_ttl);
    const std::string payload = encode_admin({RecordType::create, {}, write_namespace_spec(entry->spec, true), {}});
    std::uint64_t lsn = 0;
    {
      std::unique_lock lock(s.map_mu);
      // A namespace deleted but not yet out of the map (remove() erases it
      // after logging its delete, which is then before this create) is
      // replaced; remove() leaves the new one in place.
      if (auto it = s.entries.find(name); it != s.entries.end() && !it->second->deleted) throw exists();
      if (s.live_entries() >= s.options.limits.max_namespaces) throw over_limit();  // concurrent creates
      lsn = s.append(payload);  // under the map lock: the log orders creates and deletes of a name as the map does
      entry->applied_lsn = lsn;
      entry->config_lsn = lsn;
      s.entries.insert_or_assign(name, entry);
      inserted = true;
    }
    s.wait(lsn);
  } catch (...) {
    if (!inserted) s.reserved -= need;
    throw;
  }
  return entry->spec;
}

NamespaceSpec checked_patch(const NamespaceEntry& e, const std::function<NamespaceSpec(const NamespaceSpec&)>& edit) {
  NamespaceSpec next = edit(e.spec);
  next.redis = e.spec.redis;  // a patch keeps the Redis type (NamespaceEntry::redis_type is fixed)
  try {
    next.config.validate();
  } catch (const InvalidArgument& err) {
    throw invalid("invalid_field", err.what());
  }
  if (next.config.k > e.ns.config().candidates) {
    throw invalid("invalid_field", "k: must be at most the namespace's " + std::to_string(e.ns.config().candidates) + " candidates");
  }
  // A resize only widens, by a power of two (the counts are carried into
  // the wider sketch), and never a sketch a memory budget sized.
  try {
    engine::check_resize(e.spec.config, next.config);
  } catch (const InvalidArgument& err) {
    throw invalid("invalid_field", err.what());
  }
  return next;
}

NamespaceSpec Service::patch(const std::string& name, const std::function<NamespaceSpec(const NamespaceSpec&)>& edit) {
  if (s_->options.cluster && s_->recovered) return cluster_mode::patch(*s_, name, edit);
  State& s = *s_;
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto entry = s.require(name, "name");
  std::uint64_t lsn = 0;
  NamespaceSpec next;
  // A patch that stops or restarts hot-key detection cools its hot keys,
  // delivered like an evaluation's changes (under the same lock, released
  // before the wait for the disk: evaluations of every namespace take it).
  std::unique_lock notice(entry->notice_mu);
  std::vector<engine::HotKeyEvent> cooled;
  {
    std::unique_lock lock(entry->mu);
    if (entry->deleted) throw ServiceError(ErrorKind::not_found, "namespace_not_found", "name: no namespace '" + message_text(name) + "'");
    // The engine must accept the whole new configuration before it is
    // logged, so the log and memory cannot disagree. (What can still fail
    // after it: a resize's allocation, which changes nothing in memory; a
    // restart would replay the record.)
    next = checked_patch(*entry, edit);
    // Turning hot-key detection on reserves its memory (off returns it).
    const std::uint64_t need = State::planned_bytes(next.config);
    if (need > entry->reserved_bytes) s.reserve(need - entry->reserved_bytes);
    try {
      lsn = s.append(encode_admin({RecordType::patch, name, write_namespace_spec(next, true), {}}));
    } catch (...) {
      if (need > entry->reserved_bytes) s.reserved -= need - entry->reserved_bytes;
      throw;
    }
    if (need < entry->reserved_bytes) s.reserved -= entry->reserved_bytes - need;
    entry->reserved_bytes = need;
    cooled = entry->ns.reconfigure(engine::partition_share(next.config, s.options.sketch_share));
    entry->spec = next;
    entry->applied_lsn = lsn;
    entry->config_lsn = lsn;
    entry->changed();
  }
  deliver_hot_keys(s, *entry, cooled);
  notice.unlock();
  s.wait(lsn);
  return next;
}

void Service::remove(const std::string& name) {
  if (s_->options.cluster && s_->recovered) return cluster_mode::remove(*s_, name);
  State& s = *s_;
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  std::uint64_t lsn = 0;
  // Its history is marked to go before the delete is logged (see
  // mark_history_pending); a delete that fails unmarks it.
  const bool history = s.history != nullptr;
  const std::uint64_t history_mark = history ? mark_history_pending(s, name) : 0;
  const auto missing = [&] { return ServiceError(ErrorKind::not_found, "namespace_not_found", "name: no namespace '" + message_text(name) + "'"); };
  EntryPtr gone;
  try {
    gone = s.find(name);
    if (!gone) throw missing();
    // Logged and marked deleted under its own lock: a batch that found
    // this namespace earlier then sees it deleted instead of logging after
    // the delete (where a replay would give it to a new namespace of the
    // same name). Not under the map's lock: the entry's may be held for a
    // while (a merge into it), and every lookup of every namespace takes
    // the map's.
    std::unique_lock ns_lock(gone->mu);
    if (gone->deleted) throw missing();  // (another delete came first)
    lsn = s.append(encode_admin({RecordType::remove, name, {}, {}}));
    // Its memory back first: a create of the name that sees the mark below
    // may reserve at once. (A patch changes reserved_bytes under this
    // lock, and refuses a deleted namespace.)
    s.reserved -= gone->reserved_bytes;
    gone->deleted = true;  // from now on lookups do not find it, and a create of the name may replace it
  } catch (...) {
    if (history) unmark_history_pending(s, name, history_mark);
    throw;
  }
  // From here the delete stands: its mark is dropped below, or, should
  // anything below throw, handed over to the history thread (a mark under
  // way is no pass's to drop, and would mask the name's history for good).
  struct HandOver {
    State& s;
    const std::string& name;
    std::uint64_t mark;
    bool armed;
    ~HandOver() {
      if (armed) hand_over_history_mark(s, name, mark);
    }
  } hand_over{s, name, history_mark, history};
  {
    // Out of the map only now, under its lock. Since the delete was logged
    // and marked, lookups (find, all_entries) pass over it, and a create of
    // the name may have replaced it already (its create logged after this
    // delete): that one stays.
    std::unique_lock map_lock(s.map_mu);
    if (auto it = s.entries.find(name); it != s.entries.end() && it->second == gone) s.entries.erase(it);
  }
  {
    // Its hot-key streams end.
    std::lock_guard notice(gone->notice_mu);
    for (const auto& sub : gone->subscribers) {
      if (!sub->cancelled) sub->listener({HotKeyNotice::Kind::closed, {}});
    }
    gone->subscribers.clear();
  }
  s.wait(lsn);
  // Its history goes too: a new namespace of the same name starts afresh
  // (if the database refuses now, the history thread retries).
  if (history) drop_history(s, name, history_mark);  // (refused: it hands the mark over itself)
  hand_over.armed = false;
}

bool Service::held_long(std::string_view name) const {
  const auto e = s_->find(name);
  return e && e->long_holds.load(std::memory_order_relaxed) > 0;
}

std::optional<RedisKey> Service::redis_key(const std::string& name) const {
  auto e = s_->require_known(name, "name");  // (cluster mode: created on another node a moment ago)
  std::shared_lock lock(e->mu);
  return e->spec.redis;
}

void Service::share_sketches(std::uint32_t parts) {
  if (size() != 0) throw std::logic_error("share_sketches: the service holds namespaces already");
  s_->options.sketch_share = std::max<std::uint32_t>(1, parts);
}

NamespaceSpec Service::spec(const std::string& name) const {
  auto e = s_->require_known(name, "name");  // (cluster mode: created on another node a moment ago)
  std::shared_lock lock(e->mu);
  return e->spec;
}

void Service::sync_catalog() const {
  if (!s_->options.cluster || !s_->recovered) return;
  if (!s_->options.cluster->catch_up()) {
    throw ServiceError(ErrorKind::unavailable, "catalog_behind",
                       "this node cannot tell the namespaces as the cluster's log has them now (is NATS reachable?); try again");
  }
}

bool Service::exists(const std::string& name) const { return s_->find_known(name) != nullptr; }

namespace {

// Stats no partition gave: every one missing.
engine::Coverage nobody_answered(const ClusterLink& cluster) {
  engine::Coverage c;
  c.partitions = cluster.partitions();
  for (std::uint32_t p = 0; p < c.partitions; ++p) c.missing.push_back(p);
  return c;
}

}  // namespace

NamespaceInfo Service::describe(const std::string& name, std::optional<RedisKey::Type> redis_type) const {
  auto e = s_->require_known(name, "name");  // (cluster mode: created on another node a moment ago)
  require_redis_type(*e, redis_type);
  const bool partitions = s_->options.cluster && s_->recovered;  // (the catalog counts nothing: what the partitions counted)
  NamespaceInfo out;
  {
    std::shared_lock lock(e->mu);
    out = {e->spec, partitions ? engine::NamespaceStats{} : e->ns.stats(), e->ingest_bytes.load(), {}};
  }
  if (partitions) {
    try {
      const auto counted = s_->options.cluster->stats(std::span(&name, 1), out.coverage);
      for (const auto& [counted_name, stats] : counted) {
        if (counted_name == name) out.stats = stats;
      }
    } catch (const ServiceError& e) {
      if (e.kind() == ErrorKind::not_found) throw;  // deleted meanwhile
      out.coverage = nobody_answered(*s_->options.cluster);  // (NATS down): the configuration still stands
    }
  }
  return out;
}

std::vector<NamespaceInfo> Service::list() const {
  const std::vector<EntryPtr> entries = s_->all_entries();
  std::vector<NamespaceInfo> out;
  out.reserve(entries.size());
  for (const auto& e : entries) {
    std::shared_lock lock(e->mu);
    out.push_back({e->spec, e->ns.stats(), e->ingest_bytes.load(), {}});
  }
  if (s_->options.cluster && s_->recovered && !out.empty()) {
    // One question for every namespace; one the partitions do not know
    // yet (created a moment ago) counted nothing there.
    engine::Coverage coverage;
    std::vector<std::pair<std::string, engine::NamespaceStats>> counted;
    try {
      counted = s_->options.cluster->stats({}, coverage);
    } catch (const ServiceError&) {
      coverage = nobody_answered(*s_->options.cluster);  // (NATS down): the list still stands
    }
    std::map<std::string_view, const engine::NamespaceStats*> by_name;
    for (const auto& [name, stats] : counted) by_name.emplace(name, &stats);
    for (auto& info : out) {
      const auto it = by_name.find(info.spec.config.name);
      info.stats = it == by_name.end() ? engine::NamespaceStats{} : *it->second;
      info.coverage = coverage;
    }
  }
  return out;
}

std::vector<Service::CatalogEntry> Service::catalog_entries() const {
  std::vector<CatalogEntry> out;
  for (const auto& e : s_->all_entries()) {
    std::shared_lock lock(e->mu);
    if (e->deleted) continue;
    out.push_back({e->spec, e->config_lsn, e->ns.stats().newest_time});
  }
  return out;
}

std::size_t Service::size() const {
  std::shared_lock lock(s_->map_mu);
  return s_->live_entries();
}

Service::Rendered Service::top_rendered(const std::string& name, const std::optional<engine::ViewSpec>& view, std::optional<std::size_t> k,
                                       std::string_view format, const std::function<std::string(const engine::TopKAnswer&)>& render,
                                       std::optional<RedisKey::Type> redis_type) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (s_->options.cluster) return std::make_shared<const std::string>(render(cluster_mode::top(*s_, name, view, k, std::nullopt, redis_type)));
  auto e = s_->require(name, "namespace");
  require_redis_type(*e, redis_type);
  // The question: the view as asked (none: the namespace's first view, which
  // a patch cannot change without bumping the version), k as asked, format.
  std::string question;
  if (view) question = view->label();  // "window 1h" and "half-life 1h" are different questions
  question += '\0';
  if (k) question += std::to_string(*k);
  question += '\0';
  question += format;
  const auto started = AnswerCache::Clock::now();
  if (auto hit = e->answers.find(question, e->version.load(std::memory_order_acquire), started)) {
    s_->answer_cache_hits.fetch_add(1, std::memory_order_relaxed);
    return hit;
  }
  engine::TopKAnswer answer;
  std::uint64_t version = 0;
  {
    std::shared_lock lock(e->mu);
    version = e->version.load(std::memory_order_relaxed);  // changes only under the exclusive lock
    answer = on_query([&] { return e->ns.top(view, k); });
  }
  s_->answer_cache_misses.fetch_add(1, std::memory_order_relaxed);  // computed (a refused question is not)
  auto body = std::make_shared<const std::string>(render(answer));
  e->answers.store(question, version, started, body);
  return body;
}

engine::PointAnswer Service::count(const std::string& name, std::string_view item, const std::optional<engine::ViewSpec>& view) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (s_->options.cluster) {
    engine::TopKAnswer view_answer;
    const std::string items[] = {std::string(item)};
    auto e = s_->find(name);
    if (e) {
      std::shared_lock lock(e->mu);
      on_query([&] { return e->ns.count(item, view); });  // the item's checks, as a single node makes them
    }
    return cluster_mode::counts(*s_, name, items, view, view_answer).at(0);
  }
  auto e = s_->require(name, "namespace");
  std::shared_lock lock(e->mu);
  return on_query([&] { return e->ns.count(item, view); });
}

engine::TrendingAnswer Service::trending(const std::string& name, std::optional<double> short_half_life, std::optional<double> long_half_life,
                                         std::optional<std::size_t> k, double min_count, std::optional<double> since,
                                         std::optional<RedisKey::Type> redis_type) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (s_->options.cluster) return cluster_mode::trending(*s_, name, short_half_life, long_half_life, k, min_count, redis_type);
  auto e = s_->require(name, "namespace");
  require_redis_type(*e, redis_type);
  std::shared_lock lock(e->mu);
  return on_query([&] { return e->ns.trending(short_half_life, long_half_life, k, min_count, since); });
}

void Service::check_event_items(const std::string& name, std::span<const std::string_view> items,
                                std::optional<RedisKey::Type> redis_type) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  check_batch_size(*s_, items.size());
  auto e = s_->options.cluster ? s_->require_known(name, "namespace") : s_->require(name, "namespace");
  std::shared_lock lock(e->mu);
  if (e->deleted) throw deleted_namespace(e->name);
  require_redis_type(*e, redis_type);
  for (std::size_t i = 0; i < items.size(); ++i) {
    // (A valid weight and time: only the item can be wrong.)
    if (const auto problem = engine::check_event(engine::Event{items[i], 0, 1}, e->ns.config())) {
      throw invalid_event(i, {}, problem->field, problem->message);
    }
  }
}

std::vector<engine::PointAnswer> Service::counts(const std::string& name, std::span<const std::string> items,
                                                 const std::optional<engine::ViewSpec>& view, engine::TopKAnswer& view_answer,
                                                 std::optional<double> as_of, std::optional<RedisKey::Type> redis_type) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (items.size() > s_->options.limits.max_batch_events) {
    throw ServiceError(ErrorKind::too_large, "batch_too_large",
                       "item_ids: more than " + std::to_string(s_->options.limits.max_batch_events) + " ids (--max-batch-events)");
  }
  if (s_->options.cluster) return cluster_mode::counts(*s_, name, items, view, view_answer, as_of, redis_type);
  auto e = s_->require(name, "namespace");
  std::vector<engine::PointAnswer> answers;
  answers.reserve(items.size());
  {
    std::shared_lock lock(e->mu);
    require_redis_type(*e, redis_type);
    service::check_item_ids(e->ns.config(), items);
    if (!as_of) {
      // One "now" for every item (and one reading of an exact view).
      answers = on_query([&] { return e->ns.counts(items, view); });
      if (answers.empty()) view_answer = on_query([&] { return e->ns.top(view, 1); });
    }
  }
  // As of a past time: the helpers lock the entry themselves and read
  // history after releasing it.
  if (as_of) {
    answers = on_query([&] { return points_as_of(*s_, *e, items, view, *as_of); });
    if (answers.empty()) view_answer = on_query([&] { return top_as_of(*s_, *e, view, 1, *as_of); });
  }
  if (!answers.empty()) {
    const auto& first = answers.front();
    view_answer.view = first.view;
    view_answer.as_of = first.as_of;
    view_answer.window_start = first.window_start;
    view_answer.window_end = first.window_end;
    view_answer.granularity = first.granularity;
    view_answer.source = first.source;
    view_answer.accuracy = first.accuracy;
  }
  return answers;
}

ServiceMetrics Service::metrics() const {
  ServiceMetrics m;
  {
    std::lock_guard lock(s_->metrics_mu);
    m = s_->counters;
  }
  m.memory_budget = s_->options.limits.max_memory;
  // /metrics is served while recovery runs: the log, the keys and the
  // namespaces are the recovery thread's until it publishes them.
  if (!s_->recovered.load(std::memory_order_acquire)) return m;
  for (const auto& e : s_->all_entries()) {
    NamespaceMetrics row;
    std::shared_lock lock(e->mu);
    row.name = e->name;
    row.stats = e->ns.stats();
    row.ingest_bytes = e->ingest_bytes.load();
    if (const auto* d = e->ns.hot_keys()) {
      row.hot_key_detection = true;
      row.hot_keys = d->hot();
    }
    row.turned_hot = e->turned_hot.load();
    row.cooled = e->cooled.load();
    m.namespaces.push_back(std::move(row));
  }
  m.persistent = s_->wal != nullptr;
  if (s_->wal) m.log = s_->wal->stats();
  m.idempotency_keys = s_->keys.size();
  m.idempotent_replays = s_->idempotent_replays;
  m.persist_failures = s_->persist_failures;
  m.overloaded = s_->overloaded;
  m.answer_cache_hits = s_->answer_cache_hits;
  m.answer_cache_misses = s_->answer_cache_misses;
  m.memory_reserved = s_->reserved;
  m.hot_key_streams = s_->hot_key_streams;
  m.distributions = distributions();
  m.distribution_bins = s_->distribution_bins;
  m.distribution_increments = s_->distribution_increments;
  m.distributions_expired = s_->distributions_expired;
  m.history = s_->history != nullptr;  // history_bytes: as of the last pass (a scrape never waits on SQLite)
  return m;
}

}  // namespace ebb::service
