#pragma once
// The NATS C client (libnats, Debian's libnats-dev) behind RAII handles and
// exceptions: what the cluster layer needs of a connection, JetStream and
// its key-value buckets.
#include <nats/nats.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::cluster {

// A NATS call failed: what was tried, the client's status text and, for
// JetStream, the server's error code.
class NatsError : public std::runtime_error {
 public:
  NatsError(const std::string& what, natsStatus status, int js_code = 0);
  natsStatus status() const noexcept { return status_; }
  int js_code() const noexcept { return js_code_; }

 private:
  natsStatus status_;
  int js_code_;
};

// Throws NatsError unless s is NATS_OK.
void nats_check(natsStatus s, const std::string& what, jsErrCode js_code = static_cast<jsErrCode>(0));

struct MsgDeleter {
  void operator()(natsMsg* m) const noexcept { natsMsg_Destroy(m); }
};
using MsgPtr = std::unique_ptr<natsMsg, MsgDeleter>;
struct SubscriptionDeleter {
  void operator()(natsSubscription* s) const noexcept {
    natsSubscription_Unsubscribe(s);
    natsSubscription_Destroy(s);
  }
};
using SubscriptionPtr = std::unique_ptr<natsSubscription, SubscriptionDeleter>;
struct KvDeleter {
  void operator()(kvStore* kv) const noexcept { kvStore_Destroy(kv); }
};
using KvPtr = std::unique_ptr<kvStore, KvDeleter>;

// An asynchronous subscription whose callback uses its owner: close() (and
// the destructor) return only once libnats says the last callback has
// returned, so the owner may go then. (libnats 3.4 may still be running a
// callback when Unsubscribe returns.)
class AsyncSubscription {
 public:
  // Throws NatsError. `handler(closure)` owns each message it is given.
  AsyncSubscription(natsConnection* nc, const std::string& subject, natsMsgHandler handler, void* closure);
  ~AsyncSubscription() { close(); }
  AsyncSubscription(const AsyncSubscription&) = delete;
  AsyncSubscription& operator=(const AsyncSubscription&) = delete;
  void close() noexcept;

 private:
  static void on_complete(void* closure);
  natsSubscription* sub_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  bool complete_ = false;  // under mu_
};

std::string_view msg_data(natsMsg* m) noexcept;

// A message's JetStream metadata (stream sequence, time, pending).
struct MsgMeta {
  std::uint64_t sequence = 0;
  std::uint64_t pending = 0;
  std::int64_t timestamp_ns = 0;
};
MsgMeta msg_meta(natsMsg* m);

// Publishes many JetStream messages at once on a JetStream context of its
// own (one per thread that uses it) and waits for their acknowledgements:
// one round trip's wait for a batch's parts instead of one each.
class AsyncPublisher {
 public:
  struct Outgoing {
    std::string subject;
    std::string_view data;
    std::string msg_id;  // JetStream deduplication: a retry under it is stored once
  };
  // Throws NatsError.
  explicit AsyncPublisher(natsConnection* nc);
  ~AsyncPublisher();
  AsyncPublisher(const AsyncPublisher&) = delete;
  AsyncPublisher& operator=(const AsyncPublisher&) = delete;

  // Sends every message, then waits at most `wait` for the acknowledgements:
  // each message's stream sequence (the original's for a duplicate id), or
  // 0 for one not acknowledged in time or refused (the caller retries it
  // under the same id). `errors` gets why, for those.
  std::vector<std::uint64_t> publish_all(const std::vector<Outgoing>& msgs, std::chrono::milliseconds wait, std::string& errors);
  // The last publish_all() had an acknowledgement of a duplicate (an id
  // stored before: its sequence is the original's, which the stream may
  // have dropped since).
  bool any_duplicate() const noexcept { return any_duplicate_; }

 private:
  static void on_ack(jsCtx* js, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure);
  jsCtx* js_ = nullptr;
  std::mutex mu_;
  std::vector<std::string> ids_;          // this call's message ids, in order (under mu_)
  std::vector<std::uint64_t> sequences_;  // their acknowledgements (under mu_)
  std::string errors_;                    // under mu_
  bool duplicates_ = false;               // under mu_
  bool any_duplicate_ = false;
};

// One connection to the cluster's NATS servers and its JetStream context.
class NatsClient {
 public:
  // urls: "nats://host:port" each; name: how the servers list this client.
  NatsClient(const std::vector<std::string>& urls, const std::string& name);
  ~NatsClient();
  NatsClient(const NatsClient&) = delete;
  NatsClient& operator=(const NatsClient&) = delete;

  natsConnection* connection() const noexcept { return nc_; }
  jsCtx* js() const noexcept { return js_; }
  bool connected() const noexcept;

  // Creates the stream unless it exists (its existing configuration wins).
  // Returns what it is.
  struct StreamFacts {
    std::string description;
    std::int64_t created_ns = 0;  // when the server made it: tells a stream from one deleted and made again
  };
  StreamFacts ensure_stream(const std::string& name, const std::vector<std::string>& subjects, int replicas, const std::string& description);
  // The stream's message at `sequence`, or null when the stream no longer
  // holds it (retention, deletion). Throws NatsError on other failures.
  MsgPtr message_at(const std::string& stream, std::uint64_t sequence, std::chrono::milliseconds wait);
  // The newest message on `subject` (null: none).
  MsgPtr last_message(const std::string& stream, const std::string& subject, std::chrono::milliseconds wait);
  // The stream sequence of the newest message on `subject` (0: none).
  std::uint64_t last_sequence(const std::string& stream, const std::string& subject, std::chrono::milliseconds wait);
  // A key-value bucket, created unless it exists; ttl 0: entries never expire.
  KvPtr bucket(const std::string& name, int replicas, std::chrono::milliseconds ttl, int history = 1);
  // A pull subscription on `subject` of `stream` from sequence `from` (no
  // acks: the caller keeps its position), dropped by the server when idle
  // for consumer_idle() (a reader must fetch, or make it again, before).
  SubscriptionPtr pull_from(const std::string& stream, const std::string& subject, std::uint64_t from);
  std::chrono::milliseconds consumer_idle() const noexcept { return consumer_idle_; }
  void set_consumer_idle(std::chrono::milliseconds idle) noexcept { consumer_idle_ = idle; }
  // Up to `batch` messages, waiting at most `wait` for the first; none on timeout.
  std::vector<MsgPtr> fetch(natsSubscription* sub, int batch, std::chrono::milliseconds wait);
  // A pull reader that brought nothing for kReaderSilence while `subject`
  // holds records past `position` is stuck: an ephemeral consumer has one
  // replica, and the NATS server holding it is gone (the stream's other
  // replicas go on; fetches only time out). True (at most once a silence)
  // when the reader should be made again from position + 1. `last_data`:
  // the reader's, when it last brought something.
  bool reader_stuck(const std::string& stream, const std::string& subject, std::uint64_t position,
                    std::chrono::steady_clock::time_point& last_data);
  static constexpr std::chrono::seconds kReaderSilence{3};
  // The sequence of the stream's oldest message (its last + 1 when empty).
  std::uint64_t first_sequence(const std::string& stream);
  // The sequence of its oldest message on `subjects` (a filter covering
  // the stream's, e.g. "EBB.>") stored at or after `time_ns` (ns since the
  // epoch; the stream's last + 1 when none is; 0 when that cannot be told
  // in time).
  std::uint64_t first_sequence_since(const std::string& stream, const std::string& subjects, std::int64_t time_ns);
  // Drops messages of `stream` on `subject` ("": every subject): all of
  // them; all but the newest `n` (n >= 1); those below sequence `below`
  // (>= 1: 0, which JetStream reads as "all", is refused). Throw NatsError
  // (std::invalid_argument for n or below 0).
  void purge_all(const std::string& stream, const std::string& subject);
  void keep_newest(const std::string& stream, const std::string& subject, std::uint64_t n);
  void drop_below(const std::string& stream, const std::string& subject, std::uint64_t below);
  // The oldest message on `subject` (null: none). Throws NatsError.
  MsgPtr first_message(const std::string& stream, const std::string& subject, std::chrono::milliseconds wait);
  // Publishes to JetStream and waits for the acknowledgement: the message's
  // stream sequence (the original's for a duplicate msg_id; "": no id).
  // `duplicate`: set when the id was stored before.
  std::uint64_t publish(const std::string& subject, std::string_view data, const std::string& msg_id, std::chrono::milliseconds wait,
                        bool* duplicate = nullptr);

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  std::chrono::milliseconds consumer_idle_{60'000};
};

}  // namespace ebb::cluster
