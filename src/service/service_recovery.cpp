// Recovery: the newest usable checkpoint, then every log record after it.
#include <algorithm>
#include <chrono>

#include "ebb/core/clock.hpp"
#include "ebb/core/error.hpp"
#include "ebb/service/log_records.hpp"
#include "service_state.hpp"

namespace ebb::service {
namespace {

using Entries = std::map<std::string, EntryPtr, std::less<>>;

EntryPtr load_namespace(const std::string& config_json, const ServiceOptions& options, std::uint64_t lsn, const std::string& where) {
  NamespaceSpec spec;
  try {
    spec = parse_namespace_spec(config_json, options.limits, SpecSource::stored);
  } catch (const std::exception& e) {
    throw std::runtime_error("the namespace configuration in " + where + " is damaged: " + e.what());
  }
  const auto planned = Service::State::planned_bytes(spec.config);
  return std::make_shared<NamespaceEntry>(std::move(spec), lsn, planned, options.answer_cache_ttl, options.sketch_share);
}

// Applies one log record to the namespaces being rebuilt. A record already
// in a namespace's checkpointed state (its applied LSN is not older) is
// skipped, so replay may start before some states' LSNs.
void replay_record(Service::State& s, Entries& entries, std::uint64_t lsn, std::string_view payload, std::uint64_t& errors) {
  switch (record_type(payload)) {
    case RecordType::batch: {
      const BatchRecord r = decode_batch(payload);
      for (const auto& g : r.groups) {
        auto it = entries.find(g.ns);
        if (it == entries.end() || it->second->applied_lsn >= lsn) continue;  // deleted later, or already counted
        auto& e = *it->second;
        try {
          e.ns.stage_logged(g.events, r.received_at);
          e.ns.apply_staged();
        } catch (const BatchError& err) {
          // It was accepted under the same rules and clock reading: a
          // record that no longer applies means the rules changed.
          ++errors;
          s.log->error("replay: record {} for namespace '{}' no longer applies ({}); skipped", lsn, e.name, err.what());
        }
        e.applied_lsn = lsn;
      }
      if (r.key) s.keys.insert(r.key->key, r.key->body_hash, lsn, r.received_at);
      break;
    }
    case RecordType::create: {
      const AdminRecord r = decode_admin(payload);
      auto entry = load_namespace(std::string(r.config_json), s.options, lsn, "log record " + std::to_string(lsn));
      auto it = entries.find(entry->name);
      if (it != entries.end()) {
        if (it->second->applied_lsn < lsn) s.log->warn("replay: record {} creates namespace '{}' which exists; kept the existing one", lsn, entry->name);
        break;
      }
      entries.emplace(entry->name, std::move(entry));
      break;
    }
    case RecordType::patch: {
      const AdminRecord r = decode_admin(payload);
      auto it = entries.find(r.name);
      if (it == entries.end() || it->second->applied_lsn >= lsn) break;
      // Only the configuration: building a namespace to read it would
      // allocate all its sketches.
      NamespaceSpec next;
      try {
        next = parse_namespace_spec(r.config_json, s.options.limits, SpecSource::stored);
      } catch (const std::exception& err) {
        throw std::runtime_error("the namespace configuration in log record " + std::to_string(lsn) + " is damaged: " + err.what());
      }
      auto& e = *it->second;
      // A patch keeps the Redis type (as checked_patch does live): a cluster's
      // patch of a key's earlier life, published while another node deleted
      // it and made it again as the other type (or over HTTP), must not make
      // the new one claim the old type.
      next.redis = e.spec.redis;
      e.ns.reconfigure(engine::partition_share(next.config, s.options.sketch_share));
      e.reserved_bytes = Service::State::planned_bytes(next.config);
      e.spec = next;
      e.applied_lsn = lsn;
      e.config_lsn = lsn;
      break;
    }
    case RecordType::remove: {
      const AdminRecord r = decode_admin(payload);
      auto it = entries.find(r.name);
      if (it != entries.end() && it->second->applied_lsn < lsn) entries.erase(it);
      break;
    }
    case RecordType::state: {
      const AdminRecord r = decode_admin(payload);
      auto it = entries.find(r.name);
      if (it == entries.end() || it->second->applied_lsn >= lsn) break;
      auto& e = *it->second;
      try {
        e.ns.restore_state(r.state);
      } catch (const FormatError& err) {
        // Written from this namespace's configuration at this point of the
        // log (a resize is a record of its own, before or after): a state
        // that does not fit is damage.
        ++errors;
        s.log->error("replay: record {} for namespace '{}' holds a state that does not fit it ({}); skipped", lsn, e.name, err.what());
      }
      e.applied_lsn = lsn;
      break;
    }
    case RecordType::distribution_incr: {
      const DistributionIncrRecord r = decode_distribution_incr(payload);
      DistributionShard& shard = s.shard_of(r.distribution);
      if (shard.applied_lsn >= lsn) break;  // in the shard's checkpointed state
      try {
        // Accepted under the limits of its time: replayed under none.
        shard.store.incr(r.distribution, r.fields, r.n, r.received_at, r.rate, engine::DistributionStore::Limits::ignore, r.decay);
      } catch (const InvalidArgument& err) {
        // Accepted under this server's limits then; smaller ones now.
        ++errors;
        s.log->error("replay: record {} for distribution '{}' no longer applies ({}); skipped", lsn, r.distribution, err.what());
      }
      shard.applied_lsn = lsn;
      break;
    }
  }
}

// The distributions' shards a manifest names (all of them reset first: a
// shard it leaves out held nothing). Throws naming the part.
void reset_distributions(Service::State& s) {
  for (auto& shard : s.distribution_shards) {
    shard->store = engine::DistributionStore(s.options.distributions);
    shard->applied_lsn = 0;
  }
}

void restore_distributions(Service::State& s, const storage::Manifest& m, const std::filesystem::path& path) {
  reset_distributions(s);
  for (const auto& p : m.parts) {
    std::size_t index = kDistributionShards;
    for (std::size_t i = 0; i < kDistributionShards; ++i) {
      if (p.name == distribution_part_name(i)) index = i;
    }
    if (index == kDistributionShards) throw std::runtime_error(path.string() + " names part '" + p.name + "', which this build does not know");
    auto& shard = *s.distribution_shards[index];
    if (shard.applied_lsn != 0 || shard.store.size() != 0) throw std::runtime_error(path.string() + " names part '" + p.name + "' twice");
    try {
      shard.store.restore_state(s.store->read_state(p.state_file));
    } catch (const std::exception& e) {
      throw std::runtime_error("state " + p.state_file + " of " + p.name + ": " + e.what());
    }
    shard.applied_lsn = p.state_lsn;
  }
}

}  // namespace

std::optional<std::uint64_t> Service::config_revision(std::string_view name) const {
  auto e = s_->find(name);
  if (!e) return std::nullopt;
  std::shared_lock lock(e->mu);
  return e->config_lsn;
}

bool Service::State::configs_hold(const ConfigRevisions& configs) const {
  for (const auto& [name, revision] : configs) {
    EntryPtr e = find(name);
    if (!e) return false;
    std::shared_lock lock(e->mu);
    if (e->deleted || e->config_lsn != revision) return false;
  }
  return true;
}

void Service::advance_event_clocks(std::uint64_t lsn, std::span<const EventClockCheck> clocks, const ConfigRevisions& configs) {
  if (!s_->configs_hold(configs)) return;  // its batch did not count either
  for (const auto& clock : clocks) {
    EntryPtr e = s_->find(clock.ns);
    if (!e) continue;
    std::unique_lock lock(e->mu);
    if (e->deleted) continue;
    e->ns.advance_newest(clock.after);
    // The state changed at this position: the next checkpoint writes it
    // (it reuses a state whose position did not move).
    e->applied_lsn = std::max(e->applied_lsn, lsn);
    e->changed();
  }
}

void Service::remember_key(std::uint64_t lsn, std::string_view key, std::uint64_t body_hash, double at, const ConfigRevisions& configs) {
  if (!s_->configs_hold(configs)) return;  // it did not count: a retry counts
  std::lock_guard lock(s_->keys.mutex());
  s_->keys.insert(key, body_hash, lsn, at);
}

std::vector<storage::ManifestKey> Service::idempotency_keys() const { return s_->keys.snapshot(wall_clock_now()); }

bool Service::apply_record(std::uint64_t lsn, std::string_view payload, const ConfigRevisions* configs, std::span<const EventClockCheck> clocks) {
  State& s = *s_;
  std::uint64_t errors = 0;
  const RecordType type = record_type(payload);
  if (type == RecordType::batch) {
    // A cluster part counts only if every namespace of its batch is still
    // at the configuration its commit names: a batch stays all or nothing
    // across namespaces, and every replica judges it at the same point.
    if (configs && !s.configs_hold(*configs)) {
      s.log->warn("record {}: a namespace of its batch changed since the batch was checked; the batch is not counted", lsn);
      return true;
    }
    // Each group under its namespace's lock alone, as ingest counts it.
    const BatchRecord r = decode_batch(payload);
    for (const auto& g : r.groups) {
      EntryPtr e = s.find(g.ns);
      if (!e) continue;  // deleted before this record
      std::unique_lock lock(e->mu);
      if (e->deleted || e->applied_lsn >= lsn) continue;
      if (configs && !configs->contains(g.ns)) continue;  // (a commit names every namespace of its batch)
      try {
        const auto clock = std::find_if(clocks.begin(), clocks.end(), [&](const EventClockCheck& c) { return c.ns == g.ns; });
        e->ns.stage_logged(g.events, r.received_at, clock != clocks.end() ? std::optional<double>(clock->before) : std::nullopt);
        e->ns.apply_staged();
      } catch (const BatchError& err) {
        ++errors;
        s.log->error("record {} for namespace '{}' does not apply ({}); skipped", lsn, e->name, err.what());
      }
      e->applied_lsn = lsn;
      e->changed();
    }
    return errors == 0;
  }
  if (type == RecordType::distribution_incr) {
    DistributionShard& shard = s.shard_of(decode_distribution_incr(payload).distribution);
    std::lock_guard lock(shard.mu);
    const std::uint64_t before = shard.store.bins();
    Entries none;
    replay_record(s, none, lsn, payload, errors);
    s.distribution_bins += shard.store.bins() - before;  // (a cluster partition's share is checked against it; modulo 2^64: may go down)
    return errors == 0;
  }
  // Namespace changes: the map and the namespace named, exclusively.
  std::unique_lock map_lock(s.map_mu);
  const AdminRecord r = decode_admin(payload);
  EntryPtr named;
  if (auto it = s.entries.find(r.name); !r.name.empty() && it != s.entries.end()) named = it->second;
  std::unique_lock<std::shared_mutex> ns_lock;
  if (named) ns_lock = std::unique_lock(named->mu);
  replay_record(s, s.entries, lsn, payload, errors);
  const bool removed = named && !s.entries.contains(r.name);
  if (removed) named->deleted = true;
  if (named) named->changed();
  if (removed && s.history) {
    // A cluster partition's history: a namespace made again under the name
    // starts afresh, as on a single node. The history thread drops the
    // old one at its next pass (masked until then): a drop waits for a
    // pass's SQLite writes, which must not hold up the applying thread.
    ns_lock.unlock();
    map_lock.unlock();
    mark_history_pending(s, std::string(r.name), true);
  }
  return errors == 0;
}

ClusterLink* Service::cluster() const noexcept { return s_->options.cluster.get(); }

RecoveryReport Service::recover() {
  State& s = *s_;
  RecoveryReport report;
  const auto t0 = std::chrono::steady_clock::now();
  if (!s.options.data_dir) {
    s.recovered = true;
    return report;
  }
  s.store = std::make_unique<storage::CheckpointStore>(*s.options.data_dir);
  open_history();
  for (const auto& p : s.store->remove_temporaries()) s.log->warn("removed {} (a write interrupted by a crash)", p.string());
  for (const auto& p : s.store->foreign_files()) s.log->warn("ignoring {}: not a file ebb writes there", p.string());

  Entries entries;
  storage::Manifest base;
  bool have_checkpoint = false;
  for (const auto& path : s.store->manifests()) {
    try {
      base = s.store->read_manifest(path);
      Entries loaded;
      for (const auto& n : base.namespaces) {
        auto entry = load_namespace(n.config_json, s.options, n.state_lsn, path.string());
        entry->config_lsn = n.config_lsn;
        try {
          entry->ns.restore_state(s.store->read_state(n.state_file));
        } catch (const std::exception& e) {
          throw std::runtime_error("state " + n.state_file + " of namespace '" + n.name + "': " + e.what());
        }
        loaded.emplace(n.name, std::move(entry));
      }
      restore_distributions(s, base, path);
      entries = std::move(loaded);
      report.checkpoint = path.string();
      have_checkpoint = true;
      break;
    } catch (const std::exception& e) {
      s.log->error("checkpoint {} cannot be used ({}); trying the one before it", path.string(), e.what());
      reset_distributions(s);
      base = {};
    }
  }
  if (!have_checkpoint && !s.options.external_log) {
    // A data directory from before the log: configurations and states.
    for (auto& legacy : s.store->legacy_namespaces()) {
      NamespaceSpec spec;
      try {
        spec = parse_namespace_spec(legacy.config_json, s.options.limits, SpecSource::stored);
      } catch (const std::exception& e) {
        if (!legacy.state) {  // not a namespace of ours: a stray file
          s.log->warn("ignoring {}: not a namespace configuration ({})", legacy.config_path.string(), e.what());
          continue;
        }
        throw std::runtime_error("cannot load namespace configuration " + legacy.config_path.string() + ": " + e.what());
      }
      if (spec.config.name != legacy.name) {
        if (!legacy.state) {
          s.log->warn("ignoring {}: it names namespace '{}'", legacy.config_path.string(), spec.config.name);
          continue;
        }
        throw std::runtime_error("namespace configuration " + legacy.config_path.string() + " names '" + spec.config.name + "'");
      }
      auto entry = std::make_shared<NamespaceEntry>(spec, 0, State::planned_bytes(spec.config), s.options.answer_cache_ttl);
      if (legacy.state) {
        try {
          entry->ns.restore_state(*legacy.state);
        } catch (const std::exception& e) {
          throw std::runtime_error("cannot restore namespace state " + legacy.state_path.string() + ": " + e.what());
        }
      }
      entries.emplace(legacy.name, std::move(entry));
      ++report.migrated_legacy;
    }
  }
  for (const auto& k : base.keys) s.keys.insert(k.key, k.body_hash, k.lsn, k.received_at);

  // New records must never reuse an LSN a checkpoint already names (a state
  // or a key), even if the log's tail was lost: they would be skipped as
  // already counted at the next replay.
  std::uint64_t newest_named = base.start_lsn;
  for (const auto& n : base.namespaces) newest_named = std::max(newest_named, n.state_lsn);
  for (const auto& p : base.parts) newest_named = std::max(newest_named, p.state_lsn);
  for (const auto& k : base.keys) newest_named = std::max(newest_named, k.lsn);
  std::uint64_t replay_errors = 0;
  storage::LogRecovery log_report;
  if (s.options.external_log) {
    // The log lives elsewhere: its owner replays it from here.
    report.log_position = base.start_lsn;
  } else {
    try {
      s.wal = std::make_unique<storage::SegmentLog>(
          s.store->wal_dir(), s.options.log, base.start_lsn, newest_named + 1,
          [&](std::uint64_t lsn, std::string_view payload) {
            try {
              replay_record(s, entries, lsn, payload, replay_errors);
            } catch (const FormatError& e) {
              // Its checksum held: not damage --repair-log could cut, but a
              // record this build cannot read (a later release's, or a bug).
              throw FormatError("record " + std::to_string(lsn) + " (in the segment whose name is the highest first LSN not above it) passed its checksum but cannot be read by this build (" +
                                e.what() + "): written by a later release of ebb, or a bug; the log was left as it is");
            }
          },
          &log_report);
    } catch (const std::exception& e) {
      throw std::runtime_error("cannot recover the write-ahead log in " + s.store->wal_dir().string() + ": " + e.what());
    }
  }
  if (!log_report.truncation.empty()) s.log->error("the log had a torn or corrupt tail, cut: {}", log_report.truncation);
  s.distribution_bins = 0;
  for (const auto& shard : s.distribution_shards) s.distribution_bins += shard->store.bins();
  if (!log_report.damage.empty()) s.log->warn("{}", log_report.damage);
  for (const auto& [name, e] : entries) {
    s.reserved += e->reserved_bytes;
    if (e->spec.config.max_item_bytes > s.options.limits.max_item_bytes ||
        State::planned_bytes(e->spec.config) > s.options.limits.max_namespace_bytes) {
      s.log->warn("namespace '{}' was created under larger limits than this server's; it loads as it is (limits apply to new requests)", name);
    }
  }
  if (s.options.limits.max_memory != 0 && s.reserved > s.options.limits.max_memory) {
    s.log->warn("the namespaces hold {} MiB, over the --max-memory budget of {} MiB: new namespaces are refused", s.reserved >> 20,
                s.options.limits.max_memory >> 20);
  }
  {
    std::unique_lock lock(s.map_mu);
    s.entries = std::move(entries);
  }
  s.last_manifest = base;
  report.namespaces = size();
  report.records_replayed = log_report.replayed;
  report.records_skipped = replay_errors;
  report.log_bytes = log_report.bytes;
  report.truncation = log_report.truncation;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard lock(s.metrics_mu);
    s.counters.recovery_seconds = report.seconds;
    s.counters.recovery_records = log_report.replayed;
    s.counters.recovery_records_skipped = replay_errors;
    s.counters.truncated_tails = log_report.truncation.empty() ? 0 : 1;
  }
  // (A service fed from a log kept elsewhere has not replayed it yet: its
  // sweep waits for start_history(), once it has caught up.)
  if (!s.options.external_log) sweep_history();
  s.recovered = true;
  if (report.migrated_legacy > 0) {
    // The old layout is read once: its content now lives in a checkpoint.
    checkpoint();
    s.store->remove_legacy();
    s.log->info("migrated {} namespaces from the pre-log layout", report.migrated_legacy);
  }
  return report;
}

}  // namespace ebb::service
