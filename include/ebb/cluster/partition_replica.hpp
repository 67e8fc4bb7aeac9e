#pragma once
// One partition as its owner holds it: the namespaces' counts of the items
// that hash to it, in a service of its own (no log, no data directory),
// fed from JetStream in the log's order and answering the partition's
// queries (docs/cluster.md).
//
// The order: the commit subject, read from the start. A namespace change
// applies as it comes; a commit applies this partition's part of its batch,
// read from the partition's subject by the stream sequence the commit
// names. A part whose commit never comes (its publisher died between the
// parts and the commit; the client got no acknowledgement) is never
// counted. Every record applies at the commit subject's sequence, so every
// replica of a partition, and every replay, counts the same records in the
// same order.
//
// With a data directory it checkpoints its service there with the commit
// sequence the states include, and a restart resumes after it.
#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "ebb/cluster/cluster_layout.hpp"
#include "ebb/cluster/gap_guard.hpp"
#include "ebb/cluster/message_chunks.hpp"
#include "ebb/cluster/nats_client.hpp"
#include "ebb/cluster/shared_checkpoints.hpp"
#include "ebb/service/service.hpp"

namespace ebb::cluster {

class PartitionReplica {
 public:
  // Checkpoints shared through JetStream (shared_checkpoints.hpp): the
  // newest, when newer than the data directory's, is where the replica
  // starts; its own are uploaded every `interval` and when it stops (with
  // an interval of 0, never).
  struct Sharing {
    std::int64_t stream_created_ns = 0;
    std::string node_id;
    std::chrono::steady_clock::duration interval{};
    std::chrono::milliseconds retention{0};  // --nats-retention (0: the stream drops nothing; else the replica checks it is not left behind)
  };

  // Starts following the log and answering queries on the partition's
  // subject. `options` are the partitions' service options (limits); with
  // a data_dir, the replica resumes from its newest checkpoint there and
  // checkpoints every checkpoint_interval and when it stops (checkpoints
  // it cannot use or write are logged, and the partition served from
  // memory). Throws NatsError.
  // `chunks`: the node's budget for chunked questions (none: its own).
  PartitionReplica(NatsClient& client, const ClusterLayout& layout, std::uint32_t partition, service::ServiceOptions options,
                   std::shared_ptr<spdlog::logger> log, std::shared_ptr<ChunkBudget> chunks = nullptr,
                   std::optional<Sharing> sharing = std::nullopt);
  ~PartitionReplica();  // stops
  PartitionReplica(const PartitionReplica&) = delete;
  PartitionReplica& operator=(const PartitionReplica&) = delete;

  std::uint32_t partition() const noexcept { return partition_; }
  // The commit subject's sequence applied so far.
  std::uint64_t position() const noexcept { return position_.load(std::memory_order_acquire); }
  // Caught up with the log as it stood when this replica started.
  bool caught_up() const noexcept { return caught_up_.load(std::memory_order_acquire); }
  // It fell behind the stream's start (retention dropped records it still
  // needed): it counts and answers no more, and is to be taken again.
  bool gapped() const noexcept { return gapped_.load(std::memory_order_acquire); }
  // Waits until position() >= p or the time passes; true when reached.
  bool wait_for(std::uint64_t p, std::chrono::milliseconds wait) const;
  // The encoded answer (cluster_records.hpp) to an encoded question, as
  // the partition's subscription sends it back: errors are in the answer.
  // A node asks its own partitions so, on the asking thread, with no
  // round trip through NATS (any thread; queries run beside the applying);
  // `deadline` then bounds the wait for the question's log position too
  // (the asker's, over all its partitions).
  std::string reply(std::string_view question,
                    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

 private:
  // Makes service_ from the newest usable checkpoint in options.data_dir
  // (else empty, in memory: checkpoints_ false); returns the log position
  // it includes.
  std::uint64_t open_service(const service::ServiceOptions& options);
  // The newest shared checkpoint past `own` (the directory's), copied in
  // and loaded; the position the service then includes.
  std::uint64_t take_shared(const service::ServiceOptions& options, std::uint64_t own);
  void follow();
  // True (and gapped) when the stream no longer holds sequence `needed`.
  bool behind_stream_start(std::uint64_t needed);
  // Applies one record of the commit subject at its sequence: false when
  // stopping left it unapplied. Throws std::bad_alloc (then nothing is
  // skipped: the caller applies it again); every other failure is the
  // record's, logged and skipped by every replica alike.
  bool apply(const MsgMeta& meta, std::string_view payload);
  // On the follower's thread (or once it has stopped): a checkpoint of the
  // position reached, when the interval has passed (or `now`); then, on the
  // follower's thread, share().
  void checkpoint(bool now);
  // On the follower's thread: wakes the uploader when a checkpoint newer
  // than the last uploaded is there and the sharing interval has passed.
  // The upload itself (reading the files, then chunks and head through
  // JetStream: seconds for a large partition) runs on the uploader's
  // thread, so the partition goes on counting and answering meanwhile.
  void share();
  void upload_loop();
  void stop_uploader();  // (joins it: the upload under way ends first)
  // Uploads the data directory's newest checkpoint when it is newer than
  // the last uploaded (on the uploader's thread, or once it has stopped).
  void upload_newest();
  // The hot-key detectors every hot_key_interval, the expiry of idle
  // distributions every distribution_expire_interval (on the applying thread).
  void housekeeping();
  // The part at stream sequence `seq` of this partition's subject (nullptr
  // when it cannot be found: retention dropped it).
  MsgPtr take_part(std::uint64_t seq, std::int64_t commit_time_ns);
  void answer(natsMsg* request);
  ChunkAssembler request_chunks_;  // on the queries' subscription thread only
  static void on_request(natsConnection*, natsSubscription*, natsMsg* msg, void* closure);

  NatsClient& client_;
  const ClusterLayout layout_;
  const std::uint32_t partition_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<service::Service> service_;
  std::atomic<std::uint64_t> position_{0};
  std::atomic<bool> caught_up_{false};
  std::atomic<bool> gapped_{false};
  std::uint64_t start_target_ = 0;
  bool checkpoints_ = false;  // set before the follower starts
  std::optional<std::filesystem::path> data_dir_;
  std::unique_ptr<SharedCheckpoints> shared_;  // none: not shared
  std::chrono::steady_clock::duration share_interval_{};
  std::chrono::steady_clock::time_point last_share_;
  std::atomic<std::uint64_t> shared_position_{0};  // of the newest checkpoint uploaded (written by the uploader)
  std::atomic<bool> upload_failed_{false};          // the last upload attempt failed
  GapGuard gaps_;                      // Sharing::retention (the follower's)
  const std::chrono::steady_clock::duration checkpoint_interval_;
  std::uint64_t checkpointed_ = 0;  // the position of the newest checkpoint
  std::chrono::steady_clock::time_point last_checkpoint_;
  const double hot_key_interval_, audit_interval_, expire_interval_;  // seconds
  std::chrono::steady_clock::time_point last_hot_keys_, last_expiry_, last_audit_;
  bool history_started_ = false;  // snapshots begin once the partition has caught up (never of a replay's midway state)
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable moved_;
  SubscriptionPtr commits_, parts_;
  std::unique_ptr<AsyncSubscription> queries_;
  std::uint64_t parts_read_ = 0;  // the newest part sequence read
  std::chrono::steady_clock::time_point last_parts_fetch_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_parts_data_ = last_parts_fetch_;  // the last fetch that brought parts
  std::map<std::uint64_t, MsgPtr> parts_ahead_;  // parts read before their commit (or with none)
  std::thread follower_;
  std::mutex upload_mu_;
  std::condition_variable upload_cv_;
  bool upload_wanted_ = false, upload_stop_ = false;  // under upload_mu_
  bool uploads_ = false;                              // shares checkpoints on an interval (and when it stops)
  std::thread uploader_;                              // with uploads_
};

}  // namespace ebb::cluster
