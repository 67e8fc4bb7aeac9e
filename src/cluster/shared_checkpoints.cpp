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
    w.put<std::int64_t>(h.position_time_ns);
    w.put_string(h.node_id);
    w.put<double>(h.written_at);
    w.put<std::uint64_t>(h.bytes);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(h.chunks.size()));
    for (const auto seq : h.chunks) w.put<std::uint64_t>(seq);
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
  h.position_time_ns = r.get<std::int64_t>();
  h.node_id = r.get_string(256);
  h.written_at = r.get<double>();
  h.bytes = r.get<std::uint64_t>();
  const auto n = r.get<std::uint32_t>();
  if (n > kMaxChunks || n > r.remaining() / 8) r.fail("claims " + std::to_string(n) + " chunks");
  h.chunks.resize(n);
  for (std::size_t i = 0; i < h.chunks.size(); ++i) {
    h.chunks[i] = r.get<std::uint64_t>();
    if (h.chunks[i] == 0 || (i > 0 && h.chunks[i] <= h.chunks[i - 1])) r.fail("its chunks' sequences do not rise from 1 on");
  }
  // (A NATS message carries at most 64 MiB.)
  if (h.bytes > h.chunks.size() * (std::uint64_t{64} << 20)) r.fail("claims more bytes than its chunks can hold");
  r.expect_end();
  if (h.partition > h.partitions) r.fail("partition " + std::to_string(h.partition) + " of " + std::to_string(h.partitions));
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

SharedCheckpoints::SharedCheckpoints(NatsClient& client, ClusterLayout layout, std::uint32_t slot, std::int64_t stream_created_ns,
                                     std::string node_id)
    : client_(client), layout_(std::move(layout)), slot_(slot), stream_created_ns_(stream_created_ns), node_id_(std::move(node_id)) {}

std::string SharedCheckpoints::slot_name() const { return slot_ < layout_.partitions ? "partition " + std::to_string(slot_) : "the catalog"; }

bool SharedCheckpoints::ours(const SharedCheckpointHead& h) const noexcept {
  return h.stream_created_ns == stream_created_ns_ && h.partitions == layout_.partitions && h.partition == slot_;
}

bool SharedCheckpoints::upload(std::uint64_t position, std::int64_t position_time_ns, std::string_view blob) {
  const std::string stream = layout_.checkpoint_stream();
  const std::string data_subject = layout_.checkpoint_data_subject(slot_);
  const std::string head_subject = layout_.checkpoint_head_subject(slot_);
  // Not behind what is shared (another owner, during a hand-over, may be
  // further along): the newest head never goes back.
  for (const auto& h : usable_heads()) {
    if (h.position >= position) return false;
  }
  SharedCheckpointHead head;
  head.stream_created_ns = stream_created_ns_;
  head.partitions = layout_.partitions;
  head.partition = slot_;
  head.position = position;
  head.position_time_ns = position_time_ns;
  head.node_id = node_id_.substr(0, 256);  // (who wrote it: for the log)
  head.written_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  head.bytes = blob.size();
  const std::size_t chunk = chunk_bytes(client_.connection());
  const std::size_t chunks = (blob.size() + chunk - 1) / chunk;
  // The head names every chunk, in one message: refused before a chunk is sent.
  if (chunks > kMaxChunks || 128 + node_id_.size() + 8 * chunks > chunk) {
    throw FormatError("a checkpoint of " + std::to_string(blob.size()) + " bytes needs " + std::to_string(chunks) +
                      " chunks, more than one head can name (raise the NATS servers' max_payload)");
  }
  for (std::size_t at = 0; at < blob.size(); at += chunk) head.chunks.push_back(client_.publish(data_subject, blob.substr(at, chunk), "", kWait));
  client_.publish(head_subject, encode_head(head), "", kWait);
  // Cleaning: the newest two heads stay, and every chunk from the oldest
  // either names on (another owner's upload may sit between). It failing
  // leaves more behind until the next upload's, nothing worse.
  try {
    client_.keep_newest(stream, head_subject, 2);
    std::uint64_t floor = UINT64_MAX;
    for (const auto& h : kept_heads()) {
      for (const auto seq : h.chunks) floor = std::min(floor, seq);
    }
    if (floor != UINT64_MAX) client_.drop_below(stream, data_subject, floor);
  } catch (const NatsError&) {
  }
  return true;
}

std::vector<SharedCheckpointHead> SharedCheckpoints::kept_heads() {
  const std::string stream = layout_.checkpoint_stream();
  const std::string subject = layout_.checkpoint_head_subject(slot_);
  std::vector<SharedCheckpointHead> out;
  auto take = [&](natsMsg* m) {
    try {
      out.push_back(decode_head(msg_data(m)));
    } catch (const FormatError&) {
      // Not a head ebb wrote: never used, and never what cleaning keeps.
    }
  };
  const MsgPtr last = client_.last_message(stream, subject, kWait);
  if (!last) return out;
  take(last.get());
  const MsgPtr first = client_.first_message(stream, subject, kWait);
  if (first && natsMsg_GetSequence(first.get()) != natsMsg_GetSequence(last.get())) take(first.get());
  return out;
}

std::vector<SharedCheckpointHead> SharedCheckpoints::usable_heads() {
  auto heads = kept_heads();
  std::erase_if(heads, [&](const SharedCheckpointHead& h) { return !ours(h); });
  return heads;
}

std::string SharedCheckpoints::fetch(const SharedCheckpointHead& head) {
  // Each chunk at most one message: a head claiming more is not one this
  // cluster's nodes wrote (checked before anything is read).
  const auto max_payload = static_cast<std::uint64_t>(std::max<std::int64_t>(natsConnection_GetMaxPayload(client_.connection()), 1));
  if (head.bytes > head.chunks.size() * max_payload) throw FormatError("it claims more bytes than its chunks can hold");
  std::string blob;
  blob.reserve(head.bytes);
  for (const auto seq : head.chunks) {
    const MsgPtr m = client_.message_at(layout_.checkpoint_stream(), seq, kWait);
    if (!m || layout_.checkpoint_data_subject(slot_) != natsMsg_GetSubject(m.get())) {
      throw FormatError("its chunk at sequence " + std::to_string(seq) + " is gone");
    }
    blob += msg_data(m.get());
    if (blob.size() > head.bytes) throw FormatError("its chunks hold more than the head's " + std::to_string(head.bytes) + " bytes");
  }
  if (blob.size() != head.bytes) throw FormatError("its chunks hold " + std::to_string(blob.size()) + " of " + std::to_string(head.bytes) + " bytes");
  return blob;
}

std::optional<SharedCheckpoints::Found> SharedCheckpoints::newest(std::uint64_t after, std::uint64_t newest_commit, spdlog::logger& log,
                                                                  const std::function<void(std::string_view)>& check) {
  std::vector<SharedCheckpointHead> heads;
  try {
    heads = kept_heads();
  } catch (const std::exception& e) {
    log.warn("{}: cannot read its shared checkpoints ({})", slot_name(), e.what());
    return std::nullopt;
  }
  // The newest, then the other kept one.
  for (const auto& h : heads) {
    if (!ours(h)) {
      log.info("{}: a shared checkpoint not of this stream and slot (stream made at {} ns, {} partitions, slot {}): not used", slot_name(),
               h.stream_created_ns, h.partitions, h.partition);
      continue;
    }
    if (h.position <= after) break;
    if (h.position > newest_commit) {
      // (Another owner, during a hand-over, may have gone further since
      // the caller read the log's end.)
      try {
        newest_commit = client_.last_sequence(layout_.stream, layout_.commit_subject(), kWait);
      } catch (const std::exception&) {
      }
    }
    if (h.position > newest_commit) {
      log.error("{}: its shared checkpoint includes the log to sequence {}, past the stream's newest commit {} (was the stream "
                "purged?): not used",
                slot_name(), h.position, newest_commit);
      continue;
    }
    try {
      std::string blob = fetch(h);
      if (check) check(blob);
      return Found{h, std::move(blob)};
    } catch (const std::exception& e) {
      log.warn("{}: its shared checkpoint at sequence {} (from {}) cannot be read: {}", slot_name(), h.position, h.node_id, e.what());
    }
  }
  return std::nullopt;
}

}  // namespace ebb::cluster
