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
//                        and the sequences of its chunks
//     <prefix>.k.catalog.d / .h   the same for the catalog's snapshots
//                        (catalog_snapshot.hpp), the stream's retention
//                        starts from (docs/cluster.md, "Retention")
//
// An upload sends the chunks, then the head; then keeps the newest two
// heads and drops the chunks older than the oldest either names. A
// download reads the newest head, and the other kept one when the newest
// cannot be read whole (during a hand-over two owners upload, and one's
// cleaning may drop the other's chunks); a checkpoint of another stream
// (deleted and made again) is never used.
#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
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
  std::uint32_t partition = 0;  // == partitions: the catalog
  std::uint64_t position = 0;   // the commit subject's sequence it includes
  std::int64_t position_time_ns = 0;  // when that record was stored (0: unknown)
  std::string node_id;         // who uploaded it
  double written_at = 0;       // seconds since the epoch
  std::uint64_t bytes = 0;     // of the checkpoint blob
  std::vector<std::uint64_t> chunks;  // its chunks' sequences, in order
  friend bool operator==(const SharedCheckpointHead&, const SharedCheckpointHead&) = default;
};

// Blob kind 17, version 1 (docs/formats.md); decode throws FormatError.
std::string encode_head(const SharedCheckpointHead& head);
SharedCheckpointHead decode_head(std::string_view blob);
// Blob kind 16, version 1: u64 start, str manifest, u32 n, n x (str state file, str bytes).
std::string encode_checkpoint(const storage::CheckpointCopy& copy);
storage::CheckpointCopy decode_checkpoint(std::string_view blob);

// One partition's shared checkpoints (or, as slot `partitions`, the
// catalog's snapshots). Every call blocks on JetStream.
class SharedCheckpoints {
 public:
  SharedCheckpoints(NatsClient& client, ClusterLayout layout, std::uint32_t slot, std::int64_t stream_created_ns, std::string node_id);

  // Uploads `blob`, which includes the log to `position` (stored at
  // `position_time_ns`), unless the newest head is as new already (false);
  // then drops what no longer needs keeping. Throws NatsError, FormatError
  // (nothing newer is shared then; the older stay usable).
  bool upload(std::uint64_t position, std::int64_t position_time_ns, std::string_view blob);
  // The same for a partition's checkpoint.
  bool upload(const storage::CheckpointCopy& copy, std::int64_t position_time_ns) {
    return upload(copy.start_lsn, position_time_ns, encode_checkpoint(copy));
  }

  struct Found {
    SharedCheckpointHead head;
    std::string blob;
  };
  // The newest shared blob of this slot including more than `after` and
  // at most `newest` (the stream's newest commit: one past it counts
  // records the stream no longer has); nullopt when there is none or it
  // cannot be read (why: logged). `decode` checks the blob (throws
  // FormatError: the head before it is tried).
  std::optional<Found> newest(std::uint64_t after, std::uint64_t newest_commit, spdlog::logger& log,
                              const std::function<void(std::string_view)>& check = nullptr);
  // The heads kept (at most two; newest first), of any stream; one that
  // does not decode is left out. Throws NatsError.
  std::vector<SharedCheckpointHead> kept_heads();
  // Those of this stream and slot: what a new owner may start from.
  std::vector<SharedCheckpointHead> usable_heads();

 private:
  bool ours(const SharedCheckpointHead& h) const noexcept;
  std::string fetch(const SharedCheckpointHead& head);  // FormatError / NatsError
  std::string slot_name() const;

  NatsClient& client_;
  const ClusterLayout layout_;
  const std::uint32_t slot_;
  const std::int64_t stream_created_ns_;
  const std::string node_id_;
};

}  // namespace ebb::cluster
