#pragma once
// Questions and answers between cluster nodes of any size, over NATS
// messages of at most the server's max_payload (1 MiB by default): a
// payload that does not fit goes as several messages in order, each with
// the header "Ebb-Chunk: <group>/<i>/<n>" (group: random per payload, so
// two senders answering on one reply subject do not mix), and the receiver
// puts it back together. A payload that fits goes as one plain message, as
// it always did.
#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
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

// What every assembler of a node holds together (thread-safe): the limits
// hold for the node, not for each subscription.
struct ChunkBudget {
  std::atomic<std::size_t> bytes{0};
  std::atomic<std::size_t> partials{0};
};

struct ChunkLimits {
  std::size_t max_whole = std::size_t{256} << 20;  // one payload, put together
  std::size_t max_held = std::size_t{512} << 20;   // every payload still missing chunks, the node's
  std::size_t max_partials = 4096;                 // the node's
};

// Puts chunked payloads back together, by the key the caller gives (its
// reply subject) and the chunk's group. One assembler per subscription:
// not thread-safe (a subscription's callbacks come one at a time); the
// assemblers of a node share one ChunkBudget.
// Whatever a sender claims, what is held stays bounded: a payload past
// `max_whole` bytes, or one that would take the node's held chunks past
// `max_held` bytes or `max_partials` payloads, is dropped (its sender's
// question times out), as is one its first chunk never started, an empty
// chunk that is not the last, and one started over 60 s ago (swept at
// most once a second, when chunks come).
class ChunkAssembler {
 public:
  using Limits = ChunkLimits;
  explicit ChunkAssembler(Limits limits = {}, std::shared_ptr<ChunkBudget> budget = nullptr)
      : limits_(limits), budget_(budget ? std::move(budget) : std::make_shared<ChunkBudget>()) {}
  ~ChunkAssembler();
  ChunkAssembler(const ChunkAssembler&) = delete;
  ChunkAssembler& operator=(const ChunkAssembler&) = delete;

  // The whole payload once `m` completes it (a plain message: at once);
  // nullopt while chunks are missing, or for a chunk that does not fit
  // what came before it or the limits (dropped: its sender's question
  // times out). Never throws: out of memory drops the payload too.
  std::optional<std::string> add(std::string_view key, natsMsg* m) noexcept;
  std::size_t pending() const noexcept { return partial_.size(); }
  std::size_t held_bytes() const noexcept { return held_; }

 private:
  struct Partial {
    std::uint32_t next = 0, total = 0;
    std::string data;
    std::chrono::steady_clock::time_point started;
  };
  using Map = std::map<std::string, Partial, std::less<>>;
  std::optional<std::string> add_chunk(std::string_view key, natsMsg* m);
  void forget_stale(std::chrono::steady_clock::time_point now);
  void drop(Map::iterator it) noexcept;
  Limits limits_;
  std::shared_ptr<ChunkBudget> budget_;
  Map partial_;
  std::size_t held_ = 0;  // bytes of data in partial_ (this assembler's part of budget_)
  std::chrono::steady_clock::time_point last_sweep_{};
};

}  // namespace ebb::cluster
