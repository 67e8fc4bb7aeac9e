#pragma once
// The namespaces' configurations in a JetStream key-value bucket
// (<stream>_namespaces; docs/cluster.md), so any NATS client (the `nats`
// CLI, a dashboard, a deploy script) sees the cluster's namespaces without
// asking a node:
//
//   key:   the namespace's name, bytes outside [A-Za-z0-9_-] as =XX (hex)
//   value: {"revision":<sequence>,"config":<its stored configuration>}
//          or, once deleted, {"revision":<sequence>,"deleted":true}
//
// where <sequence> is the commit subject's stream sequence of the create,
// patch or delete. The commit subject stays the one source of truth (it
// orders namespace changes with the batches); this bucket follows it. Every
// node's catalog feeds its mirror the changes that took effect (not a
// create that lost to an earlier one, nor a patch of a deleted namespace),
// and a mirror writes only over an older revision (compare-and-set on the
// entry), so whichever node gets there first, the bucket ends at the
// newest change, even when the node that made it died before mirroring it.
//
// Revisions are sequences of one stream: the key "=stream" (no name
// encodes to it) holds the stream's creation time, and a mirror that finds
// another there (the stream was deleted and made again) empties the bucket
// before mirroring anything.
#include <spdlog/logger.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "ebb/cluster/nats_client.hpp"
#include "ebb/service/service.hpp"

namespace ebb::cluster {

// The bucket key of a namespace name.
std::string namespace_key(std::string_view name);
// The revision in a mirrored value (nullopt: not a value a mirror wrote).
std::optional<std::uint64_t> mirrored_revision(std::string_view value);

class NamespaceMirror {
 public:
  // Opens (or creates) the bucket, emptied if it mirrors another stream
  // than the one made at `stream_created_ns`. Writes on a thread of its
  // own, so the catalog never waits for the bucket. Throws NatsError.
  NamespaceMirror(NatsClient& client, const std::string& bucket, int replicas, std::int64_t stream_created_ns,
                  std::shared_ptr<spdlog::logger> log);
  ~NamespaceMirror();  // finishes the write under way; drops what is still queued
  NamespaceMirror(const NamespaceMirror&) = delete;
  NamespaceMirror& operator=(const NamespaceMirror&) = delete;

  // A log record `catalog` has just applied at `sequence` (on the thread
  // that applies its records): a create, patch or delete that took effect
  // is mirrored; anything else is ignored.
  void applied(std::uint64_t sequence, std::string_view record, const service::Service& catalog);

 private:
  struct Change {
    std::uint64_t revision = 0;
    std::string key, value;
  };
  void run();
  void write(const Change& c);
  bool stopping();

  KvPtr bucket_;
  std::shared_ptr<spdlog::logger> log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Change> queue_;
  bool stop_ = false;  // under mu_
  std::thread writer_;
};

}  // namespace ebb::cluster
