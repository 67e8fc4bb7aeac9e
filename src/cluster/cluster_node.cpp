// A cluster node on NATS JetStream (cluster/cluster_node.hpp).
#include "ebb/cluster/cluster_node.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <random>

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "ebb/cluster/catalog_snapshot.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/answer_merge.hpp"
#include "ebb/service/service_error.hpp"
#include "ebb/storage/file_io.hpp"

namespace ebb::cluster {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

service::ServiceError unavailable(const std::string& code, const std::string& message) {
  return {service::ErrorKind::unavailable, code, message};
}

// "partitions=16" in the stream's description: what a new stream was made with.
std::optional<std::uint32_t> described_partitions(const std::string& description) {
  const auto at = description.find("partitions=");
  if (at == std::string::npos) return std::nullopt;
  std::uint32_t n = 0;
  const char* first = description.data() + at + 11;
  auto [end, ec] = std::from_chars(first, description.data() + description.size(), n);
  if (ec != std::errc() || n == 0) return std::nullopt;
  return n;
}

template <typename Partitions>
std::string join(const Partitions& s) {
  std::string out;
  for (auto p : s) {
    if (!out.empty()) out += ',';
    out += std::to_string(p);
  }
  return out;
}

// How long a write waits for a partition's owner to check it.
constexpr std::chrono::milliseconds kCheckWait{250};

constexpr const char* kRetry = "retry shortly";

// How long a starting node waits for JetStream to be ready (docs/cluster.md).
constexpr std::chrono::seconds kJetStreamReadyWait{30};

// What this build writes and reads, told in every heartbeat ("v2" beside
// the partitions served; a build before it tells none: 1). Level 2 reads
// commits with clocks (0x41) and keys (0x43), merge records (0x42) and
// parts in pieces; a writer uses them only while every live node can read
// them (a rolling upgrade must not make an older partition skip a batch).
// Level 3 reads a namespace resize (a patch of a sketch width) and
// audit_resize.
constexpr int kProtocolLevel = 3;

int level_of(std::string_view csv) {
  for (std::size_t at = 0; at < csv.size();) {
    const auto comma = std::min(csv.find(',', at), csv.size());
    const auto field = csv.substr(at, comma - at);
    int level = 0;
    if (field.size() > 1 && field[0] == 'v' && std::from_chars(field.data() + 1, field.data() + field.size(), level).ec == std::errc()) return level;
    at = comma + 1;
  }
  return 1;
}

// A partition's part of a batch as one record, or as several when it would
// not fit in one message of `limit` bytes (service/log_records.hpp: the
// batch layout, whose sizes are summed here as encode_batch writes them).
std::vector<std::string> encode_in_pieces(const service::BatchRecord& part, std::size_t limit) {
  std::string whole;
  service::encode_batch(whole, part);
  if (whole.size() <= limit) return {std::move(whole)};
  constexpr std::size_t kBase = 1 + 8 + 1 + 4;  // type, received_at, has_key, groups
  std::vector<std::string> out;
  service::BatchRecord piece;
  piece.received_at = part.received_at;
  std::size_t bytes = kBase;
  auto flush = [&] {
    if (piece.groups.empty()) return;
    out.emplace_back();
    service::encode_batch(out.back(), piece);
    piece.groups.clear();
    bytes = kBase;
  };
  for (const auto& group : part.groups) {
    const std::size_t group_bytes = 4 + group.ns.size() + 4;
    for (const auto& e : group.events) {
      const std::size_t event_bytes = 4 + e.item.size() + 16;
      const bool new_group = piece.groups.empty() || piece.groups.back().ns != group.ns;
      if (bytes + event_bytes + (new_group ? group_bytes : 0) > limit) flush();
      if (piece.groups.empty() || piece.groups.back().ns != group.ns) {
        piece.groups.push_back({group.ns, {}});
        bytes += group_bytes;
      }
      piece.groups.back().events.push_back(e);
      bytes += event_bytes;
    }
  }
  flush();
  return out;
}

std::set<std::uint32_t> split(std::string_view csv) {
  std::set<std::uint32_t> out;
  while (!csv.empty()) {
    const auto comma = csv.find(',');
    const auto field = csv.substr(0, comma);
    std::uint32_t p = 0;
    if (std::from_chars(field.data(), field.data() + field.size(), p).ec == std::errc()) out.insert(p);
    if (comma == std::string_view::npos) break;
    csv.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

std::vector<std::string> assign_partitions(std::uint32_t partitions, const std::vector<std::string>& nodes) {
  std::vector<std::string> owner(partitions);
  if (nodes.empty()) return owner;
  struct Pair {
    std::uint64_t score;
    std::uint32_t partition;
    std::size_t node;
  };
  std::vector<Pair> pairs;
  pairs.reserve(static_cast<std::size_t>(partitions) * nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const std::uint64_t h = hash_key(nodes[n]);
    for (std::uint32_t p = 0; p < partitions; ++p) pairs.push_back({mix64(h ^ (std::uint64_t{p} * 0x9e3779b97f4a7c15ULL)), p, n});
  }
  // Highest score first (ties: by partition, then node, so every node
  // computes the same); each partition to its best node that has room.
  std::sort(pairs.begin(), pairs.end(), [&](const Pair& a, const Pair& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.partition != b.partition ? a.partition < b.partition : nodes[a.node] < nodes[b.node];
  });
  // Shares: every node `floor` partitions, and `extra` of them one more
  // (whichever reach it first): the room adds up to `partitions` exactly,
  // so every partition finds a node.
  const std::size_t floor = partitions / nodes.size();
  std::size_t extra = partitions % nodes.size();
  std::vector<std::size_t> load(nodes.size());
  std::vector<bool> placed(partitions);
  for (const auto& pr : pairs) {
    if (placed[pr.partition]) continue;
    if (load[pr.node] >= floor) {
      if (load[pr.node] > floor || extra == 0) continue;
      --extra;
    }
    placed[pr.partition] = true;
    ++load[pr.node];
    owner[pr.partition] = nodes[pr.node];
  }
  return owner;
}

std::string sanitize_node_id(std::string id) {
  for (char& c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '=';
    if (!ok) c = '_';
  }
  if (id.empty()) id = "node";
  return id;
}

namespace {
// A diskless node's temporary folders left by earlier runs of it that did
// not stop cleanly (SIGKILL, the shutdown watchdog): <prefix><pid> whose
// process is gone (a pid alive now, even reused, is left alone).
void remove_dead_nodes_folders(const std::filesystem::path& tmp, const std::string& prefix) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(tmp, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    long long pid = 0;
    const char* digits = name.data() + prefix.size();
    const auto [end, err] = std::from_chars(digits, name.data() + name.size(), pid);
    if (err != std::errc() || end != name.data() + name.size() || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code gone;
    std::filesystem::remove_all(e.path(), gone);
  }
}

// Runs f (a JetStream request made at start: a stream, a bucket), again
// while JetStream is not ready yet, until `ready_by`. A JetStream cluster
// started with its nodes (a compose file, a reboot) takes a few seconds to
// elect a leader and know its peers; until then it answers "no suitable
// peers" or "temporarily unavailable", or nothing in time. Any other
// refusal (a stream made otherwise, JetStream off) ends the start at once,
// as does a stop.
template <class F>
auto when_ready(std::chrono::steady_clock::time_point ready_by, spdlog::logger& log, const std::atomic<bool>& cancelled, F&& f) -> decltype(f()) {
  for (bool told = false;; told = true) {
    try {
      return f();
    } catch (const NatsError& e) {
      // ("No responders": no server runs JetStream, which will not change.)
      const bool not_yet = e.js_code() == JSClusterNoPeersErr || e.js_code() == JSClusterNotAvailErr || e.js_code() == JSClusterNotLeaderErr ||
                           e.status() == NATS_TIMEOUT;
      if (!not_yet || std::chrono::steady_clock::now() >= ready_by || cancelled.load()) throw;
      if (!told) log.warn("JetStream is not ready ({}); waiting for it, up to {} s from the start", e.what(), kJetStreamReadyWait.count());
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
}
}  // namespace

ClusterNode::ClusterNode(ClusterOptions options, std::shared_ptr<spdlog::logger> log)
    : options_(std::move(options)), log_(std::move(log)), layout_(options_.layout) {
  options_.node_id = sanitize_node_id(options_.node_id);
}

ClusterNode::~ClusterNode() { stop(); }

void ClusterNode::start(service::Service& catalog) {
  catalog_ = &catalog;
  client_ = std::make_unique<NatsClient>(options_.urls, "ebb " + options_.node_id);
  client_->set_consumer_idle(options_.consumer_idle);
  const auto ready_by = std::chrono::steady_clock::now() + kJetStreamReadyWait;
  const auto stream = when_ready(ready_by, *log_, cancelled_, [&] {
    return client_->ensure_stream(layout_.stream, layout_.stream_subjects(), options_.replicas,
                                  "ebb cluster log partitions=" + std::to_string(layout_.partitions));
  });
  if (auto p = described_partitions(stream.description); p && *p != layout_.partitions) {
    log_->warn("stream {} was made with {} partitions; using them (not {})", layout_.stream, *p, layout_.partitions);
    layout_.partitions = *p;
  }
  // Each partition counts about 1/partitions of every namespace's items,
  // with as much of its sketches; the catalog counts nothing, and checks
  // batches with the same share (docs/cluster.md, "Memory").
  options_.partition_options.sketch_share = layout_.partitions;
  catalog.share_sketches(layout_.partitions);
  auto open_checkpoints = [&](const std::filesystem::path& dir) {
    try {
      checkpoints_ = std::make_unique<ReplicaCheckpoints>(dir, layout_.stream, stream.created_ns, layout_.partitions, log_);
      return true;
    } catch (const storage::IoError& e) {
      // Unwritable or full (another node using the folder is not this,
      // and stops the start).
      log_->error("partition checkpoints cannot be kept in {} ({})", dir.string(), e.what());
    } catch (const std::filesystem::filesystem_error& e) {
      log_->error("partition checkpoints cannot be kept in {} ({})", dir.string(), e.what());
    }
    return false;
  };
  if (!options_.checkpoint_dir || !open_checkpoints(*options_.checkpoint_dir)) {
    // Without a folder of its own (no --data-dir, or one it cannot use) a
    // node still needs one to take shared checkpoints up (a stream that
    // retention cut cannot be replayed from its start), and shares its
    // own: a temporary one, removed when it stops.
    std::error_code ec;
    const auto tmp = std::filesystem::temp_directory_path(ec);
    const std::string prefix = "ebb-cluster-" + layout_.stream + "-" + options_.node_id + "-";
    remove_dead_nodes_folders(tmp, prefix);
    auto temp = tmp / (prefix + std::to_string(static_cast<long long>(::getpid())));
    if (!ec && open_checkpoints(temp)) {
      temporary_checkpoints_ = temp;
      log_->info("partition checkpoints are kept in {} until this node stops", temp.string());
    } else {
      log_->error("partition checkpoints are off: this node's partitions are replayed from the stream, and cannot be taken up once "
                  "retention has cut it");
    }
  }
  stream_created_ns_ = stream.created_ns;
  try {
    when_ready(ready_by, *log_, cancelled_, [&] {
      return client_->ensure_stream(layout_.checkpoint_stream(), layout_.checkpoint_subjects(), options_.replicas, "ebb cluster shared checkpoints");
    });
    checkpoint_stream_ = true;
    if (checkpoints_) {
      sharing_ = PartitionReplica::Sharing{stream.created_ns, options_.node_id, options_.share_interval, options_.retention};
    }
  } catch (const NatsError& e) {
    log_->error("shared checkpoints and retention are off ({}): a partition that moves here is replayed from the stream", e.what());
  }
  nodes_ = when_ready(ready_by, *log_, cancelled_, [&] { return client_->bucket(layout_.nodes_bucket(), options_.replicas, options_.node_ttl); });
  mirror_ = when_ready(ready_by, *log_, cancelled_, [&] {
    return std::make_unique<NamespaceMirror>(*client_, layout_.namespaces_bucket(), options_.replicas, stream.created_ns, log_);
  });
  natsInbox* inbox = nullptr;
  nats_check(natsInbox_Create(&inbox), "creating an inbox");
  reply_prefix_ = inbox;
  natsInbox_Destroy(inbox);
  replies_ = std::make_unique<AsyncSubscription>(client_->connection(), reply_prefix_ + ".>", &ClusterNode::on_reply, this);
  const std::uint64_t target = client_->last_sequence(layout_.stream, layout_.commit_subject(), milliseconds(5000));
  load_catalog_snapshot(target);
  retaining_ = checkpoint_stream_ && options_.retention.count() > 0 && options_.share_interval.count() > 0;
  catalog_follower_ = std::thread([this] { follow_catalog(); });
  while (!stop_ && !cancelled_ && !wait_catalog(target, milliseconds(1000))) {
    log_->info("catalog: applied the log to {} of {}", catalog_position_.load(), target);
  }
  if (cancelled_) throw std::runtime_error("stopped while catching up with the cluster's log");
  (void)read_members();  // which builds the other nodes run, before the first write
  for (std::size_t i = 0; i < options_.publishers; ++i) publishers_.emplace_back([this] { publish_loop(); });
  heartbeat_ = std::thread([this] { heartbeat_loop(); });
  ownership_ = std::thread([this] { ownership_loop(); });
  if (retaining_) retention_ = std::thread([this] { retention_loop(); });
  log_->info("cluster node {} joined: stream {} ({} partitions), catalog at {}", options_.node_id, layout_.stream, layout_.partitions, target);
}

void ClusterNode::cancel() {
  cancelled_ = true;
  {
    std::lock_guard lock(catalog_mu_);
  }
  catalog_moved_.notify_all();
}

void ClusterNode::stop() {
  if (stop_.exchange(true)) return;
  {
    std::lock_guard lock(heartbeat_mu_);
  }
  heartbeat_cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (ownership_.joinable()) ownership_.join();
  if (retention_.joinable()) retention_.join();
  if (nodes_) kvStore_Delete(nodes_.get(), options_.node_id.c_str());  // leave now, not after the TTL
  hand_over();
  {
    std::lock_guard lock(jobs_mu_);
  }
  jobs_cv_.notify_all();
  for (auto& t : publishers_) t.join();
  publishers_.clear();
  std::vector<Job> left;
  {
    std::lock_guard lock(jobs_mu_);
    left.assign(jobs_.begin(), jobs_.end());
    jobs_.clear();
  }
  for (const auto& j : left) finish(j.ticket, "the node is shutting down: the batch was not published (nothing of it was counted); retry it");
  std::map<std::uint32_t, ReplicaPtr> replicas;
  {
    std::lock_guard lock(replicas_mu_);
    replicas.swap(replicas_);
  }
  // Each writes its last checkpoint, outside the lock (so /readyz still
  // answers), all at once (a slow or unreachable NATS costs its wait once).
  std::vector<std::thread> stopping;
  for (auto& [p, replica] : replicas) stopping.emplace_back([r = std::move(replica)]() mutable { retire(std::move(r)); });
  for (auto& t : stopping) t.join();
  {
    std::lock_guard lock(catalog_mu_);
  }
  catalog_moved_.notify_all();
  if (catalog_follower_.joinable()) catalog_follower_.join();
  mirror_.reset();
  replies_.reset();
  checkpoints_.reset();  // (its lock)
  if (temporary_checkpoints_) {
    std::error_code ec;
    std::filesystem::remove_all(*temporary_checkpoints_, ec);
  }
}

void ClusterNode::on_reply(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  MsgPtr m(msg);
  try {
    static_cast<ClusterNode*>(closure)->take_reply(msg);
  } catch (...) {  // (out of memory): nothing may leave a libnats callback; the question counts this partition missing
  }
}

void ClusterNode::take_reply(natsMsg* msg) {
  ClusterNode* self = this;
  // <prefix>.<query id>.<partition>
  std::string_view subject = natsMsg_GetSubject(msg);
  if (subject.size() <= self->reply_prefix_.size() + 1) return;
  subject.remove_prefix(self->reply_prefix_.size() + 1);
  const auto dot = subject.find('.');
  std::uint64_t id = 0;
  std::uint32_t partition = 0;
  if (dot == std::string_view::npos || std::from_chars(subject.data(), subject.data() + dot, id).ec != std::errc() ||
      std::from_chars(subject.data() + dot + 1, subject.data() + subject.size(), partition).ec != std::errc()) {
    return;
  }
  std::shared_ptr<PendingQuery> q;
  {
    std::lock_guard lock(self->queries_mu_);
    auto it = self->pending_.find(id);
    if (it == self->pending_.end()) return;  // answered already, or given up on
    q = it->second;
  }
  PendingQuery::Reply reply;
  reply.no_responders = natsMsg_IsNoResponders(msg);
  if (!reply.no_responders) {
    auto whole = self->reply_chunks_.add(natsMsg_GetSubject(msg), msg);  // (this subscription's one thread)
    if (!whole) return;  // more chunks to come
    reply.data = std::move(*whole);
  }
  {
    std::lock_guard lock(q->mu);
    q->replies.emplace(partition, std::move(reply));
  }
  q->cv.notify_all();
}

std::set<std::uint32_t> ClusterNode::serving() const {
  std::set<std::uint32_t> out;
  std::lock_guard lock(replicas_mu_);
  for (const auto& [p, r] : replicas_) {
    if (r->caught_up()) out.insert(p);
  }
  return out;
}

// ---- the catalog ----

void ClusterNode::follow_catalog() {
  SubscriptionPtr sub;
  auto last_snapshot = std::chrono::steady_clock::time_point{};
  GapGuard gaps(options_.retention);
  auto last_data = std::chrono::steady_clock::now();
  while (!stop_) {
    try {
      if (!sub) sub = client_->pull_from(layout_.stream, layout_.commit_subject(), catalog_position_.load() + 1);
      auto msgs = client_->fetch(sub.get(), 256, milliseconds(200));
      if (!msgs.empty()) {
        last_data = std::chrono::steady_clock::now();
      } else if (client_->reader_stuck(layout_.stream, layout_.commit_subject(), catalog_position_.load(), last_data)) {
        log_->warn("catalog: its reader of the log brings nothing though the log is past {} (a NATS server gone?): made again",
                   catalog_position_.load());
        sub.reset();
        continue;
      }
      // Left behind the stream's start (paused, or cut off from NATS, for
      // longer than retention keeps), it would skip namespace changes
      // unawares (a reader below the start is moved up to it): asked after
      // the records came and before they apply, the start tells whether
      // anything after its position went first. Then the node says it
      // failed (writes refused, not ready) and follows no more.
      // (Asked only when something after the position could be gone: gap_guard.hpp.)
      if (!msgs.empty() && gaps.must_ask()) {
        const std::uint64_t first = client_->first_sequence(layout_.stream);
        gaps.asked();
        if (first > catalog_position_.load() + 1) {
          catalog_gapped_ = true;
          log_->error("catalog: the stream starts at sequence {}, past {} which it still needs (retention dropped it while this node "
                      "was behind): restart the node",
                      first, catalog_position_.load() + 1);
          return;
        }
      }
      for (auto& m : msgs) {
        const MsgMeta meta = msg_meta(m.get());
        const std::string_view payload = msg_data(m.get());
        try {
          if (is_merge(payload)) {
            // Nothing for the catalog, which counts nothing: the partitions sum.
          } else if (!is_commit(payload)) {
            catalog_->apply_record(meta.sequence, payload);
            mirror_->applied(meta.sequence, payload, *catalog_);
          } else if (static_cast<std::uint8_t>(payload[0]) != kCommitRecord) {
            // The catalog checks the next batches against the clocks the
            // partitions keep, and answers retries from the keys of the
            // batches that counted.
            const CommitRecord commit = decode_commit(payload);
            const service::Service::ConfigRevisions configs(commit.configs.begin(), commit.configs.end());
            catalog_->advance_event_clocks(meta.sequence, commit.clocks, configs);
            if (commit.key) {
              catalog_->remember_key(meta.sequence, commit.key->key, commit.key->body_hash, static_cast<double>(meta.timestamp_ns) / 1e9, configs);
            }
          }
        } catch (const std::bad_alloc&) {
          throw;  // (not the record's doing: applied again below, never skipped)
        } catch (const std::exception& e) {
          log_->error("catalog: record {} does not decode ({}); skipped", meta.sequence, e.what());
        }
        catalog_position_.store(meta.sequence, std::memory_order_release);
        gaps.applied(meta.timestamp_ns);
      }
      if (!msgs.empty()) {
        {
          std::lock_guard lock(catalog_mu_);
        }
        catalog_moved_.notify_all();
      }
      // Between two records: the catalog as of its position, for retention_loop.
      if (retaining_ && std::chrono::steady_clock::now() - last_snapshot >= options_.share_interval && serving().contains(0)) {
        last_snapshot = std::chrono::steady_clock::now();
        std::string snapshot = encode_catalog(take_catalog(*catalog_, catalog_position_.load()));
        std::lock_guard lock(snapshot_mu_);
        catalog_snapshot_ = std::move(snapshot);
      }
    } catch (const std::bad_alloc&) {
      // Skipping it would make this catalog differ from every other node's.
      log_->error("catalog: out of memory applying record {}; retried in a second", catalog_position_.load() + 1);
      sub.reset();
      std::this_thread::sleep_for(std::chrono::seconds(1));
    } catch (const std::exception& e) {
      log_->warn("catalog: reading the log failed ({}); resuming from {}", e.what(), catalog_position_.load() + 1);
      sub.reset();
      std::this_thread::sleep_for(milliseconds(250));
    }
  }
}

bool ClusterNode::wait_catalog(std::uint64_t position, milliseconds wait) {
  std::unique_lock lock(catalog_mu_);
  catalog_moved_.wait_for(lock, wait, [&] { return catalog_position_.load() >= position || stop_.load() || cancelled_.load(); });
  return catalog_position_.load() >= position;
}

std::uint64_t ClusterNode::log_position() {
  try {
    return client_->last_sequence(layout_.stream, layout_.commit_subject(), options_.query_wait);
  } catch (const std::exception& e) {
    throw unavailable("cluster_unreachable", std::string("the cluster's log cannot be read now: ") + e.what());
  }
}

std::uint64_t ClusterNode::publish_admin(std::string_view payload) {
  return publish_on_commits(payload, "the change", "check GET /namespaces before retrying");
}

void ClusterNode::refuse_if_catalog_gapped() const {
  // Its catalog no longer follows the log: it could neither check a write
  // against the namespaces as they are nor tell what became of it.
  if (catalog_gapped_) {
    throw unavailable("catalog_gapped", "this node's catalog fell behind the start of the cluster's log: nothing was written; write "
                                        "through another node, and restart this one");
  }
}

std::uint64_t ClusterNode::publish_on_commits(std::string_view payload, const char* what, const char* advice) {
  refuse_if_catalog_gapped();
  if (payload.size() > message_limit()) {
    throw service::ServiceError(service::ErrorKind::too_large, "record_too_large",
                                std::string(what) + " is " + std::to_string(payload.size()) + " bytes, more than the cluster's NATS servers carry in one message (" +
                                    std::to_string(message_limit()) + " bytes with room for headers); nothing was written");
  }
  thread_local std::mt19937_64 random{std::random_device{}()};
  char id[40];
  std::snprintf(id, sizeof id, "a%016llx%016llx", static_cast<unsigned long long>(random()), static_cast<unsigned long long>(random()));
  std::uint64_t seq = 0;
  try {
    seq = client_->publish(layout_.commit_subject(), payload, id, options_.publish_wait);
  } catch (const std::exception& e) {
    throw unavailable("persist_failed",
                      std::string("the cluster's log did not acknowledge ") + what + " (its outcome is unknown: " + advice + "): " + e.what());
  }
  if (!wait_catalog(seq, options_.query_wait * 5)) {
    throw unavailable("not_applied", std::string(what) + " is in the cluster's log (sequence " + std::to_string(seq) +
                                         ") but this node has not applied it yet");
  }
  return seq;
}

std::uint64_t ClusterNode::publish_merge(const std::string& destination, std::span<const std::string> sources, std::span<const double> weights,
                                         const std::map<std::string, std::uint64_t, std::less<>>& configs) {
  if (const std::string older = older_nodes(); !older.empty()) {
    throw unavailable("cluster_upgrading",
                      "node(s) " + older + " run an older ebb, which cannot merge: nothing was merged; retry once every node runs this build");
  }
  MergeRecord m;
  m.destination = destination;
  for (std::size_t i = 0; i < sources.size(); ++i) m.sources.emplace_back(sources[i], weights[i]);
  m.configs.assign(configs.begin(), configs.end());
  return publish_on_commits(encode_merge(m), "the merge", "check the destination's counts before retrying");
}

bool ClusterNode::catch_up() { return !catalog_gapped_ && wait_catalog(log_position(), options_.query_wait); }

// ---- publishing ----

std::uint64_t ClusterNode::publish_batch(const service::BatchRecord& record, const std::vector<std::vector<std::uint64_t>>& hashes,
                                         const std::map<std::string, std::uint64_t, std::less<>>& configs, const std::string& batch_id,
                                         std::vector<service::EventClockCheck> clocks) {
  // One record per partition the batch touches, with the groups' events
  // of that partition (the receive time stays the batch's).
  std::map<std::uint32_t, service::BatchRecord> by_partition;
  for (std::size_t g = 0; g < record.groups.size(); ++g) {
    const auto& group = record.groups[g];
    for (std::size_t i = 0; i < group.events.size(); ++i) {
      const std::uint32_t p = service::partition_of(hashes[g][i], layout_.partitions);
      auto& part = by_partition[p];
      if (part.groups.empty() || part.groups.back().ns != group.ns) {
        part.received_at = record.received_at;
        part.groups.push_back({group.ns, {}});
      }
      part.groups.back().events.push_back(group.events[i]);
    }
  }
  Job job;
  job.batch_id = batch_id;
  job.configs.assign(configs.begin(), configs.end());
  job.clocks = std::move(clocks);
  if (record.key) job.key = CommitRecord::Key{std::string(record.key->key), record.key->body_hash};
  const std::string older = older_nodes();
  if (!older.empty()) {
    // A rolling upgrade: write what the older nodes read (as they wrote
    // it): no key (a retry after a patch may count again), no windows'
    // clocks (as-of answers may differ from a single node's meanwhile).
    // An event clock they cannot keep at all.
    job.key.reset();
    std::erase_if(job.clocks, [](const service::EventClockCheck& c) { return !c.event_clock; });
    if (!job.clocks.empty()) {
      throw unavailable("cluster_upgrading", "namespace '" + job.clocks.front().ns + "' keeps an event clock, which node(s) " + older +
                                                 " (an older ebb) cannot count: nothing was written; retry once every node runs this build");
    }
  }
  const std::size_t limit = message_limit();
  for (const auto& [p, part] : by_partition) {
    // A part larger than one message goes as pieces, all named by the
    // commit; the partition puts them back together before it counts.
    for (auto& piece : encode_in_pieces(part, limit)) {
      if (piece.size() > limit) {  // one event alone (an item id configured past the message size)
        throw service::ServiceError(service::ErrorKind::too_large, "batch_too_large",
                                    "events: an event is more than the cluster's NATS servers carry in one message (" + std::to_string(limit) + " bytes)");
      }
      job.parts.emplace_back(p, std::move(piece));
    }
  }
  if (!older.empty() && job.parts.size() > by_partition.size()) {
    throw service::ServiceError(service::ErrorKind::too_large, "batch_too_large",
                                "events: the batch is larger than one message of the cluster's NATS servers for a partition, which node(s) " + older +
                                    " (an older ebb) cannot take in pieces: send smaller batches until every node runs this build");
  }
  check_commit_size(job);
  return enqueue(std::move(job));
}

std::size_t ClusterNode::message_limit() const noexcept { return chunk_bytes(client_ ? client_->connection() : nullptr); }

void ClusterNode::check_commit_size(const Job& job) const {
  CommitRecord commit;
  commit.batch_id = job.batch_id;
  for (const auto& [p, _] : job.parts) commit.parts.push_back({p, 0});
  commit.configs = job.configs;
  commit.clocks = job.clocks;
  commit.key = job.key;
  const std::size_t bytes = encode_commit(commit).size();
  if (bytes > message_limit()) {
    throw service::ServiceError(service::ErrorKind::too_large, "batch_too_large",
                                "events: the batch's commit, naming its " + std::to_string(job.configs.size()) + " namespaces, is " +
                                    std::to_string(bytes) + " bytes, more than the cluster's NATS servers carry in one message (" +
                                    std::to_string(message_limit()) + " bytes with room for headers): send fewer namespaces in one batch");
  }
}

std::uint64_t ClusterNode::publish_record(std::uint64_t key_hash, std::string payload, const std::string& batch_id) {
  if (payload.size() > message_limit()) {
    throw service::ServiceError(service::ErrorKind::too_large, "record_too_large",
                                "the increment is " + std::to_string(payload.size()) + " bytes, more than the cluster's NATS servers carry in one message (" +
                                    std::to_string(message_limit()) + "): send fewer fields at once");
  }
  Job job;
  job.batch_id = batch_id;
  job.parts.emplace_back(service::partition_of(key_hash, layout_.partitions), std::move(payload));
  return enqueue(std::move(job));
}

std::uint64_t ClusterNode::enqueue(Job job) {
  // Known down: refused at once, before anything is written (the publishers
  // would retry for their whole wait, then say the outcome is unknown).
  if (client_ && !client_->connected()) {
    throw unavailable("cluster_unreachable", "the connection to NATS is down (reconnecting): nothing was written; retry");
  }
  refuse_if_catalog_gapped();
  std::lock_guard lock(jobs_mu_);
  if (stop_) throw unavailable("not_ready", "the node is shutting down");
  job.ticket = next_ticket_++;
  tickets_.emplace(job.ticket, Ticket{});
  const std::uint64_t ticket = job.ticket;
  jobs_.push_back(std::move(job));
  jobs_cv_.notify_one();
  return ticket;
}

void ClusterNode::when_published(std::uint64_t ticket, std::function<void(const std::string& error)> done) {
  std::unique_lock lock(jobs_mu_);
  auto it = tickets_.find(ticket);
  if (it == tickets_.end()) throw std::logic_error("when_published: unknown ticket");
  if (!it->second.done) {
    it->second.callback = std::move(done);
    return;
  }
  const std::string error = std::move(it->second.error);
  tickets_.erase(it);
  lock.unlock();
  done(error);
}

void ClusterNode::finish(std::uint64_t ticket, const std::string& error) {
  std::unique_lock lock(jobs_mu_);
  auto it = tickets_.find(ticket);
  if (it == tickets_.end()) return;
  if (!it->second.callback) {
    it->second.done = true;
    it->second.error = error;
    return;
  }
  auto callback = std::move(it->second.callback);
  tickets_.erase(it);
  lock.unlock();
  callback(error);
}

void ClusterNode::publish_loop() {
  std::unique_ptr<AsyncPublisher> parts;
  while (true) {
    Job job;
    {
      std::unique_lock lock(jobs_mu_);
      jobs_cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    std::string error;
    try {
      if (!parts) parts = std::make_unique<AsyncPublisher>(client_->connection());
      publish_job(job, *parts);
    } catch (const std::exception& e) {
      error = e.what();
      log_->error("batch {}: {}", job.batch_id, error);
    }
    finish(job.ticket, error);
  }
}

void ClusterNode::publish_job(const Job& job, AsyncPublisher& parts) {
  // The parts (all at once), then the commit naming their sequences: the
  // batch counts once the commit is in the log, whole. Each message is
  // retried with its own message id, so JetStream keeps one copy and gives
  // its sequence back.
  // `parts_sent` (for the commit): retention keeps the parts stored up
  // to half its span (and a publish_wait) before a checkpoint's record
  // (retain()), so a commit stored later than that could name a part
  // already dropped: no attempt starts past it (nothing is then counted,
  // unless an earlier attempt was stored after all: outcome unknown).
  std::optional<std::chrono::steady_clock::time_point> parts_sent;
  bool duplicate = false;  // a part's id was stored before (a retry of a batch)
  auto publish = [&](const std::string& subject, const std::string& payload, const std::string& id) {
    for (int attempt = 1;; ++attempt) {
      if (parts_sent && options_.retention.count() > 0 && std::chrono::steady_clock::now() - *parts_sent > options_.retention / 2) {
        throw std::runtime_error(attempt > 1 ? "the cluster's log did not acknowledge the batch's commit within half of --nats-retention; "
                                               "the batch's outcome is unknown: retry it with the same Idempotency-Key"
                                             : "the batch's parts took longer than half of --nats-retention to be acknowledged: it was "
                                               "not committed, nothing of it was counted; retry it");
      }
      try {
        bool again = false;
        const std::uint64_t seq = client_->publish(subject, payload, id, options_.publish_wait, &again);
        duplicate = duplicate || again;
        return seq;
      } catch (const std::exception& e) {
        if (attempt == 3 || stop_) {
          throw std::runtime_error("the cluster's log did not acknowledge the batch: " + std::string(e.what()) +
                                   "; the batch's outcome is unknown (it may yet be counted): retry it with the same Idempotency-Key "
                                   "(HTTP) to have it counted once; a retry without one (RESP) may count it twice: check the counts first");
        }
        log_->warn("batch {}: {}; retrying", job.batch_id, e.what());
      }
    }
  };
  CommitRecord commit;
  commit.batch_id = job.batch_id;
  commit.configs = job.configs;
  commit.clocks = job.clocks;
  commit.key = job.key;
  std::vector<AsyncPublisher::Outgoing> out;
  for (std::size_t i = 0; i < job.parts.size(); ++i) {
    // A part too large for one message went as pieces: each its own id,
    // named by its place and its bytes (where a part is cut depends on the
    // NATS server's max_payload, which a retry through another node may
    // see otherwise: a piece cut elsewhere is another message, never
    // mistaken for a duplicate of this one).
    const std::uint32_t p = job.parts[i].first;
    std::string id = job.batch_id + "." + std::to_string(p);
    const bool pieced = (i > 0 && job.parts[i - 1].first == p) || (i + 1 < job.parts.size() && job.parts[i + 1].first == p);
    if (pieced) {
      std::size_t piece = 0;
      for (std::size_t j = i; j > 0 && job.parts[j - 1].first == p; --j) ++piece;
      char bytes[24];
      std::snprintf(bytes, sizeof bytes, ".%016llx", static_cast<unsigned long long>(hash_key(job.parts[i].second)));
      id.append(1, '.').append(std::to_string(piece)).append(bytes);
    }
    out.push_back({layout_.part_subject(p), job.parts[i].second, std::move(id)});
  }
  std::string errors;
  const auto sent = std::chrono::steady_clock::now();
  const auto sequences = parts.publish_all(out, options_.publish_wait, errors);
  if (!errors.empty()) log_->warn("batch {}: {}; retrying those", job.batch_id, errors);
  duplicate = parts.any_duplicate();
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint64_t seq = sequences[i] ? sequences[i] : publish(out[i].subject, job.parts[i].second, out[i].msg_id);
    commit.parts.push_back({job.parts[i].first, seq});
  }
  // A retry's parts (the same ids: JetStream gives the first attempt's
  // sequences back, which retention may have dropped since, or may drop
  // before this commit: they were sent earlier than `sent`) are sent again
  // under new ids: a commit must name parts the stream holds.
  if (duplicate && options_.retention.count() > 0) {
    const std::uint64_t first = client_->first_sequence(layout_.stream);
    for (std::size_t i = 0; i < out.size(); ++i) {
      commit.parts[i].sequence = publish(out[i].subject, job.parts[i].second, out[i].msg_id + ".s" + std::to_string(first));
    }
  }
  parts_sent = sent;
  const std::uint64_t at = publish(layout_.commit_subject(), encode_commit(commit), job.batch_id + ".c");
  // A namespace changed between the check and the commit is not counted
  // (by any partition): then the batch's fate depends on whether the change
  // came before the commit, which this node reads in its catalog once it
  // has reached the commit.
  if (!wait_catalog(at, options_.query_wait * 5)) {
    throw std::runtime_error("the batch is in the log (sequence " + std::to_string(at) + ") but this node has not followed the log that far; outcome unknown");
  }
  for (const auto& [ns, revision] : job.configs) {
    const auto now = catalog_->config_revision(ns);
    if (now == revision) continue;
    // A change logged before the commit (its position below the commit's):
    // every partition judged the commit against it, so nothing of the
    // batch counted, in any namespace. A retry is a new batch.
    if (now && *now < at) {
      throw std::runtime_error("namespace '" + ns + "' changed before the batch was committed: nothing of the batch was counted; retry it");
    }
    throw std::runtime_error("namespace '" + ns +
                             "' changed while the batch was written; it was counted, whole, only if the change came after it (outcome "
                             "unknown): check the namespace before you retry");
  }
}

// ---- ownership ----

void ClusterNode::heartbeat_loop() {
  while (!stop_) {
    try {
      const std::string mine = join(serving());
      const std::string told = mine + (mine.empty() ? "" : ",") + "v" + std::to_string(kProtocolLevel);
      std::uint64_t rev = 0;
      nats_check(kvStore_PutString(&rev, nodes_.get(), options_.node_id.c_str(), told.c_str()), "heartbeat");
      auto nodes = read_members();
      nodes[options_.node_id] = split(mine);
      // Partitions are taken up and let go on a thread of their own: a
      // replica loading its checkpoint, or writing its last one, must not
      // hold the heartbeat back (past the TTL the others would take this
      // node's partitions).
      std::lock_guard lock(heartbeat_mu_);
      next_members_ = std::move(nodes);
      heartbeat_cv_.notify_all();
    } catch (const std::exception& e) {
      log_->warn("heartbeat failed: {}", e.what());
    }
    std::unique_lock lock(heartbeat_mu_);
    heartbeat_cv_.wait_for(lock, options_.heartbeat, [&] { return stop_.load(); });
  }
}

bool ClusterNode::load_catalog_snapshot(std::uint64_t target) {
  const std::uint64_t first = client_->first_sequence(layout_.stream);  // (NatsError: the start fails, as any NATS error there)
  if (!checkpoint_stream_) {
    if (first > 1) throw std::runtime_error("the stream " + layout_.stream + " starts at sequence " + std::to_string(first) + " and its shared checkpoints cannot be read");
    return false;
  }
  SharedCheckpoints slot(*client_, layout_, layout_.partitions, stream_created_ns_, options_.node_id);
  CatalogSnapshot snapshot;  // the found blob, decoded once
  const auto found = slot.newest(0, target, *log_, [&](std::string_view blob) {
    snapshot = decode_catalog(blob);
    if (snapshot.as_of + 1 < first) throw FormatError("the stream no longer holds the records after it");
    // Every configuration loads (one that does not would stop the start
    // halfway: the other kept snapshot is tried instead).
    for (const auto& n : snapshot.namespaces) {
      try {
        const auto spec = service::parse_namespace_spec(n.config_json, {}, service::SpecSource::stored);
        if (spec.config.name != n.name) throw FormatError("it names " + spec.config.name);
      } catch (const std::exception& e) {
        throw FormatError("namespace " + n.name + "'s configuration does not load: " + e.what());
      }
    }
  });
  if (!found) {
    if (first > 1) {
      // Its catalog would lack the namespaces made before: it would answer
      // 404 for them, and take a create of a name that exists.
      throw std::runtime_error("the stream " + layout_.stream + " starts at sequence " + std::to_string(first) +
                               " (retention dropped what came before) and no snapshot of the catalog can be read: this node cannot "
                               "know the cluster's namespaces; start it again once NATS answers");
    }
    return false;
  }
  // The records before the snapshot are never applied here, so the mirror
  // hears of its namespaces now, as of their revisions (it writes only over
  // older ones): a bucket emptied or behind is repaired by this node's
  // start as by a replay.
  load_catalog(*catalog_, snapshot, [&](std::uint64_t revision, std::string_view record) { mirror_->applied(revision, record, *catalog_); });
  catalog_position_ = snapshot.as_of;
  log_->info("catalog: took the snapshot {} shared at sequence {} ({} namespaces, {} idempotency keys)", found->head.node_id, snapshot.as_of,
             snapshot.namespaces.size(), snapshot.keys.size());
  return true;
}

void ClusterNode::retention_loop() {
  last_retention_warning_ = std::chrono::steady_clock::now();  // (no warning before the first uploads had time)
  while (!stop_) {
    {
      std::unique_lock lock(heartbeat_mu_);
      heartbeat_cv_.wait_for(lock, options_.share_interval, [&] { return stop_.load(); });
    }
    if (stop_) return;
    try {
      retain();
    } catch (const std::exception& e) {
      log_->warn("retention: {}", e.what());
    }
  }
}

void ClusterNode::retain() {
  // One node does it (any would do: dropping below a sequence twice is
  // dropping it once).
  if (!serving().contains(0)) return;
  if (catalog_gapped_) {
    // Its catalog stopped: no newer snapshot, so nothing more is dropped
    // until the node is restarted (the failure says so).
    log_->warn("retention: paused while this node's catalog is behind the stream's start (restart the node)");
    return;
  }
  std::optional<std::string> snapshot;
  {
    std::lock_guard lock(snapshot_mu_);
    snapshot.swap(catalog_snapshot_);
  }
  SharedCheckpoints catalog(*client_, layout_, layout_.partitions, stream_created_ns_, options_.node_id);
  if (snapshot) {
    const std::uint64_t as_of = decode_catalog(*snapshot).as_of;
    if (as_of > catalog_shared_) {
      catalog.upload(as_of, 0, *snapshot);
      catalog_shared_ = as_of;
    }
  }
  // What a new owner, or a new node's catalog, may start from: the older
  // of each slot's two kept heads (the newer may not read whole).
  // A head past the stream's newest commit (the stream lost its tail) is
  // one no reader uses: then nothing is dropped.
  const std::uint64_t newest = client_->last_sequence(layout_.stream, layout_.commit_subject(), milliseconds(5000));
  std::uint64_t floor = UINT64_MAX;
  const auto catalog_heads = catalog.usable_heads();
  if (catalog_heads.empty()) return;
  for (const auto& h : catalog_heads) {
    if (h.position > newest) return;
    floor = std::min(floor, h.position + 1);
  }
  const std::int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::int64_t retention_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.retention).count();
  // A commit after a checkpoint may name parts stored before it: never
  // more than half the retention and a publish_wait before (publish_job);
  // those stay.
  const std::int64_t publish_wait_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.publish_wait).count();
  std::int64_t since_ns = now_ns - retention_ns;
  for (std::uint32_t p = 0; p < layout_.partitions && !stop_; ++p) {
    SharedCheckpoints slot(*client_, layout_, p, stream_created_ns_, options_.node_id);
    const auto heads = slot.usable_heads();
    if (heads.empty()) {
      // (Its owner runs with --nats-checkpoint-interval 0, or has not
      // uploaded yet.) Said now and then, not at every round.
      const auto t = std::chrono::steady_clock::now();
      if (t - last_retention_warning_ > std::chrono::minutes(10)) {
        last_retention_warning_ = t;
        log_->warn("retention: partition {} has no shared checkpoint (its owner does not share: --nats-checkpoint-interval 0?); the "
                   "stream keeps everything meanwhile",
                   p);
      }
      return;
    }
    for (const auto& h : heads) {
      if (h.position_time_ns <= 0 || h.position > newest) return;  // (when its record was stored is unknown: keep everything)
      floor = std::min(floor, h.position + 1);
      since_ns = std::min(since_ns, h.position_time_ns - retention_ns / 2 - publish_wait_ns);
    }
  }
  if (stop_) return;
  floor = std::min(floor, client_->first_sequence_since(layout_.stream, layout_.stream_filter(), since_ns));
  const std::uint64_t first = client_->first_sequence(layout_.stream);
  if (floor <= first) return;
  client_->drop_below(layout_.stream, "", floor);
  log_->info("retention: the stream now starts at sequence {} (it started at {})", floor, first);
}

std::map<std::string, std::set<std::uint32_t>> ClusterNode::read_members() {
  std::map<std::string, std::set<std::uint32_t>> nodes;
  std::map<std::string, int> levels;
  kvKeysList keys{nullptr, 0};
  const natsStatus s = kvStore_Keys(&keys, nodes_.get(), nullptr);
  if (s != NATS_NOT_FOUND) nats_check(s, "listing the cluster's nodes");
  for (int i = 0; i < keys.Count; ++i) {
    kvEntry* entry = nullptr;
    if (kvStore_Get(&entry, nodes_.get(), keys.Keys[i]) != NATS_OK) continue;
    const std::string_view value = kvEntry_ValueString(entry) ? kvEntry_ValueString(entry) : "";
    nodes[keys.Keys[i]] = split(value);
    if (keys.Keys[i] != options_.node_id) levels[keys.Keys[i]] = level_of(value);
    kvEntry_Destroy(entry);
  }
  kvKeysList_Destroy(&keys);
  std::lock_guard lock(levels_mu_);
  node_levels_ = std::move(levels);
  return nodes;
}

std::string ClusterNode::older_nodes(int level) const {
  std::lock_guard lock(levels_mu_);
  std::string older;
  for (const auto& [node, its] : node_levels_) {
    if (its < level) older.append(older.empty() ? "" : ", ").append(node);
  }
  return older;
}

void ClusterNode::hand_over() {
  // Leaving: the others take this node's partitions at their next
  // heartbeat (its key is gone), and it serves each until its new owner
  // says it does (caught up), as on a join: no moment without an owner.
  std::set<std::uint32_t> held = serving();
  if (held.empty() || !nodes_ || !client_ || !client_->connected()) return;
  auto deadline = std::chrono::steady_clock::now() + options_.hand_over_wait;
  if (const auto by = leave_by_.load(); by != 0) deadline = std::min(deadline, std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(by)));
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      bool others = false;
      for (const auto& [id, parts] : read_members()) {
        if (id == options_.node_id) continue;
        others = true;
        for (auto p : parts) held.erase(p);
      }
      if (!others) return;  // the last node: nobody to hand over to (its checkpoints keep its place)
    } catch (const std::exception& e) {
      log_->warn("leaving: cannot read which nodes serve what ({}); letting the partitions go", e.what());
      return;
    }
    if (held.empty()) return;
    std::this_thread::sleep_for(milliseconds(200));
  }
  log_->warn("leaving: partitions {} were not taken over within {} s; let go all the same", join(held),
             std::chrono::duration<double>(options_.hand_over_wait).count());
}

void ClusterNode::ownership_loop() {
  for (;;) {
    std::map<std::string, std::set<std::uint32_t>> nodes;
    {
      std::unique_lock lock(heartbeat_mu_);
      heartbeat_cv_.wait(lock, [&] { return stop_.load() || next_members_.has_value(); });
      if (stop_) return;
      nodes = std::move(*next_members_);
      next_members_.reset();
    }
    rebalance(nodes);
  }
}

void ClusterNode::rebalance(const std::map<std::string, std::set<std::uint32_t>>& nodes) {
  // A replica left behind the stream's start is taken again (from the
  // newest shared checkpoint), at most every 10 s.
  std::vector<ReplicaPtr> gapped;
  {
    std::lock_guard lock(replicas_mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = replicas_.begin(); it != replicas_.end();) {
      auto& last = retaken_[it->first];
      if (it->second->gapped() && now - last > std::chrono::seconds(10)) {
        last = now;
        gapped.push_back(std::move(it->second));
        it = replicas_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& r : gapped) retire(std::move(r));  // (outside the lock: each waits for its threads)
  std::vector<std::uint32_t> start, drop;
  {
    std::lock_guard lock(replicas_mu_);
    members_ = nodes;
    std::vector<std::string> ids;
    for (const auto& [id, _] : nodes) ids.push_back(id);
    const std::vector<std::string> owners = assign_partitions(layout_.partitions, ids);
    for (std::uint32_t p = 0; p < layout_.partitions; ++p) {
      const std::string& owner = owners[p];
      const bool held = replicas_.contains(p);
      if (owner == options_.node_id && !held) start.push_back(p);
      // Handed over once the new owner serves it: no moment with nobody.
      if (owner != options_.node_id && held && nodes.at(owner).contains(p)) drop.push_back(p);
    }
  }
  for (auto p : start) {
    try {
      service::ServiceOptions o = options_.partition_options;
      o.data_dir.reset();
      if (checkpoints_) o.data_dir = checkpoints_->partition_dir(p);
      auto replica = std::make_shared<PartitionReplica>(*client_, layout_, p, std::move(o), log_, chunk_budget_, sharing_);
      std::lock_guard lock(replicas_mu_);
      replicas_.emplace(p, std::move(replica));
      log_->info("partition {}: taken", p);
    } catch (const std::exception& e) {
      log_->error("partition {}: cannot take it: {}", p, e.what());
    }
  }
  for (auto p : drop) {
    ReplicaPtr gone;
    {
      std::lock_guard lock(replicas_mu_);
      auto it = replicas_.find(p);
      if (it == replicas_.end()) continue;
      gone = std::move(it->second);
      replicas_.erase(it);
    }
    retire(std::move(gone));
    log_->info("partition {}: handed over", p);
  }
}

void ClusterNode::retire(ReplicaPtr replica) {
  // A query of this node holds it until its turn among the node's own
  // partitions has come and gone: within that query's deadline
  // (--nats-query-timeout and half a second) and one answer. No new one
  // can take it once it has left the map, so the count only falls.
  while (replica.use_count() > 1) std::this_thread::sleep_for(milliseconds(1));
  replica.reset();  // (stops it: its threads, its last checkpoint)
}

std::string ClusterNode::failure() const {
  if (!client_) return "not connected to NATS yet";
  if (catalog_gapped_) {
    return "this node's catalog fell behind the start of the cluster's log (retention dropped records it had not read): restart the node, "
           "which then starts from the catalog's newest snapshot";
  }
  if (!client_->connected()) return "the connection to NATS is down (reconnecting): writes and queries cannot reach the cluster's log";
  return "";
}

std::string ClusterNode::status() const {
  std::lock_guard lock(replicas_mu_);
  std::string out = "node " + options_.node_id + ", " + std::to_string(layout_.partitions) + " partitions; nodes:";
  for (const auto& [id, parts] : members_) {
    out += ' ';
    out += id;
    out += '[';
    out += join(parts);
    out += ']';
  }
  return out;
}

// ---- queries ----

std::vector<QueryReply> ClusterNode::ask(const std::vector<std::pair<std::uint32_t, std::string>>& requests, QueryRequest::Kind kind,
                                         std::vector<std::uint32_t>& missing, std::optional<std::chrono::milliseconds> wait) {
  const std::uint64_t id = next_query_.fetch_add(1);
  auto pending = std::make_shared<PendingQuery>();
  {
    std::lock_guard lock(queries_mu_);
    pending_.emplace(id, pending);
  }
  struct Forget {
    ClusterNode& node;
    std::uint64_t id;
    ~Forget() {
      std::lock_guard lock(node.queries_mu_);
      node.pending_.erase(id);
    }
  } forget{*this, id};
  const auto deadline = std::chrono::steady_clock::now() + wait.value_or(options_.query_wait + milliseconds(500));
  // The partitions this node serves answer here, on this thread, through
  // the same code as their subscriptions (PartitionReplica::reply): two
  // NATS messages and two thread hand-offs fewer each. One still catching
  // up, or gapped, is asked through NATS, where another node holding it
  // (its previous or next owner) may answer too.
  std::vector<ReplicaPtr> local(requests.size());
  {
    std::lock_guard lock(replicas_mu_);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const auto it = replicas_.find(requests[i].first);
      if (it != replicas_.end() && it->second->caught_up() && !it->second->gapped()) local[i] = it->second;
    }
  }
  const std::string reply_base = reply_prefix_ + "." + std::to_string(id) + ".";
  const std::size_t chunk = chunk_bytes(client_->connection());
  std::set<std::uint32_t> chunked;  // partitions asked in several messages
  std::size_t remote = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (local[i]) continue;
    const auto& [p, payload] = requests[i];
    if (payload.size() > chunk) chunked.insert(p);
    const std::string reply_to = reply_base + std::to_string(p);
    const natsStatus sent = publish_chunked(client_->connection(), layout_.query_subject(p), reply_to, payload, chunk);
    if (sent != NATS_OK) {
      throw unavailable("cluster_unreachable", "cannot ask partition " + std::to_string(p) + ": " + natsStatus_GetText(sent));
    }
    ++remote;
  }
  // (While the others answer, over NATS: publishing kicked the client's
  // flusher.) One after another, but within the one deadline: the
  // replicas move on their own threads meanwhile.
  std::map<std::uint32_t, PendingQuery::Reply> got;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!local[i]) continue;
    try {
      got[requests[i].first].data = local[i]->reply(requests[i].second, deadline);
    } catch (const std::exception& e) {  // (out of memory: as over NATS, the partition is missing; no entry was made)
      log_->warn("partition {}: no answer ({})", requests[i].first, e.what());
    }
    local[i].reset();  // (a hand-over waits for it: retire())
  }
  if (remote > 0) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    natsConnection_FlushTimeout(client_->connection(), std::max<std::int64_t>(left, 1));
  }
  {
    std::unique_lock lock(pending->mu);
    pending->cv.wait_until(lock, deadline, [&] { return pending->replies.size() >= remote; });
    for (auto& [p, r] : pending->replies) got.emplace(p, std::move(r));
  }
  // A partition counts once its owner answered; an owner absent ("no
  // responders"), behind or failing leaves it missing; a wrong question is
  // the caller's.
  std::vector<QueryReply> ok;
  std::set<std::uint32_t> answered;
  for (auto& [p, m] : got) {
    if (m.no_responders) continue;
    QueryReply r;
    try {
      r = decode_reply(m.data, kind);
    } catch (const std::exception& e) {
      log_->error("partition {}: a reply that does not decode ({})", p, e.what());
      continue;
    }
    if (r.error && r.error->kind() == service::ErrorKind::unavailable) {
      log_->warn("partition {}: {}", r.partition, r.error->what());
      continue;
    }
    if (r.error && r.error->code() == "bad_query" && chunked.contains(p)) {
      // An owner of an older build reads each chunk as a whole question:
      // it could not answer, which is not the asker's fault.
      log_->warn("partition {}: its owner cannot read a question in chunks ({}): counted missing", p, r.error->what());
      continue;
    }
    if (r.error) throw *r.error;
    answered.insert(r.partition);
    ok.push_back(std::move(r));
  }
  missing.clear();
  for (const auto& [p, _] : requests) {
    if (!answered.contains(p)) missing.push_back(p);
  }
  std::sort(ok.begin(), ok.end(), [](const QueryReply& a, const QueryReply& b) { return a.partition < b.partition; });
  return ok;
}

std::vector<QueryReply> ClusterNode::ask_all(const QueryRequest& q, std::vector<std::uint32_t>& missing) {
  const std::string payload = encode_query(q);
  std::vector<std::pair<std::uint32_t, std::string>> requests;
  for (std::uint32_t p = 0; p < layout_.partitions; ++p) requests.emplace_back(p, payload);
  return ask(requests, q.kind, missing);
}

QueryReply ClusterNode::ask_owner(QueryRequest& q, std::string_view key) {
  q.min_position = log_position();
  q.wait_ms = static_cast<std::uint32_t>(options_.query_wait.count());
  const std::uint32_t p = service::partition_of(hash_key(key), layout_.partitions);
  std::vector<std::uint32_t> missing;
  auto replies = ask({{p, encode_query(q)}}, q.kind, missing);
  if (replies.empty()) throw service::partitions_missing(std::span(&p, 1), kRetry);
  return std::move(replies.front());
}

engine::TopKAnswer ClusterNode::top(const std::string& ns, const std::optional<engine::ViewSpec>& view, std::optional<std::size_t> k,
                                    std::optional<double> as_of) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::top;
  q.ns = ns;
  q.view = view;
  if (k) q.k = *k;
  q.as_of = as_of.value_or(0);
  q.wait_ms = static_cast<std::uint32_t>(options_.query_wait.count());
  // (The question without its position: the same for all who ask it at once.)
  return top_fan_outs_.run(encode_query(q), [&] {
    q.min_position = log_position();
    std::vector<std::uint32_t> missing;
    auto replies = ask_all(q, missing);
    engine::TopKAnswer out;
    if (!replies.empty()) {
      std::vector<engine::TopKAnswer> parts;
      std::size_t cut = 0;
      for (auto& r : replies) {
        cut = std::max(cut, r.top.items.size());
        parts.push_back(std::move(r.top));
      }
      out = engine::merge_disjoint(std::move(parts), k ? *k : cut);
    }
    out.coverage.partitions = layout_.partitions;
    out.coverage.missing = std::move(missing);
    return out;
  });
}

service::ClusterPoints ClusterNode::counts(const std::string& ns, std::span<const std::string> items, const std::optional<engine::ViewSpec>& view,
                                           std::optional<double> as_of) {
  // Each item asks its own partition; one request per partition.
  std::map<std::uint32_t, std::vector<std::size_t>> by_partition;
  for (std::size_t i = 0; i < items.size(); ++i) by_partition[service::partition_of(hash_key(items[i]), layout_.partitions)].push_back(i);
  if (by_partition.empty()) by_partition[0];  // no items: the view block from one partition
  QueryRequest q;
  q.kind = QueryRequest::Kind::counts;
  q.ns = ns;
  q.view = view;
  q.as_of = as_of.value_or(0);
  q.min_position = log_position();
  q.wait_ms = static_cast<std::uint32_t>(options_.query_wait.count());
  std::vector<std::pair<std::uint32_t, std::string>> requests;
  for (const auto& [p, indices] : by_partition) {
    q.items.clear();
    for (auto i : indices) q.items.push_back(items[i]);
    requests.emplace_back(p, encode_query(q));
  }
  std::vector<std::uint32_t> missing;
  auto replies = ask(requests, q.kind, missing);
  if (!missing.empty()) {
    // A count is one partition's: without it there is no honest bound.
    throw service::partitions_missing(missing, kRetry);
  }
  service::ClusterPoints out;
  out.answers.resize(items.size());
  if (!replies.empty()) {
    // The view block bounds every item, whichever partition it came from.
    std::vector<engine::TopKAnswer> tops;
    for (const auto& r : replies) tops.push_back(r.top);
    out.view_answer = engine::merge_disjoint(std::move(tops), 0);
  }
  for (auto& r : replies) {
    const auto& indices = by_partition.at(r.partition);
    for (std::size_t j = 0; j < indices.size() && j < r.points.size(); ++j) out.answers[indices[j]] = std::move(r.points[j]);
  }
  for (auto& a : out.answers) a.coverage.partitions = layout_.partitions;
  out.view_answer.coverage.partitions = layout_.partitions;
  return out;
}

engine::TrendingAnswer ClusterNode::trending(const std::string& ns, std::optional<double> short_half_life,
                                             std::optional<double> long_half_life, std::size_t k, double min_count) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::trending;
  q.ns = ns;
  q.k = k;
  q.short_half_life = short_half_life.value_or(0);
  q.long_half_life = long_half_life.value_or(0);
  q.min_count = min_count;
  q.min_position = log_position();
  q.wait_ms = static_cast<std::uint32_t>(options_.query_wait.count());
  {
    std::lock_guard lock(since_mu_);
    if (auto it = since_.find(ns); it != since_.end()) q.since = it->second;
  }
  // A score rests on the stream's age, from its first event, which only one
  // partition saw: each partition scores from the `since` it is given, and
  // says where its own events start. Asked again (once; twice at the first
  // question of a namespace) when the earliest of those is not what was
  // given, so scores are those of a single node fed the same events.
  std::vector<std::uint32_t> missing;
  std::vector<QueryReply> replies;
  bool confirmed = false;  // the replies were scored from the earliest first event of all the partitions
  for (int round = 0; round < 3; ++round) {
    replies = ask_all(q, missing);
    double first = 0;
    for (const auto& r : replies) {
      const double f = r.trending.first_event;
      if (f > 0 && (first == 0 || f < first)) first = f;
    }
    // Without every partition, the earliest seen may be later than the
    // stream's start (its partition is the missing one): `since` only
    // moves earlier then.
    if (!missing.empty() && q.since > 0) first = first > 0 ? std::min(first, q.since) : q.since;
    if (first == q.since || first == 0) {
      confirmed = missing.empty() && first > 0;
      break;
    }
    q.since = first;
  }
  if (confirmed) {
    std::lock_guard lock(since_mu_);
    if (since_.size() >= 4096) since_.clear();  // (namespaces come and go; a miss costs one more round)
    since_[ns] = q.since;
  }
  engine::TrendingAnswer out;
  if (!replies.empty()) {
    std::vector<engine::TrendingAnswer> parts;
    for (auto& r : replies) parts.push_back(std::move(r.trending));
    out = engine::merge_trending(std::move(parts), k);
  }
  out.coverage.partitions = layout_.partitions;
  out.coverage.missing = std::move(missing);
  return out;
}

service::HotKeysAnswer ClusterNode::hot_keys(const std::string& ns, std::span<const std::string> watch) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::hot_keys;
  q.ns = ns;
  q.min_position = log_position();
  q.wait_ms = static_cast<std::uint32_t>(options_.query_wait.count());
  // Every partition, each watching its own keys.
  std::vector<std::vector<std::string>> watched(layout_.partitions);
  for (const auto& key : watch) watched[service::partition_of(hash_key(key), layout_.partitions)].push_back(key);
  std::vector<std::pair<std::uint32_t, std::string>> requests;
  for (std::uint32_t p = 0; p < layout_.partitions; ++p) {
    q.items = std::move(watched[p]);
    requests.emplace_back(p, encode_query(q));
  }
  std::vector<std::uint32_t> missing;
  auto replies = ask(requests, q.kind, missing);
  service::HotKeysAnswer out;
  bool first = true;
  for (auto& r : replies) {
    auto& h = r.hot;
    if (first) {
      out.ns = h.ns;
      out.threshold = h.threshold;
      out.half_life = h.half_life;
      out.cool_fraction = h.cool_fraction;
      out.evaluated_at = h.evaluated_at;
    }
    // As of the newest evaluation among them: a partition evaluates when its
    // last one is older than --hot-key-interval, unless nothing was counted
    // since and no key is hot (then its older answer still holds now).
    out.evaluated_at = std::max(out.evaluated_at, h.evaluated_at);
    out.complete = out.complete && h.complete;
    for (auto& key : h.items) out.items.push_back(std::move(key));
    for (auto& key : h.watched) out.watched.push_back(std::move(key));
    first = false;
  }
  std::sort(out.items.begin(), out.items.end(),
            [](const engine::HotKey& a, const engine::HotKey& b) { return a.rate != b.rate ? a.rate > b.rate : a.key < b.key; });
  out.coverage.partitions = layout_.partitions;
  out.coverage.missing = std::move(missing);
  if (out.coverage.partial()) out.complete = false;
  return out;
}

std::optional<engine::DistributionAnswer> ClusterNode::distribution(std::string_view name, std::span<const std::string_view> fields, double now,
                                                                    std::optional<double> rate, std::optional<std::size_t> most_probable) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::distribution;
  q.ns = std::string(name);
  q.items.assign(fields.begin(), fields.end());
  if (most_probable) q.k = *most_probable;
  q.now = now;
  q.rate = rate;
  return std::move(ask_owner(q, name).distribution);
}

void ClusterNode::check_incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at) {
  // Against what the owner holds now (no wait for the log): increments of
  // one distribution racing each other may pass together and overshoot
  // the bins limit by what they add. Refused only on the owner's word.
  QueryRequest q;
  q.kind = QueryRequest::Kind::check_incr;
  q.ns = std::string(distribution);
  q.items.assign(fields.begin(), fields.end());
  q.now = received_at;
  q.n = n;
  const std::uint32_t p = service::partition_of(hash_key(distribution), layout_.partitions);
  std::vector<std::uint32_t> missing;
  ask({{p, encode_query(q)}}, q.kind, missing, kCheckWait);
}

std::uint64_t ClusterNode::distributions() {
  QueryRequest q;
  q.kind = QueryRequest::Kind::distributions;
  q.min_position = log_position();
  q.wait_ms = static_cast<std::uint32_t>(options_.query_wait.count());
  std::vector<std::uint32_t> missing;
  const auto replies = ask_all(q, missing);
  if (!missing.empty()) throw service::partitions_missing(missing, kRetry);
  std::uint64_t n = 0;
  for (const auto& r : replies) n += r.count;
  return n;
}

std::vector<std::pair<std::string, engine::NamespaceStats>> ClusterNode::stats(std::span<const std::string> names, engine::Coverage& coverage) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::stats;
  q.items.assign(names.begin(), names.end());
  q.min_position = log_position();
  q.wait_ms = static_cast<std::uint32_t>(options_.query_wait.count());
  std::vector<std::uint32_t> missing;
  const auto replies = ask_all(q, missing);
  std::map<std::string, engine::NamespaceStats> by_name;
  const std::set<std::string_view> asked(names.begin(), names.end());
  for (const auto& r : replies) {
    for (const auto& [name, part] : r.stats) {
      // Only what was asked: a partition of an older build reads a
      // question naming namespaces as one for them all.
      if (asked.empty() || asked.contains(name)) by_name[name].add(part);
    }
  }
  coverage.partitions = layout_.partitions;
  // The partitions' accuracy audits, asked of those that answered (a
  // question of its own: an older build reads stats replies without them).
  // While a node of an older build is live (which refuses the question)
  // none are asked; an owner that does not answer now leaves its figures
  // out; the stats stand either way.
  q.kind = QueryRequest::Kind::audit;
  const std::string payload = encode_query(q);
  std::vector<std::pair<std::uint32_t, std::string>> requests;
  for (std::uint32_t p = 0; p < layout_.partitions && older_nodes().empty(); ++p) {
    if (std::find(missing.begin(), missing.end(), p) == missing.end()) requests.emplace_back(p, payload);
  }
  try {
    std::vector<std::uint32_t> unaudited;
    for (const auto& r : requests.empty() ? std::vector<QueryReply>{} : ask(requests, q.kind, unaudited)) {
      for (const auto& [name, part] : r.stats) {
        if (auto it = by_name.find(name); it != by_name.end()) it->second.add_audit(part);
      }
    }
  } catch (const std::exception& e) {
    log_->warn("the partitions' accuracy audits: {}", e.what());
  }
  coverage.missing = std::move(missing);
  return {std::make_move_iterator(by_name.begin()), std::make_move_iterator(by_name.end())};
}

service::HistorySeries ClusterNode::history(const std::string& ns, std::string_view item, const std::optional<engine::ViewSpec>& view,
                                            double from, double to, std::size_t max_points) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::history;
  q.ns = ns;
  q.view = view;
  q.k = max_points;
  q.items.emplace_back(item);
  q.from = from;
  q.to = to;
  return std::move(ask_owner(q, item).history);
}

}  // namespace ebb::cluster
