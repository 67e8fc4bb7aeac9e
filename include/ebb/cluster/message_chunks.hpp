#pragma once
// Questions and answers between cluster nodes of any size, over NATS
// messages of at most the server's max_payload (1 MiB by default): a
// payload that does not fit goes as several messages in order, each with
// the header "Ebb-Chunk: <group>/<i>/<n>" (group: random per payload, so
// two senders answering on one reply subject do not mix), and the receiver
// puts it back together. A payload that fits goes as one plain message, as
// it always did.
#include <nats/nats.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ebb::cluster {

inline constexpr const char* kChunkHeader = "Ebb-Chunk";

// What one message may carry of a payload on this connection: the server's
// max_payload less room for the subject, reply subject and headers.
std::size_t chunk_bytes(natsConnection* nc) noexcept;

// Publishes `payload` on `subject` (with `reply_to` unless empty), in
// chunks of at most `chunk` bytes when it does not fit in one. Returns the
// first status that was not NATS_OK.
natsStatus publish_chunked(natsConnection* nc, const std::string& subject, const std::string& reply_to, std::string_view payload,
                           std::size_t chunk);

// Puts chunked payloads back together, by the key the caller gives (its
// reply subject) and the chunk's group. One assembler per subscription:
// not thread-safe (a subscription's callbacks come one at a time).
class ChunkAssembler {
 public:
  // The whole payload once `m` completes it (a plain message: at once);
  // nullopt while chunks are missing, or for a chunk that does not fit
  // what came before it (dropped: its sender's question times out).
  std::optional<std::string> add(std::string_view key, natsMsg* m);
  std::size_t pending() const noexcept { return partial_.size(); }

 private:
  struct Partial {
    std::uint32_t next = 0, total = 0;
    std::string data;
    std::chrono::steady_clock::time_point started;
  };
  void forget_stale(std::chrono::steady_clock::time_point now);
  std::map<std::string, Partial, std::less<>> partial_;
};

}  // namespace ebb::cluster
