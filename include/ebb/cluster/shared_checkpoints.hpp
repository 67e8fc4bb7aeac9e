#pragma once
// A partition's checkpoints shared through JetStream, so that whichever
// node owns the partition next (a join, a death, a node started on an
// empty disk) resumes from the newest of them instead of replaying the
// stream from its start (docs/cluster.md, "Shared checkpoints"):
//
//   stream <stream>_checkpoints
//     <prefix>.k.<p>.d   a checkpoint's bytes (a shared_checkpoint blob: the
//                        manifest and the state files it names) in chunks
//                        of at most one message each
//     <prefix>.k.<p>.h   heads (shared_checkpoint_head blobs): which stream,
//                        partition and log position the checkpoint includes,
//                        the sequences of its chunks, and the head before it
//
// An upload sends the chunks, then the head; then keeps the newest two
// heads and drops the chunks older than both of theirs. A download reads
// the newest head, and the one before when the newest cannot be read whole
// (during a hand-over two owners upload, and one's cleaning may drop the
// other's chunks); a checkpoint of another stream (deleted and made again)
// is never used.
#include <spdlog/logger.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/cluster/cluster_layout.hpp"
#include "ebb/cluster/nats_client.hpp"
#include "ebb/storage/checkpoint_store.hpp"

namespace ebb::cluster {

struct SharedCheckpointHead {
  std::int64_t stream_created_ns = 0;  // the events stream it is of
  std::uint32_t partitions = 0;
  std::uint32_t partition = 0;
  std::uint64_t position = 0;  // the commit subject's sequence it includes
  std::string node_id;         // who uploaded it
  double written_at = 0;       // seconds since the epoch
  std::uint64_t bytes = 0;     // of the checkpoint blob
  std::vector<std::uint64_t> chunks;  // its chunks' sequences, in order
  std::uint64_t previous = 0;         // the head before it when it was written (0: none)
  friend bool operator==(const SharedCheckpointHead&, const SharedCheckpointHead&) = default;
};

// Blob kind 17, version 1 (docs/formats.md); decode throws FormatError.
std::string encode_head(const SharedCheckpointHead& head);
SharedCheckpointHead decode_head(std::string_view blob);
// Blob kind 16, version 1: u64 start, str manifest, u32 n, n x (str state file, str bytes).
std::string encode_checkpoint(const storage::CheckpointCopy& copy);
storage::CheckpointCopy decode_checkpoint(std::string_view blob);

// One partition's shared checkpoints. Every call blocks on JetStream.
class SharedCheckpoints {
 public:
  SharedCheckpoints(NatsClient& client, ClusterLayout layout, std::uint32_t partition, std::int64_t stream_created_ns, std::string node_id);

  // Uploads `copy` (its start: the position it includes), then drops what
  // no longer needs keeping. Throws NatsError (nothing newer is shared
  // then; the older checkpoints stay usable).
  void upload(const storage::CheckpointCopy& copy);

  struct Found {
    SharedCheckpointHead head;
    storage::CheckpointCopy copy;
  };
  // The newest shared checkpoint of this partition including more than
  // `after` and at most `newest` (the stream's newest commit: one past it
  // counts records the stream no longer has); nullopt when there is none
  // or it cannot be read (why: logged).
  std::optional<Found> newest(std::uint64_t after, std::uint64_t newest, spdlog::logger& log);

 private:
  std::optional<SharedCheckpointHead> head_at(std::uint64_t sequence);  // nullopt: gone, or not this partition's
  std::optional<std::pair<std::uint64_t, SharedCheckpointHead>> last_head();
  storage::CheckpointCopy fetch(const SharedCheckpointHead& head);  // FormatError / NatsError

  NatsClient& client_;
  const ClusterLayout layout_;
  const std::uint32_t partition_;
  const std::int64_t stream_created_ns_;
  const std::string node_id_;
};

}  // namespace ebb::cluster
