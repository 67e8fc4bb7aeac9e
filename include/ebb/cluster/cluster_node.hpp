#pragma once
// A node of an ebb cluster (ebb serve --nats; docs/cluster.md): the
// service's ClusterLink on NATS JetStream. It
// - publishes accepted batches: one message per partition the batch
//   touches (items by hash), then a commit naming them; acknowledged once
//   JetStream has acknowledged the commit. Message ids make a retried
//   publish count once;
// - publishes namespace changes on the commit subject, in one order with
//   the commits, and keeps the service's catalog following that subject;
// - owns partitions: a heartbeat in a key-value bucket says which nodes
//   live, rendezvous hashing over them says who owns what, and a node
//   hands a partition over once the new owner serves it;
// - answers queries by asking every partition's owner (request/reply on
//   the partition's query subject; the partitions it serves itself, on
//   the asking thread) and merging.
#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ebb/cluster/cluster_layout.hpp"
#include "ebb/cluster/cluster_records.hpp"
#include "ebb/cluster/message_chunks.hpp"
#include "ebb/cluster/namespace_mirror.hpp"
#include "ebb/cluster/nats_client.hpp"
#include "ebb/cluster/partition_replica.hpp"
#include "ebb/cluster/replica_checkpoints.hpp"
#include "ebb/cluster/shared_fan_outs.hpp"
#include "ebb/service/cluster_link.hpp"
#include "ebb/service/service.hpp"

namespace ebb::cluster {

struct ClusterOptions {
  std::vector<std::string> urls;  // nats://host:port each
  std::string node_id;            // unique in the cluster; stable across restarts
  ClusterLayout layout;           // layout.partitions: for a new stream (an existing one keeps its own)
  int replicas = 1;               // JetStream replicas of the stream and the bucket (1 or 3)
  std::chrono::milliseconds query_wait{2000};    // how long an owner may take to catch up and answer
  std::chrono::milliseconds publish_wait{5000};  // per JetStream acknowledgement
  std::size_t publishers = 4;                    // threads publishing batches
  std::chrono::milliseconds heartbeat{1000};
  std::chrono::milliseconds node_ttl{5000};  // a node silent this long is gone: its partitions move
  std::chrono::milliseconds consumer_idle{60'000};  // JetStream drops a reader idle this long (NatsClient::pull_from)
  // Leaving (stop()): how long the node serves its partitions while the
  // others take them over (half of --shutdown-timeout).
  std::chrono::milliseconds hand_over_wait{10'000};
  service::ServiceOptions partition_options;  // the partitions' services (limits; checkpoint_interval)
  // Where the partitions' checkpoints go (replica_checkpoints.hpp); none:
  // in memory only, a restarted node replays its partitions from the start.
  std::optional<std::filesystem::path> checkpoint_dir;
  // How often a partition's owner uploads its newest checkpoint for the
  // next owner (shared_checkpoints.hpp; 0: never; needs checkpoint_dir).
  std::chrono::milliseconds share_interval{60'000};
  // Retention (docs/cluster.md): the stream keeps at least this much of
  // its newest records, and drops what is older and included in every
  // partition's kept shared checkpoints and the catalog's kept snapshots.
  // 0: it keeps everything. A batch whose parts were acknowledged more
  // than half of this before its commit is not committed.
  std::chrono::milliseconds retention{3'600'000};
};

// Keeps a node id to letters, digits, '-', '_' and '=' (what a key-value
// key may hold, less '.', which NATS reads as a token separator); others
// become '_'.
std::string sanitize_node_id(std::string id);

// Who owns each partition among the live `nodes` (the same on every node
// that sees the same members): rendezvous hashing with bounded loads. Each
// (node, partition) pair scores a hash; from the highest score down, a
// partition goes to its node unless that node already holds its share
// (partitions / nodes, and one more for the first partitions % nodes nodes
// to reach it). Every node holds partitions / nodes, rounded down or up,
// and a join moves the new node's share to it and at most about as many
// again between the others (plain rendezvous hashing left a node of three
// with none of 8 partitions).
std::vector<std::string> assign_partitions(std::uint32_t partitions, const std::vector<std::string>& nodes);

class ClusterNode final : public service::ClusterLink {
 public:
  ClusterNode(ClusterOptions options, std::shared_ptr<spdlog::logger> log);
  ~ClusterNode() override;
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // Before start(): the name it joins under.
  void set_node_id(std::string id) { options_.node_id = sanitize_node_id(std::move(id)); }
  // Connects, creates the stream and the bucket unless they exist, follows
  // the commit subject with `catalog` until it has caught up with the log,
  // then joins: heartbeats and takes its partitions. Throws NatsError.
  void start(service::Service& catalog);
  // From any thread: a start() still catching up throws instead (SIGTERM
  // during a long catch-up); stop() does the rest.
  void cancel();
  // Leaves (its heartbeat key deleted, so others take its partitions at
  // once), fails publishes still queued, and stops following.
  void stop();
  // From any thread, before stop(): its hand-over ends by `t` at the
  // latest (SIGTERM + --shutdown-timeout: what an orchestrator allows).
  void leave_by(std::chrono::steady_clock::time_point t) noexcept { leave_by_ = t.time_since_epoch().count(); }

  std::uint32_t partitions() const noexcept override { return layout_.partitions; }
  std::set<std::uint32_t> serving() const;

  // service::ClusterLink
  std::uint64_t publish_batch(const service::BatchRecord& record, const std::vector<std::vector<std::uint64_t>>& hashes,
                              const std::map<std::string, std::uint64_t, std::less<>>& configs, const std::string& batch_id,
                              std::vector<service::EventClockCheck> clocks = {}) override;
  std::uint64_t publish_record(std::uint64_t key_hash, std::string payload, const std::string& batch_id) override;
  void when_published(std::uint64_t ticket, std::function<void(const std::string& error)> done) override;
  std::uint64_t publish_admin(std::string_view payload) override;
  std::uint64_t publish_merge(const std::string& destination, std::span<const std::string> sources, std::span<const double> weights,
                              const std::map<std::string, std::uint64_t, std::less<>>& configs) override;
  bool catch_up() override;
  engine::TopKAnswer top(const std::string& ns, const std::optional<engine::ViewSpec>& view, std::optional<std::size_t> k,
                         std::optional<double> as_of = std::nullopt) override;
  service::ClusterPoints counts(const std::string& ns, std::span<const std::string> items, const std::optional<engine::ViewSpec>& view,
                                std::optional<double> as_of = std::nullopt) override;
  engine::TrendingAnswer trending(const std::string& ns, std::optional<double> short_half_life, std::optional<double> long_half_life,
                                  std::size_t k, double min_count) override;
  service::HotKeysAnswer hot_keys(const std::string& ns, std::span<const std::string> watch = {}) override;
  std::optional<engine::DistributionAnswer> distribution(std::string_view name, std::span<const std::string_view> fields, double now,
                                                         std::optional<double> rate, std::optional<std::size_t> most_probable) override;
  void check_incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at) override;
  std::uint64_t distributions() override;
  std::vector<std::pair<std::string, engine::NamespaceStats>> stats(std::span<const std::string> names, engine::Coverage& coverage) override;
  service::HistorySeries history(const std::string& ns, std::string_view item, const std::optional<engine::ViewSpec>& view, double from,
                                 double to, std::size_t max_points) override;
  std::string status() const override;
  std::string failure() const override;

 private:
  struct Job {
    std::uint64_t ticket = 0;
    std::string batch_id;
    std::vector<std::pair<std::uint32_t, std::string>> parts;  // partition, encoded batch record
    std::vector<std::pair<std::string, std::uint64_t>> configs;
    std::vector<service::EventClockCheck> clocks;
    std::optional<CommitRecord::Key> key;  // the batch's Idempotency-Key, for every node's key table
  };
  struct Ticket {
    bool done = false;
    std::string error;
    std::function<void(const std::string&)> callback;
  };

  void follow_catalog();
  bool wait_catalog(std::uint64_t position, std::chrono::milliseconds wait);
  std::uint64_t enqueue(Job job);  // a ticket; the publishers take it from here
  void publish_loop();
  void publish_job(const Job& job, AsyncPublisher& parts);
  void finish(std::uint64_t ticket, const std::string& error);
  void heartbeat_loop();
  // Every share_interval on the node serving partition 0: uploads the
  // catalog's newest snapshot, then drops the stream below what every
  // partition's and the catalog's kept shared checkpoints include.
  void retention_loop();
  void retain();
  // At start: the newest shared snapshot of the catalog, loaded (false: none).
  bool load_catalog_snapshot(std::uint64_t target);
  void ownership_loop();  // rebalance()s to the members each heartbeat saw
  void rebalance(const std::map<std::string, std::set<std::uint32_t>>& nodes);
  // Sends each (partition, request) and gathers the replies that come
  // before the deadline (a partition nobody serves answers at once with
  // "no responders"), in partition order. The partitions this node serves
  // (caught up, not gapped) answer on this thread, within the same deadline.
  std::vector<QueryReply> ask(const std::vector<std::pair<std::uint32_t, std::string>>& requests, QueryRequest::Kind kind,
                              std::vector<std::uint32_t>& missing, std::optional<std::chrono::milliseconds> wait = std::nullopt);
  std::uint64_t log_position();
  // ServiceError unavailable "catalog_gapped" (catalog_gapped_): before anything is written.
  void refuse_if_catalog_gapped() const;
  // What one message to the cluster's NATS servers may carry (chunk_bytes).
  std::size_t message_limit() const noexcept;
  // ServiceError too_large when the job's commit would not fit one message.
  void check_commit_size(const Job& job) const;
  // The live nodes and the partitions each serves (the heartbeat bucket);
  // notes which run an older build (older_nodes).
  std::map<std::string, std::set<std::uint32_t>> read_members();
  // The live nodes whose build is below `level` (ClusterLink's levels;
  // this build's is kProtocolLevel, cluster_node.cpp), comma-separated
  // ("": none).
  std::string older_nodes(int level = kLevelAudit) const override;
  // stop(): waits (hand_over_wait at most) until other nodes serve every
  // partition this one holds.
  void hand_over();
  // A record on the commit subject, once this node's catalog has passed it
  // (publish_admin, publish_merge); `what` and `advice` for its errors.
  std::uint64_t publish_on_commits(std::string_view payload, const char* what, const char* advice);
  // Every partition asked `q` (the same question), with what did not answer.
  std::vector<QueryReply> ask_all(const QueryRequest& q, std::vector<std::uint32_t>& missing);
  // The one partition holding `key` (an item, a distribution), read-your-
  // writes; ServiceError unavailable when it does not answer in time.
  QueryReply ask_owner(QueryRequest& q, std::string_view key);
  static void on_reply(natsConnection*, natsSubscription*, natsMsg* msg, void* closure);
  void take_reply(natsMsg* msg);
  std::atomic<std::chrono::steady_clock::rep> leave_by_{0};  // leave_by(); 0: none

  ClusterOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  ClusterLayout layout_;
  std::unique_ptr<NatsClient> client_;
  KvPtr nodes_;
  std::unique_ptr<ReplicaCheckpoints> checkpoints_;
  std::optional<std::filesystem::path> temporary_checkpoints_;  // checkpoints_'s folder when no --data-dir could be used
  std::optional<PartitionReplica::Sharing> sharing_;  // none: checkpoints are not shared
  std::unique_ptr<NamespaceMirror> mirror_;  // fed by the catalog follower
  service::Service* catalog_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cancelled_{false};

  // The catalog's position on the commit subject.
  std::atomic<std::uint64_t> catalog_position_{0};
  mutable std::mutex catalog_mu_;
  std::condition_variable catalog_moved_;
  std::thread catalog_follower_;

  // Publishing.
  std::mutex jobs_mu_;
  std::condition_variable jobs_cv_;
  std::deque<Job> jobs_;
  std::uint64_t next_ticket_ = 1;
  std::unordered_map<std::uint64_t, Ticket> tickets_;
  std::vector<std::thread> publishers_;

  // Queries: one reply subscription for the node's life (a subscription
  // per query raced libnats 3.4's reader on late replies: use after free).
  // Replies come to <reply_prefix_>.<query id>.<partition>.
  struct PendingQuery {
    struct Reply {
      bool no_responders = false;  // the partition has no owner listening
      std::string data;            // the reply, put back together from its chunks
    };
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::uint32_t, Reply> replies;
  };
  // What chunked questions and answers may hold, this node's assemblers together.
  std::shared_ptr<ChunkBudget> chunk_budget_ = std::make_shared<ChunkBudget>();
  ChunkAssembler reply_chunks_{ChunkAssembler::Limits{}, chunk_budget_};  // on the replies' subscription thread only
  mutable std::mutex levels_mu_;
  std::map<std::string, int> node_levels_;  // the live nodes' protocol levels but this one's, under levels_mu_
  std::string reply_prefix_;
  std::unique_ptr<AsyncSubscription> replies_;
  std::atomic<std::uint64_t> next_query_{1};
  std::mutex queries_mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<PendingQuery>> pending_;
  SharedFanOuts<engine::TopKAnswer> top_fan_outs_;  // top(): identical questions at once share a fan-out

  // Trending: each namespace's stream start (the earliest first event over
  // the partitions) as the last complete answer found it, so the next
  // question is asked with it at once (asked again when it moved).
  std::mutex since_mu_;
  std::unordered_map<std::string, double> since_;

  // Ownership.
  // A replica is shared with the queries asking it on this node (ask());
  // one taken out of the map is let go by retire(), once they are done.
  using ReplicaPtr = std::shared_ptr<PartitionReplica>;
  static void retire(ReplicaPtr replica);
  mutable std::mutex replicas_mu_;
  std::map<std::uint32_t, ReplicaPtr> replicas_;
  std::map<std::string, std::set<std::uint32_t>> members_;  // as of the last heartbeat
  std::thread heartbeat_, ownership_, retention_;
  std::int64_t stream_created_ns_ = 0;
  bool checkpoint_stream_ = false;  // <stream>_checkpoints exists (shared checkpoints, retention)
  bool retaining_ = false;          // retention_loop runs (set before the catalog's follower starts)
  std::atomic<bool> catalog_gapped_{false};  // the catalog fell behind the stream's start (failure())
  std::map<std::uint32_t, std::chrono::steady_clock::time_point> retaken_;  // under replicas_mu_: gapped replicas taken again
  // The catalog's snapshot, taken on its follower's thread (between two
  // records) every share_interval for retention_loop to upload.
  std::mutex snapshot_mu_;
  std::optional<std::string> catalog_snapshot_;  // under snapshot_mu_: an encoded CatalogSnapshot
  std::uint64_t catalog_shared_ = 0;             // retention_loop's: the newest snapshot uploaded
  std::chrono::steady_clock::time_point last_retention_warning_;  // retention_loop's
  std::mutex heartbeat_mu_;
  std::condition_variable heartbeat_cv_;
  std::optional<std::map<std::string, std::set<std::uint32_t>>> next_members_;  // under heartbeat_mu_: for ownership_
};

}  // namespace ebb::cluster
