#pragma once
// What the service reports to /metrics (docs/api.md lists each metric).
#include <cstdint>
#include <string>
#include <vector>

#include "ebb/engine/namespace.hpp"
#include "ebb/storage/log_stats.hpp"

namespace ebb::service {

struct NamespaceMetrics {
  std::string name;
  engine::NamespaceStats stats;
  std::uint64_t ingest_bytes = 0;
  // Hot keys, when detection is on: the keys hot now (labelled by a hash
  // of the key), and how many turned hot / cooled since start.
  bool hot_key_detection = false;
  std::vector<engine::HotKey> hot_keys;
  std::uint64_t turned_hot = 0, cooled = 0;
};

struct ServiceMetrics {
  std::vector<NamespaceMetrics> namespaces;
  storage::LogStats log;
  bool persistent = false;
  std::uint64_t checkpoints_ok = 0, checkpoints_failed = 0;
  double last_checkpoint_seconds = 0;
  std::uint64_t last_checkpoint_bytes = 0, checkpoint_bytes_total = 0;
  double recovery_seconds = 0;
  std::uint64_t recovery_records = 0;
  std::uint64_t recovery_records_skipped = 0;  // replayed records that no longer applied
  std::uint64_t truncated_tails = 0;
  std::uint64_t idempotency_keys = 0, idempotent_replays = 0;
  std::uint64_t persist_failures = 0;  // writes refused because the log could not take them
  std::uint64_t overloaded = 0;        // writes refused with 429
  std::uint64_t answer_cache_hits = 0, answer_cache_misses = 0;  // top-K answers reused / computed
  std::uint64_t memory_reserved = 0, memory_budget = 0;
  std::uint64_t hot_key_streams = 0;  // open GET /hot-keys/stream subscriptions
  // Distributions: held now, their bins, increments counted and idle
  // distributions dropped since start.
  std::uint64_t distributions = 0, distribution_bins = 0, distribution_increments = 0, distributions_expired = 0;
  // History: snapshots written; passes that wrote, failed, or were skipped
  // for want of disk space; the database's bytes; whether it is on.
  bool history = false;
  std::uint64_t history_snapshots = 0;
  std::uint64_t history_passes_ok = 0, history_passes_failed = 0, history_passes_low_disk = 0;
  std::uint64_t history_bytes = 0;
};

}  // namespace ebb::service
