// Checkpoints: every namespace's state with the log position it includes,
// written incrementally (a namespace that did not change keeps its file).
#include <chrono>

#include "ebb/core/clock.hpp"
#include "service_state.hpp"

namespace ebb::service {

std::size_t Service::checkpoint() {
  State& s = *s_;
  if (!s.store || !s.wal || !s.recovered) return 0;
  std::lock_guard pass(s.checkpoint_mu);
  // Every record up to `start` is in the state captured below for its
  // namespace: it was logged and counted under that namespace's lock,
  // which the capture takes after reading `start`.
  return s.write_checkpoint(s.wal->last_lsn());
}

std::size_t Service::checkpoint_at(std::uint64_t position) {
  State& s = *s_;
  if (!s.store || !s.options.external_log || !s.recovered) return 0;
  std::lock_guard pass(s.checkpoint_mu);
  return s.write_checkpoint(position);
}

std::size_t Service::State::write_checkpoint(std::uint64_t start_lsn) {
  State& s = *this;
  const auto t0 = std::chrono::steady_clock::now();
  storage::Manifest m;
  m.start_lsn = start_lsn;
  m.written_at = wall_clock_now();
  std::map<std::string, const storage::ManifestNamespace*> previous;
  for (const auto& n : s.last_manifest.namespaces) previous.emplace(n.name, &n);
  std::map<std::string, const storage::ManifestPart*> previous_parts;
  for (const auto& p : s.last_manifest.parts) previous_parts.emplace(p.name, &p);

  const std::vector<EntryPtr> entries = s.all_entries();
  std::size_t written = 0;
  std::uint64_t bytes = 0;
  try {
    for (const auto& e : entries) {
      storage::ManifestNamespace n;
      n.name = e->name;
      std::string blob;
      std::function<std::string()> frozen;
      {
        std::shared_lock lock(e->mu);
        if (e->deleted) continue;
        n.config_json = write_namespace_spec(e->spec, true);
        n.state_lsn = e->applied_lsn;
        n.config_lsn = e->config_lsn;
        auto it = previous.find(e->name);
        // LSNs are unique: the same LSN is the same incarnation, unchanged.
        if (it != previous.end() && it->second->state_lsn == n.state_lsn) {
          n.state_file = it->second->state_file;
        } else {
          frozen = e->ns.freeze_state();  // cheap: written out below, after the lock
        }
      }
      if (frozen) {
        blob = frozen();
        frozen = nullptr;  // the shared buckets: ingest stops copying them before the write below
      }
      if (n.state_file.empty()) {
        n.state_file = s.store->write_state(n.name, n.state_lsn, blob);
        ++written;
        bytes += blob.size();
      }
      m.namespaces.push_back(std::move(n));
    }
    // The distributions' shards, the same way. A shard holding nothing is
    // left out: recovery starts it empty and replays what came after the
    // manifest's start (what it held before that was dropped as idle).
    for (std::size_t i = 0; i < s.distribution_shards.size(); ++i) {
      DistributionShard& shard = *s.distribution_shards[i];
      storage::ManifestPart part;
      part.name = distribution_part_name(i);
      std::string blob;
      {
        // Serialised under the shard's lock (1/16 of the distributions:
        // about 60 ms for a million distributions of 20 bins).
        std::lock_guard lock(shard.mu);
        if (shard.store.size() == 0) continue;
        part.state_lsn = shard.applied_lsn;
        auto it = previous_parts.find(part.name);
        if (it != previous_parts.end() && it->second->state_lsn == part.state_lsn) {
          part.state_file = it->second->state_file;
        } else {
          blob = shard.store.serialize_state();
        }
      }
      if (part.state_file.empty()) {
        part.state_file = s.store->write_part_state(part.name, part.state_lsn, blob);
        ++written;
        bytes += blob.size();
      }
      m.parts.push_back(std::move(part));
    }
    // Nothing logged since the last checkpoint (an idle server): it stands.
    // (Every change, keys included, comes with a log record.)
    if (m.start_lsn == s.last_manifest.start_lsn && written == 0 &&
        m.namespaces.size() == s.last_manifest.namespaces.size() && m.parts.size() == s.last_manifest.parts.size()) {
      return 0;
    }
    m.keys = s.keys.snapshot(m.written_at);
    // The states and keys above may include records the log has not made
    // durable yet (--fsync interval/off, or a batch still waiting for its
    // group commit): sync first, so a checkpoint never claims a record a
    // power loss could take from the log (its LSN would then be reused).
    if (s.wal) s.wal->sync();
    const std::uint64_t keep_from = s.store->commit(m);
    s.last_manifest = std::move(m);
    if (s.wal) s.wal->release(keep_from);
  } catch (const std::exception& e) {
    std::lock_guard lock(s.metrics_mu);
    ++s.counters.checkpoints_failed;
    s.checkpoint_error = e.what();
    throw;
  }
  std::lock_guard lock(s.metrics_mu);
  ++s.counters.checkpoints_ok;
  s.checkpoint_error.clear();
  s.counters.last_checkpoint_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.counters.last_checkpoint_bytes = bytes;
  s.counters.checkpoint_bytes_total += bytes;
  return written;
}

void Service::start_checkpoints() {
  State& s = *s_;
  if (!s.store || s.checkpointer.joinable()) return;
  s.checkpointer = s.every(s.options.checkpoint_interval, "checkpoint failed (writes are still logged)", [this, &s] {
    const auto n = checkpoint();
    if (n > 0) s.log->debug("checkpoint wrote={}", n);
  });
}

std::thread Service::State::every(double seconds, const char* what, std::function<void()> pass) {
  return std::thread([this, seconds, what, pass = std::move(pass)] {
    std::unique_lock lock(thread_mu);
    const auto interval = std::chrono::duration<double>(seconds);
    while (!stop) {
      thread_cv.wait_for(lock, interval, [this] { return stop; });
      if (stop) break;
      lock.unlock();
      try {
        pass();
      } catch (const std::exception& e) {
        log->error("{}: {}", what, e.what());
      }
      lock.lock();
    }
  });
}

void Service::shutdown() {
  State& s = *s_;
  {
    std::lock_guard lock(s.thread_mu);
    s.stop = true;
  }
  s.thread_cv.notify_all();
  if (s.checkpointer.joinable()) s.checkpointer.join();
  if (s.hot_key_evaluator.joinable()) s.hot_key_evaluator.join();
  if (s.anomaly_evaluator.joinable()) s.anomaly_evaluator.join();
  if (s.auditor.joinable()) s.auditor.join();
  if (s.distribution_expirer.joinable()) s.distribution_expirer.join();
  if (s.historian.joinable()) {
    s.historian.join();
    // The history runs up to the stop.
    try {
      snapshot_history();
    } catch (const std::exception& e) {
      s.log->error("last history snapshot failed: {}", e.what());
    }
  }
  if (!s.wal) return;
  // The log first: what was acknowledged stays recoverable even if the
  // checkpoint below fails (a full disk).
  s.wal->sync();
  checkpoint();
}

}  // namespace ebb::service
