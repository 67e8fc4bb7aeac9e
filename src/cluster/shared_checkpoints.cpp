// A partition's checkpoints shared through JetStream (cluster/shared_checkpoints.hpp).
#include "ebb/cluster/shared_checkpoints.hpp"

#include <algorithm>
#include <chrono>

#include "ebb/cluster/message_chunks.hpp"
#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"

namespace ebb::cluster {
namespace {

using std::chrono::milliseconds;

constexpr std::uint16_t kHeadVersion = 1;
constexpr std::uint16_t kCheckpointVersion = 1;
constexpr auto kWait = milliseconds(5000);
// A head naming more chunks than this is not one ebb wrote (64 GiB at 1 MiB a chunk).
constexpr std::uint32_t kMaxChunks = 1 << 16;

}  // namespace

std::string encode_head(const SharedCheckpointHead& h) {
  return written([&](BinaryWriter& w) {
    const auto blob = w.begin_blob(BlobKind::shared_checkpoint_head, kHeadVersion);
    w.put<std::int64_t>(h.stream_created_ns);
    w.put<std::uint32_t>(h.partitions);
    w.put<std::uint32_t>(h.partition);
    w.put<std::uint64_t>(h.position);
    w.put_string(h.node_id);
    w.put<double>(h.written_at);
    w.put<std::uint64_t>(h.bytes);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(h.chunks.size()));
    for (const auto seq : h.chunks) w.put<std::uint64_t>(seq);
    w.put<std::uint64_t>(h.previous);
    w.end_blob(blob);
  });
}

SharedCheckpointHead decode_head(std::string_view blob) {
  const auto opened = open_blob(blob, BlobKind::shared_checkpoint_head, kHeadVersion);
  BinaryReader r(opened.payload, "shared checkpoint head");
  SharedCheckpointHead h;
  h.stream_created_ns = r.get<std::int64_t>();
  h.partitions = r.get<std::uint32_t>();
  h.partition = r.get<std::uint32_t>();
  h.position = r.get<std::uint64_t>();
  h.node_id = r.get_string(256);
  h.written_at = r.get<double>();
  h.bytes = r.get<std::uint64_t>();
  const auto n = r.get<std::uint32_t>();
  if (n > kMaxChunks || n > r.remaining() / 8) r.fail("claims " + std::to_string(n) + " chunks");
  h.chunks.resize(n);
  for (auto& seq : h.chunks) seq = r.get<std::uint64_t>();
  h.previous = r.get<std::uint64_t>();
  r.expect_end();
  if (h.partition >= h.partitions) r.fail("partition " + std::to_string(h.partition) + " of " + std::to_string(h.partitions));
  return h;
}

std::string encode_checkpoint(const storage::CheckpointCopy& c) {
  return written([&](BinaryWriter& w) {
    const auto blob = w.begin_blob(BlobKind::shared_checkpoint, kCheckpointVersion);
    w.put<std::uint64_t>(c.start_lsn);
    w.put_string(c.manifest);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(c.states.size()));
    for (const auto& [file, bytes] : c.states) {
      w.put_string(file);
      w.put_string(bytes);
    }
    w.end_blob(blob);
  });
}

storage::CheckpointCopy decode_checkpoint(std::string_view blob) {
  const auto opened = open_blob(blob, BlobKind::shared_checkpoint, kCheckpointVersion);
  BinaryReader r(opened.payload, "shared checkpoint");
  storage::CheckpointCopy c;
  c.start_lsn = r.get<std::uint64_t>();
  c.manifest = r.get_string(r.remaining());
  const auto n = r.get<std::uint32_t>();
  if (n > r.remaining() / 8) r.fail("claims " + std::to_string(n) + " state files");
  for (std::uint32_t i = 0; i < n; ++i) {
    std::string file = r.get_string(4096);
    std::string bytes = r.get_string(r.remaining());
    c.states.emplace_back(std::move(file), std::move(bytes));
  }
  r.expect_end();
  return c;
}

SharedCheckpoints::SharedCheckpoints(NatsClient& client, ClusterLayout layout, std::uint32_t partition, std::int64_t stream_created_ns,
                                     std::string node_id)
    : client_(client), layout_(std::move(layout)), partition_(partition), stream_created_ns_(stream_created_ns), node_id_(std::move(node_id)) {}

void SharedCheckpoints::upload(const storage::CheckpointCopy& copy) {
  const std::string stream = layout_.checkpoint_stream();
  const std::string data_subject = layout_.checkpoint_data_subject(partition_);
  const std::string head_subject = layout_.checkpoint_head_subject(partition_);
  SharedCheckpointHead head;
  head.stream_created_ns = stream_created_ns_;
  head.partitions = layout_.partitions;
  head.partition = partition_;
  head.position = copy.start_lsn;
  head.node_id = node_id_;
  head.written_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  head.previous = client_.last_sequence(stream, head_subject, kWait);
  const std::string blob = encode_checkpoint(copy);
  head.bytes = blob.size();
  const std::size_t chunk = chunk_bytes(client_.connection());
  for (std::size_t at = 0; at < blob.size(); at += chunk) {
    head.chunks.push_back(client_.publish(data_subject, std::string_view(blob).substr(at, chunk), "", kWait));
  }
  client_.publish(head_subject, encode_head(head), "", kWait);
  // Cleaning: the newest two heads stay, and every chunk from the oldest
  // chunk either names on (another owner's upload may sit between).
  client_.purge(stream, head_subject, 2);
  const auto last = last_head();
  if (!last) return;
  std::uint64_t floor = *std::min_element(last->second.chunks.begin(), last->second.chunks.end());
  if (last->second.previous != 0) {
    const auto before = head_at(last->second.previous);
    if (!before) return;  // (gone already: keep everything until the next upload)
    if (!before->chunks.empty()) floor = std::min(floor, *std::min_element(before->chunks.begin(), before->chunks.end()));
  }
  client_.purge(stream, data_subject, 0, floor);
}

std::optional<SharedCheckpointHead> SharedCheckpoints::head_at(std::uint64_t sequence) {
  const MsgPtr m = client_.message_at(layout_.checkpoint_stream(), sequence, kWait);
  if (!m || layout_.checkpoint_head_subject(partition_) != natsMsg_GetSubject(m.get())) return std::nullopt;
  SharedCheckpointHead h = decode_head(msg_data(m.get()));
  if (h.chunks.empty()) return std::nullopt;
  return h;
}

std::optional<std::pair<std::uint64_t, SharedCheckpointHead>> SharedCheckpoints::last_head() {
  const MsgPtr m = client_.last_message(layout_.checkpoint_stream(), layout_.checkpoint_head_subject(partition_), kWait);
  if (!m) return std::nullopt;
  SharedCheckpointHead h = decode_head(msg_data(m.get()));
  if (h.chunks.empty()) return std::nullopt;
  return std::pair{natsMsg_GetSequence(m.get()), std::move(h)};
}

storage::CheckpointCopy SharedCheckpoints::fetch(const SharedCheckpointHead& head) {
  std::string blob;
  for (const auto seq : head.chunks) {
    const MsgPtr m = client_.message_at(layout_.checkpoint_stream(), seq, kWait);
    if (!m || layout_.checkpoint_data_subject(partition_) != natsMsg_GetSubject(m.get())) {
      throw FormatError("its chunk at sequence " + std::to_string(seq) + " is gone");
    }
    blob += msg_data(m.get());
    if (blob.size() > head.bytes) throw FormatError("its chunks hold more than the head's " + std::to_string(head.bytes) + " bytes");
  }
  if (blob.size() != head.bytes) throw FormatError("its chunks hold " + std::to_string(blob.size()) + " of " + std::to_string(head.bytes) + " bytes");
  storage::CheckpointCopy copy = decode_checkpoint(blob);
  if (copy.start_lsn != head.position) throw FormatError("it holds position " + std::to_string(copy.start_lsn) + ", its head says " + std::to_string(head.position));
  return copy;
}

std::optional<SharedCheckpoints::Found> SharedCheckpoints::newest(std::uint64_t after, std::uint64_t newest, spdlog::logger& log) {
  std::optional<SharedCheckpointHead> head;
  try {
    if (auto last = last_head()) head = std::move(last->second);
  } catch (const std::exception& e) {
    log.warn("partition {}: cannot read its shared checkpoints ({})", partition_, e.what());
    return std::nullopt;
  }
  // The newest, then the one before it.
  for (int tries = 0; head && tries < 2; ++tries) {
    const SharedCheckpointHead h = *head;
    head.reset();
    if (h.stream_created_ns != stream_created_ns_ || h.partitions != layout_.partitions || h.partition != partition_) {
      log.info("partition {}: its shared checkpoint is of another stream (made at {} ns, {} partitions): not used", partition_,
               h.stream_created_ns, h.partitions);
      return std::nullopt;
    }
    if (h.position <= after) return std::nullopt;
    if (h.position > newest) {
      log.error("partition {}: its shared checkpoint includes the log to sequence {}, past the stream's newest commit {} (was the stream "
                "purged?): not used",
                partition_, h.position, newest);
    } else {
      try {
        return Found{h, fetch(h)};
      } catch (const std::exception& e) {
        log.warn("partition {}: its shared checkpoint at sequence {} (from {}) cannot be read: {}", partition_, h.position, h.node_id, e.what());
      }
    }
    if (h.previous == 0) break;
    try {
      head = head_at(h.previous);
    } catch (const std::exception& e) {
      log.warn("partition {}: cannot read its shared checkpoints ({})", partition_, e.what());
    }
  }
  return std::nullopt;
}

}  // namespace ebb::cluster
