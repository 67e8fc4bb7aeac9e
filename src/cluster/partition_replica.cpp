// One partition's replica (cluster/partition_replica.hpp).
#include "ebb/cluster/partition_replica.hpp"

#include "ebb/cluster/cluster_records.hpp"
#include "ebb/core/error.hpp"

namespace ebb::cluster {
namespace {

using std::chrono::milliseconds;

// Parts read ahead this much older than the commit being applied leave the
// read-ahead (most are orphans; one committed later is read by sequence).
constexpr std::int64_t kOrphanAgeNs = std::int64_t{60} * 1000 * 1000 * 1000;
// Parts held ahead at most (orphans past it are dropped oldest first).
constexpr std::size_t kMaxPartsAhead = 100'000;
// How long a commit waits for its part through the consumer before it
// reads it by sequence (it is in the stream already).
constexpr auto kPartWait = std::chrono::seconds(30);


// A partition's service: the node's limits and caching; with a data
// directory, checkpoints there (JetStream is its log) and the history of
// its own items (history.sqlite3), as a single node keeps it.
service::ServiceOptions replica_options(const service::ServiceOptions& node, bool with_checkpoints) {
  service::ServiceOptions o;
  o.limits = node.limits;
  o.answer_cache_ttl = node.answer_cache_ttl;
  o.hot_key_interval = node.hot_key_interval;
  o.audit_interval = node.audit_interval;
  o.distribution_expire_interval = node.distribution_expire_interval;
  o.distributions = node.distributions;
  o.sketch_share = node.sketch_share;
  o.history_interval = 0;
  if (with_checkpoints) {
    o.data_dir = node.data_dir;
    o.history_interval = node.history_interval;
    o.history_retention = node.history_retention;
    o.history_min_free_bytes = node.history_min_free_bytes;
  }
  o.external_log = true;
  return o;
}

}  // namespace

PartitionReplica::PartitionReplica(NatsClient& client, const ClusterLayout& layout, std::uint32_t partition, service::ServiceOptions options,
                                   std::shared_ptr<spdlog::logger> log, std::shared_ptr<ChunkBudget> chunks,
                                   std::optional<Sharing> sharing)
    : request_chunks_(ChunkAssembler::Limits{}, std::move(chunks)),
      client_(client),
      layout_(layout),
      partition_(partition),
      log_(std::move(log)),
      checkpoint_interval_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(std::max(options.checkpoint_interval, 0.05)))),
      hot_key_interval_(options.hot_key_interval),
      audit_interval_(options.audit_interval),
      expire_interval_(options.distribution_expire_interval) {
  start_target_ = client_.last_sequence(layout_.stream, layout_.commit_subject(), milliseconds(5000));
  if (sharing && options.data_dir) {
    shared_ = std::make_unique<SharedCheckpoints>(client_, layout_, partition_, sharing->stream_created_ns, sharing->node_id);
    share_interval_ = sharing->interval;
    gaps_ = GapGuard(sharing->retention);
    last_share_ = std::chrono::steady_clock::now();
  }
  // The newest checkpoint (none: empty), then the log after it. A partition
  // whose checkpoints cannot be used is still served, from memory: the
  // stream has its whole log.
  const std::uint64_t from = open_service(options);
  // Its checkpoint (its own, or shared) older than the stream's start: no
  // shared checkpoint could be read that the stream still backs.
  if (behind_stream_start(from + 1)) {
    queries_ = std::make_unique<AsyncSubscription>(client_.connection(), layout_.query_subject(partition_), &PartitionReplica::on_request, this);
    return;  // (answers "partition_gapped"; ClusterNode takes it again)
  }
  if (from > 0) log_->info("partition {}: resuming from its checkpoint at sequence {} (the log is at {})", partition_, from, start_target_);
  position_ = from;
  checkpointed_ = from;
  last_checkpoint_ = std::chrono::steady_clock::now();
  if (from >= start_target_) caught_up_ = true;
  // A commit after `from` may name parts before it: those are read by
  // sequence (take_part), the read-ahead starts after `from`.
  parts_read_ = from;
  commits_ = client_.pull_from(layout_.stream, layout_.commit_subject(), from + 1);
  parts_ = client_.pull_from(layout_.stream, layout_.part_subject(partition_), from + 1);
  queries_ = std::make_unique<AsyncSubscription>(client_.connection(), layout_.query_subject(partition_), &PartitionReplica::on_request, this);
  uploads_ = shared_ && checkpoints_ && share_interval_.count() > 0;  // (set before the threads that read it start)
  if (uploads_) uploader_ = std::thread([this] { upload_loop(); });
  try {
    follower_ = std::thread([this] { follow(); });
  } catch (...) {
    stop_uploader();  // (a joinable thread left behind would end the process)
    throw;
  }
}

void PartitionReplica::stop_uploader() {
  if (!uploader_.joinable()) return;
  {
    std::lock_guard lock(upload_mu_);
    upload_stop_ = true;
  }
  upload_cv_.notify_all();
  uploader_.join();  // (after the upload under way, if any)
}

std::uint64_t PartitionReplica::open_service(const service::ServiceOptions& options) {
  checkpoints_ = options.data_dir.has_value();
  data_dir_ = options.data_dir;
  if (checkpoints_) {
    const auto& dir = *options.data_dir;
    try {
      service_ = std::make_unique<service::Service>(replica_options(options, true), log_);
      std::uint64_t from = service_->recover().log_position;
      if (from > start_target_) {
        // The stream lost its tail (purged, or a NATS server lost unsynced
        // writes): these states count records it no longer has, and new
        // records would reuse their sequences. Start the partition afresh
        // (from a shared checkpoint the stream still backs, if any).
        log_->error("partition {}: its checkpoint in {} includes the log to sequence {}, past the stream's newest commit {} (was the "
                    "stream purged?); dropped, the partition is replayed from the stream",
                    partition_, dir.string(), from, start_target_);
        service_.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        service_ = std::make_unique<service::Service>(replica_options(options, true), log_);
        from = service_->recover().log_position;
      }
      shared_position_ = from;  // (what it has need not be shared again)
      return take_shared(options, from);
    } catch (const std::exception& e) {
      // An unwritable or full directory, or another process holding it.
      log_->error("partition {}: its checkpoints in {} cannot be used ({}); served from memory, replayed from the stream", partition_,
                  dir.string(), e.what());
      checkpoints_ = false;
    }
  }
  service_ = std::make_unique<service::Service>(replica_options(options, false), log_);
  return service_->recover().log_position;  // 0: nothing persisted
}

std::uint64_t PartitionReplica::take_shared(const service::ServiceOptions& options, std::uint64_t own) {
  // Another node's newer checkpoint of this partition (it owned it last):
  // copied in as this directory's newest, then loaded.
  // (A copy that is not whole, names files outside its folder or holds a
  // state whose checksum fails is never written: the other kept head is
  // tried.)
  std::optional<storage::CheckpointCopy> copy;  // the found blob, decoded once
  auto found = shared_ ? shared_->newest(own, start_target_, *log_,
                                         [&](std::string_view blob) {
                                           copy = decode_checkpoint(blob);
                                           storage::check_checkpoint(*copy);
                                         })
                       : std::nullopt;
  if (!found) return own;
  const auto& dir = *options.data_dir;
  std::vector<std::filesystem::path> written;
  try {
    service_.reset();
    written = storage::write_checkpoint(dir, *copy);
  } catch (const std::exception& e) {
    // (A full disk, say: the directory's own newest is as it was.)
    log_->error("partition {}: the checkpoint {} shared at sequence {} cannot be copied into {} ({}); resuming from this node's own at {}",
                partition_, found->head.node_id, found->head.position, dir.string(), e.what(), own);
  }
  service_ = std::make_unique<service::Service>(replica_options(options, true), log_);
  std::uint64_t from = service_->recover().log_position;
  if (from == found->head.position) {
    log_->info("partition {}: took the checkpoint {} shared at sequence {} (this node's own was at {})", partition_, found->head.node_id,
               found->head.position, own);
    shared_position_ = from;
    return from;
  }
  if (!written.empty()) {
    // It did not load (a state this build cannot read, say): gone again,
    // so that no later checkpoint of this node names its files.
    log_->error("partition {}: the checkpoint {} shared at sequence {} did not load; resuming from this node's own at {}", partition_,
                found->head.node_id, found->head.position, own);
    service_.reset();
    for (const auto& path : written) {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
    service_ = std::make_unique<service::Service>(replica_options(options, true), log_);
    from = service_->recover().log_position;
  }
  return from;
}

PartitionReplica::~PartitionReplica() {
  stop_ = true;
  {
    std::lock_guard lock(mu_);
  }
  moved_.notify_all();  // a query waiting for this replica to catch up gives up now
  queries_.reset();     // returns once no query callback runs on this object
  if (follower_.joinable()) follower_.join();
  stop_uploader();
  checkpoint(true);  // a partition handed over, or a clean stop: the next owner, here or (shared) elsewhere, resumes from here
  // (Not after an upload that just failed: NATS is not answering, and a
  // second wait for it would hold the hand-over, and a stop, longer.)
  if (uploads_ && !upload_failed_ && checkpointed_ > shared_position_.load()) upload_newest();
  if (checkpoints_ && checkpointed_ > 0 && checkpointed_ == position()) log_->info("partition {}: let go, checkpointed at sequence {}", partition_, checkpointed_);
}

void PartitionReplica::checkpoint(bool now) {
  if (!checkpoints_ || gapped()) return;  // (a gapped replica's state lacks records: never written, never shared)
  const std::uint64_t p = position();
  const auto t = std::chrono::steady_clock::now();
  if (p != checkpointed_ && (now || t - last_checkpoint_ >= checkpoint_interval_)) {
    last_checkpoint_ = t;
    try {
      // Between records: everything up to p is applied, nothing after it.
      service_->checkpoint_at(p);
      checkpointed_ = p;
    } catch (const std::exception& e) {
      // The partition still counts (JetStream holds the log): a restart
      // replays more. Logged at every attempt, each interval.
      log_->error("partition {}: checkpoint at sequence {} failed: {}", partition_, p, e.what());
    }
  }
  if (!now) share();
}

void PartitionReplica::share() {
  if (!uploads_ || checkpointed_ <= shared_position_.load()) return;
  const auto t = std::chrono::steady_clock::now();
  if (t - last_share_ < share_interval_) return;
  last_share_ = t;
  {
    std::lock_guard lock(upload_mu_);
    upload_wanted_ = true;
  }
  upload_cv_.notify_one();
}

void PartitionReplica::upload_loop() {
  // After an upload that took T, the next waits at least kPace x T (also
  // past the interval): each upload cleans away the chunks of the heads
  // before the last two, and a new owner reading one (about as long as it
  // took to send) needs it to stay meanwhile. (A short interval and a large
  // partition otherwise kept every kept head stale by the time a reader got
  // to its last chunk: no hand-over while the owner lived.)
  constexpr int kPace = 10;
  for (;;) {
    {
      std::unique_lock lock(upload_mu_);
      upload_cv_.wait(lock, [&] { return upload_wanted_ || upload_stop_; });
      if (upload_stop_) return;
      upload_wanted_ = false;
    }
    const auto started = std::chrono::steady_clock::now();
    upload_newest();
    std::unique_lock lock(upload_mu_);
    if (upload_cv_.wait_for(lock, kPace * (std::chrono::steady_clock::now() - started), [&] { return upload_stop_; })) return;
  }
}

void PartitionReplica::upload_newest() {
  // (Called only where uploads_ holds. A gapped replica shares nothing
  // more: its checkpoints may be older than the stream's start, and
  // another node takes the partition over.)
  if (gapped()) return;
  try {
    // The newest in the directory. The follower may write newer ones
    // meanwhile: the store keeps the two newest, so one written during the
    // read leaves this one readable, and a read that two outran is made
    // again (read_newest_checkpoint).
    const auto copy = storage::read_newest_checkpoint(*data_dir_);
    if (!copy) {
      log_->debug("partition {}: no checkpoint to share could be read", partition_);
      return;
    }
    if (copy->start_lsn <= shared_position_.load()) return;
    // When the record it includes last was stored: the stream keeps what
    // later commits may name from about then (docs/cluster.md, "Retention").
    const MsgPtr record = client_.message_at(layout_.stream, copy->start_lsn, milliseconds(5000));
    if (shared_->upload(*copy, record ? natsMsg_GetTime(record.get()) : 0)) {
      log_->debug("partition {}: shared its checkpoint at sequence {}", partition_, copy->start_lsn);
    }
    shared_position_.store(copy->start_lsn);
    upload_failed_ = false;
  } catch (const std::exception& e) {
    // The older shared checkpoints stay usable: a new owner replays more.
    log_->warn("partition {}: sharing its checkpoint failed: {}", partition_, e.what());
    upload_failed_ = true;
  }
}

bool PartitionReplica::wait_for(std::uint64_t p, std::chrono::milliseconds wait) const {
  if (position() >= p) return true;
  std::unique_lock lock(mu_);
  moved_.wait_for(lock, wait, [&] { return position() >= p || stop_.load() || gapped(); });
  return position() >= p;
}

bool PartitionReplica::apply(const MsgMeta& meta, std::string_view payload) {
  try {
    if (is_commit(payload)) {
      const CommitRecord commit = decode_commit(payload);
      const service::Service::ConfigRevisions configs(commit.configs.begin(), commit.configs.end());
      // This partition's part: one message, or pieces of a part too large
      // for one, put back together and counted at once (all or nothing).
      std::vector<MsgPtr> pieces;
      bool whole = true;
      for (const auto& ref : commit.parts) {
        if (ref.partition != partition_) continue;
        if (ref.sequence >= meta.sequence) {
          // A part is in the log before its commit: not a commit ebb wrote.
          log_->error("partition {}: commit {} names part {}, at or after itself; not counted", partition_, meta.sequence, ref.sequence);
          whole = false;
          continue;
        }
        auto part = take_part(ref.sequence, meta.timestamp_ns);
        if (!part && stop_) return false;
        if (!part && behind_stream_start(ref.sequence)) return false;  // (retention dropped it: this replica is gapped)
        if (!part) {
          log_->error("partition {}: commit {} names part {}, which the stream no longer holds; not counted", partition_, meta.sequence,
                      ref.sequence);
          whole = false;
          continue;
        }
        pieces.push_back(std::move(part));
      }
      if (!whole && !pieces.empty()) {
        log_->error("partition {}: commit {}: its part here is not whole; none of it is counted", partition_, meta.sequence);
        pieces.clear();
      }
      if (!pieces.empty()) {
        try {
          // The compact batch layout is the local log's: the stream carries
          // type 1, which every release's nodes read (one refusing what
          // another counts would split the replicas).
          for (const auto& piece : pieces) {
            const auto data = msg_data(piece.get());
            if (!data.empty() && static_cast<std::uint8_t>(data.front()) == service::kCompactBatchByte) {
              throw FormatError("a compact batch record (type 7) belongs in a local log, not in the stream");
            }
          }
          if (pieces.size() == 1) {
            service_->apply_record(meta.sequence, msg_data(pieces.front().get()), &configs, commit.clocks);
          } else {
            service::BatchRecord joined;
            for (const auto& piece : pieces) {
              service::BatchRecord r = service::decode_batch(msg_data(piece.get()));  // (views into the pieces, alive here)
              joined.received_at = r.received_at;
              for (auto& g : r.groups) {
                if (joined.groups.empty() || joined.groups.back().ns != g.ns) joined.groups.push_back({g.ns, {}});
                auto& events = joined.groups.back().events;
                events.insert(events.end(), g.events.begin(), g.events.end());
              }
            }
            std::string payload;
            service::encode_batch(payload, joined);
            service_->apply_record(meta.sequence, payload, &configs, commit.clocks);
          }
        } catch (const std::bad_alloc&) {
          throw;
        } catch (const std::exception& e) {
          // (Every replica skips it alike; the clocks below still move.)
          log_->error("partition {}: the part of commit {} does not decode ({}); skipped", partition_, meta.sequence, e.what());
        }
      }
      // Clocks move in every partition alike, a part here or not (after
      // it: the part was checked against the writer's clock).
      if (!commit.clocks.empty()) service_->advance_event_clocks(meta.sequence, commit.clocks, configs);
    } else if (is_merge(payload)) {
      // This partition's part of the destination: the sum of its parts of
      // the sources (their items are this partition's alone).
      const MergeRecord merge = decode_merge(payload);
      std::vector<std::string> sources;
      std::vector<double> weights;
      for (const auto& [source, weight] : merge.sources) {
        sources.push_back(source);
        weights.push_back(weight);
      }
      service_->apply_merge(meta.sequence, merge.destination, sources, weights,
                            service::Service::ConfigRevisions(merge.configs.begin(), merge.configs.end()));
    } else {
      service_->apply_record(meta.sequence, payload);
    }
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    // Not a record ebb wrote (or a bug): every replica skips it alike.
    log_->error("partition {}: record {} does not decode ({}); skipped", partition_, meta.sequence, e.what());
  }
  return true;
}

bool PartitionReplica::behind_stream_start(std::uint64_t needed) {
  std::uint64_t first = 0;
  try {
    first = client_.first_sequence(layout_.stream);
  } catch (const std::exception&) {
    return false;  // (unknown now: asked again later)
  }
  if (needed >= first) return false;
  log_->error("partition {}: the stream starts at sequence {}, past {} which it still needs (retention dropped it while this replica was "
              "behind): it stops counting and answering, and is taken again from the newest shared checkpoint",
              partition_, first, needed);
  gapped_.store(true, std::memory_order_release);
  {
    std::lock_guard lock(mu_);
  }
  moved_.notify_all();  // (queries waiting for it give up)
  return true;
}

void PartitionReplica::follow() {
  auto last_data = std::chrono::steady_clock::now();
  while (!stop_) {
    std::vector<MsgPtr> msgs;
    try {
      msgs = client_.fetch(commits_.get(), 256, milliseconds(200));
      if (!msgs.empty()) {
        last_data = std::chrono::steady_clock::now();
      } else if (client_.reader_stuck(layout_.stream, layout_.commit_subject(), position(), last_data)) {
        log_->warn("partition {}: its reader of the log brings nothing though the log is past {} (a NATS server gone?): made again", partition_,
                   position());
        commits_ = client_.pull_from(layout_.stream, layout_.commit_subject(), position() + 1);
        continue;
      }
    } catch (const std::exception& e) {
      // The connection is down, or the server forgot the consumer (idle
      // past its threshold): resume from where this replica stands.
      log_->warn("partition {}: reading the log failed ({}); resuming from sequence {}", partition_, e.what(), position() + 1);
      std::this_thread::sleep_for(milliseconds(250));
      if (behind_stream_start(position() + 1)) return;
      try {
        commits_ = client_.pull_from(layout_.stream, layout_.commit_subject(), position() + 1);
      } catch (const std::exception&) {
      }
      continue;
    }
    // A replica left behind the stream's start (paused, or cut off from
    // NATS, longer than retention keeps) would skip what was dropped
    // unawares (a reader below the start is moved up to it): asked after
    // the records came and before they apply, the start tells whether
    // anything after this replica's position went first; if so, it stops
    // (ClusterNode takes it again from a shared checkpoint).
    // (Asked only when something after the position could be gone: gap_guard.hpp.)
    if (!msgs.empty() && gaps_.must_ask()) {
      if (behind_stream_start(position() + 1)) return;
      gaps_.asked();  // (an answer, or NATS not answering: asked again at the next fetch past kRecheck)
    }
    for (std::size_t i = 0; i < msgs.size();) {
      MsgMeta meta;
      try {
        meta = msg_meta(msgs[i].get());
      } catch (const std::exception& e) {
        log_->error("partition {}: a message without JetStream metadata ({}); skipped", partition_, e.what());
        ++i;
        continue;
      }
      try {
        if (!apply(meta, msg_data(msgs[i].get()))) return;  // stopping: the position stays before it
      } catch (const std::bad_alloc&) {
        // Not the record's doing (other nodes apply it), so never skipped,
        // which would make this replica differ from the others: applied
        // again once memory allows (what was counted of it is not counted
        // twice: each namespace's part skips a record it holds already).
        log_->error("partition {}: out of memory applying record {}; retried in a second (queries past it wait meanwhile)", partition_,
                    meta.sequence);
        std::unique_lock lock(mu_);
        moved_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_.load(); });
        if (stop_) return;
        continue;
      }
      position_.store(meta.sequence, std::memory_order_release);
      gaps_.applied(meta.timestamp_ns);
      if (meta.sequence >= start_target_) caught_up_.store(true, std::memory_order_release);
      ++i;
    }
    if (!msgs.empty()) {
      {
        std::lock_guard lock(mu_);
      }
      moved_.notify_all();
    }
    checkpoint(false);
    housekeeping();
  }
}

void PartitionReplica::housekeeping() {
  // A single node's evaluator and expiry threads, on the applying thread:
  // hot keys turn hot (and are logged) as the records come, not only when
  // asked; idle distributions are dropped as a single node drops them.
  const auto t = std::chrono::steady_clock::now();
  auto due = [&](double interval, std::chrono::steady_clock::time_point& last) {
    if (interval <= 0 || t - last < std::chrono::duration<double>(interval)) return false;
    last = t;
    return true;
  };
  try {
    if (!history_started_ && caught_up()) {
      service_->start_history();  // (no-op without history)
      history_started_ = true;
    }
    if (due(hot_key_interval_, last_hot_keys_)) service_->evaluate_hot_keys();
    if (due(expire_interval_, last_expiry_)) service_->expire_idle_distributions();
    if (due(audit_interval_, last_audit_)) service_->audit_namespaces();
  } catch (const std::exception& e) {
    log_->error("partition {}: housekeeping failed: {}", partition_, e.what());
  }
}

MsgPtr PartitionReplica::take_part(std::uint64_t seq, std::int64_t commit_time_ns) {
  // Parts are read ahead through the partition's consumer (the common
  // case: in order, in batches); one the read-ahead no longer holds (an
  // older batch's, committed late: a retry) is read by its sequence. Which
  // part a commit names never depends on timing, only on the stream.
  auto prune = [&] {
    for (auto it = parts_ahead_.begin(); it != parts_ahead_.end();) {
      const bool old = msg_meta(it->second.get()).timestamp_ns < commit_time_ns - kOrphanAgeNs;
      if (!old && parts_ahead_.size() <= kMaxPartsAhead) break;
      it = parts_ahead_.erase(it);
    }
  };
  auto by_sequence = [&]() -> MsgPtr {
    for (int attempt = 0; !stop_; ++attempt) {
      try {
        MsgPtr m = client_.message_at(layout_.stream, seq, milliseconds(5000));
        if (m && layout_.part_subject(partition_) != natsMsg_GetSubject(m.get())) return nullptr;  // not this partition's
        return m;
      } catch (const std::exception& e) {
        log_->warn("partition {}: reading part {} failed ({}); retrying", partition_, seq, e.what());
        std::this_thread::sleep_for(milliseconds(std::min(250 * (attempt + 1), 2000)));
      }
    }
    return nullptr;
  };
  if (auto it = parts_ahead_.find(seq); it != parts_ahead_.end()) {
    MsgPtr m = std::move(it->second);
    parts_ahead_.erase(it);
    prune();
    return m;
  }
  if (seq <= parts_read_) return by_sequence();
  auto renew = [&] {
    try {
      parts_ = client_.pull_from(layout_.stream, layout_.part_subject(partition_), parts_read_ + 1);
    } catch (const std::exception& e) {
      log_->warn("partition {}: reading its parts again from sequence {} failed ({}); parts are read by sequence meanwhile", partition_,
                 parts_read_ + 1, e.what());
    }
  };
  // The server deletes a consumer idle past its threshold: the parts'
  // consumer, read only when a commit names a part, is made again when it
  // has been idle half that long.
  if (std::chrono::steady_clock::now() - last_parts_fetch_ > client_.consumer_idle() / 2) {
    renew();
    last_parts_data_ = std::chrono::steady_clock::now();
  }
  const auto deadline = std::chrono::steady_clock::now() + kPartWait;
  while (!stop_ && std::chrono::steady_clock::now() < deadline) {
    std::vector<MsgPtr> msgs;
    try {
      msgs = client_.fetch(parts_.get(), 256, milliseconds(200));
      last_parts_fetch_ = std::chrono::steady_clock::now();
      if (!msgs.empty()) last_parts_data_ = last_parts_fetch_;
    } catch (const std::exception& e) {
      log_->warn("partition {}: reading its parts failed ({}); retrying", partition_, e.what());
      std::this_thread::sleep_for(milliseconds(250));
      try {
        parts_ = client_.pull_from(layout_.stream, layout_.part_subject(partition_), parts_read_ + 1);
      } catch (const std::exception&) {
      }
      continue;
    }
    MsgPtr found;
    for (auto& m : msgs) {
      const auto s = msg_meta(m.get()).sequence;
      parts_read_ = std::max(parts_read_, s);
      if (s == seq) found = std::move(m);
      else parts_ahead_.emplace(s, std::move(m));  // an earlier batch's, committed later, or an orphan
    }
    if (found) {
      prune();
      return found;
    }
    if (parts_read_ > seq) break;  // read past it
    if (msgs.empty()) {
      // The commit names this part, so the stream holds it: nothing to
      // read means the consumer is slow, or gone (deleted by the server
      // after its idle time, or on a NATS server that is gone): this part
      // is read by its sequence, and the consumer made again if it has
      // brought nothing for a reader's silence (NatsClient::reader_stuck).
      if (std::chrono::steady_clock::now() - last_parts_data_ > NatsClient::kReaderSilence) {
        renew();
        last_parts_data_ = std::chrono::steady_clock::now();  // (once a silence)
      }
      break;
    }
  }
  return by_sequence();
}

void PartitionReplica::on_request(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  MsgPtr held(msg);
  try {
    static_cast<PartitionReplica*>(closure)->answer(msg);
  } catch (...) {  // (out of memory answering): nothing may leave a libnats callback; the asker times out
  }
}

void PartitionReplica::answer(natsMsg* request) {
  const char* reply_to = natsMsg_GetReply(request);
  if (!reply_to || !*reply_to) return;
  const auto question = request_chunks_.add(reply_to, request);  // (a question too large for one message comes in chunks)
  if (!question) return;
  const std::string out = reply(*question);
  const natsStatus sent = publish_chunked(client_.connection(), reply_to, "", out, chunk_bytes(client_.connection()));
  if (sent != NATS_OK) log_->warn("partition {}: cannot send an answer of {} bytes: {}", partition_, out.size(), natsStatus_GetText(sent));
}

std::string PartitionReplica::reply(std::string_view question, std::chrono::steady_clock::time_point deadline) {
  QueryRequest q;
  QueryReply reply;
  reply.partition = partition_;
  std::string out;
  try {
    q = decode_query(question);
    if (gapped()) {
      throw service::ServiceError(service::ErrorKind::unavailable, "partition_gapped",
                                  "partition " + std::to_string(partition_) + " fell behind the stream's start and is being taken again");
    }
    auto wait = milliseconds(std::min<std::uint32_t>(q.wait_ms, 60'000));
    if (deadline != std::chrono::steady_clock::time_point::max()) {
      wait = std::clamp(std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()), milliseconds(0), wait);
    }
    if (!wait_for(q.min_position, wait)) {
      throw service::ServiceError(service::ErrorKind::unavailable, "partition_behind",
                                  "partition " + std::to_string(partition_) + " has applied the log to " + std::to_string(position()) + " of " +
                                      std::to_string(q.min_position));
    }
    if (q.kind == QueryRequest::Kind::top && q.as_of > 0) {
      const auto k = q.k ? std::optional<std::size_t>(static_cast<std::size_t>(*q.k)) : std::nullopt;
      reply.top = service_->top_at(q.ns, q.view, k, q.as_of);
      out = encode_reply(reply, q.kind);
    } else if (q.kind == QueryRequest::Kind::top) {
      const auto k = q.k ? std::optional<std::size_t>(static_cast<std::size_t>(*q.k)) : std::nullopt;
      out = *service_->top_rendered(q.ns, q.view, k, "cluster", [&](const engine::TopKAnswer& a) {
        QueryReply r;
        r.partition = partition_;
        r.top = a;
        return encode_reply(r, QueryRequest::Kind::top);
      });
    } else if (q.kind == QueryRequest::Kind::counts) {
      reply.points = service_->counts(q.ns, q.items, q.view, reply.top, q.as_of > 0 ? std::optional<double>(q.as_of) : std::nullopt);
      out = encode_reply(reply, q.kind);
    } else if (q.kind == QueryRequest::Kind::trending) {
      auto positive = [](double d) { return d > 0 ? std::optional<double>(d) : std::nullopt; };
      const auto k = q.k ? std::optional<std::size_t>(static_cast<std::size_t>(*q.k)) : std::nullopt;
      reply.trending = service_->trending(q.ns, positive(q.short_half_life), positive(q.long_half_life), k, q.min_count, positive(q.since));
      out = encode_reply(reply, q.kind);
    } else if (q.kind == QueryRequest::Kind::hot_keys) {
      reply.hot = service_->hot_keys(q.ns, q.items);
      out = encode_reply(reply, q.kind);
    } else if (q.kind == QueryRequest::Kind::distribution) {
      const std::vector<std::string_view> fields(q.items.begin(), q.items.end());
      const auto n = q.k ? std::optional<std::size_t>(static_cast<std::size_t>(*q.k)) : std::nullopt;
      reply.distribution = service_->distribution(q.ns, fields, q.now, q.rate, n);
      out = encode_reply(reply, q.kind);
    } else if (q.kind == QueryRequest::Kind::distributions) {
      reply.count = service_->distributions();
      out = encode_reply(reply, q.kind);
    } else if (q.kind == QueryRequest::Kind::history) {
      if (q.items.size() != 1) throw service::invalid("bad_query", "a history question names one item");
      reply.history = service_->history(q.ns, q.items[0], q.view, q.from, q.to, q.k.value_or(1));
      out = encode_reply(reply, q.kind);
    } else if (q.kind == QueryRequest::Kind::check_incr) {
      const std::vector<std::string_view> fields(q.items.begin(), q.items.end());
      service_->check_incr(q.ns, fields, q.n, q.now);
      out = encode_reply(reply, q.kind);
    } else {
      if (q.items.empty()) {
        for (auto& info : service_->list()) reply.stats.emplace_back(info.spec.config.name, std::move(info.stats));
      } else {
        for (const auto& name : q.items) reply.stats.emplace_back(name, service_->describe(name).stats);
      }
      out = encode_reply(reply, q.kind);
    }
  } catch (const service::ServiceError& e) {
    reply.error = e;
  } catch (const FormatError& e) {
    reply.error = service::invalid("bad_query", e.what());
  } catch (const std::exception& e) {
    reply.error = service::ServiceError(service::ErrorKind::unavailable, "partition_failed", e.what());
  }
  if (reply.error) out = encode_reply(reply, q.kind);
  return out;
}

}  // namespace ebb::cluster
