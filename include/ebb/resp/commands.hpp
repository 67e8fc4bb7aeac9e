#pragma once
// The commands of ebb's RESP front end: RedisBloom's TOPK.* and CMS.*, with
// their arguments, reply shapes and error texts, the connection commands
// clients send (PING, HELLO, AUTH, CLIENT, SELECT, COMMAND, INFO, QUIT) and
// DEL / EXISTS / TYPE. A RESP key is an ebb namespace. Every rule of ingest
// and query is the service's: a command only parses its arguments, calls
// the service and writes the reply (docs/resp.md).
#include <atomic>
#include <memory>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/service/access_tokens.hpp"
#include "ebb/service/service.hpp"

namespace ebb::resp {

// One connection's state.
struct ClientState {
  std::uint64_t id = 0;
  int protocol = 2;            // 3 after HELLO 3
  bool authenticated = false;  // AUTH or HELLO ... AUTH with a token
  std::string name;            // CLIENT SETNAME
  bool quit = false;           // QUIT: close once the reply is written
};

// What a command left to do. A write's reply waits until its log record
// is durable (--fsync). An admin command (RESERVE, INITBY*, DEL: it
// allocates and waits for the disk) runs `deferred` off the event loop,
// which writes the reply; the connection runs nothing else meanwhile.
struct Outcome {
  service::Commit commit;
  std::function<void(std::string& reply)> deferred;
  // `deferred` is a command on a key a merge holds (Commands::held_long):
  // run apart from the admin commands, which must not queue behind it.
  bool waits_for_a_merge = false;
};

// Figures INFO reports that the transport keeps.
struct ServerFigures {
  std::atomic<std::uint64_t> connected{0};
  std::atomic<std::uint64_t> connections_total{0};
  std::atomic<std::uint64_t> commands_total{0};
  std::atomic<std::uint64_t> protocol_errors{0};
};

// One reply of a run of pipelined commands (Commands::execute_batch):
// ready now (commit.lsn 0: a refusal, or nothing was logged), or once the
// record `commit` names is durable.
struct BatchReply {
  std::string text;
  service::Commit commit;
};

// What a command would bring to a run: the key it counts into and how many
// items (an INCRBY's item/increment pairs count one each).
struct BatchEntry {
  std::string_view key;
  std::size_t items = 0;
};

// The commands of a run held end to end in one table of arguments:
// command j is words[ends[j - 1], ends[j]) (from 0 for the first).
std::vector<std::span<const std::string_view>> commands_of(std::span<const std::string_view> words, std::span<const std::size_t> ends);

class Commands {
 public:
  Commands(service::Service& service, const service::AccessTokens& tokens, ServerFigures& figures, std::string version);
  ~Commands();
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  // Runs one command (args[0] is its name, in any case) and appends its
  // reply to `out`. Never throws for what a client sent.
  // `received_at`: when the command came (0: now), the time of its events.
  // `defer_if_held`: a command on a key a merge holds comes back deferred
  // (false: it runs in place, as execute_batch's commands do).
  Outcome execute(ClientState& client, std::span<const std::string_view> args, std::string& out, double received_at = 0,
                  bool defer_if_held = true);

  // Pipelined TOPK.ADD / TOPK.INCRBY commands on one key, already read,
  // are counted as one batch: one log record, one look at the list
  // (single-item adds pipelined by the thousand would otherwise each pay
  // for a batch). What such a command brings to a run; nullopt for any
  // other command.
  static std::optional<BatchEntry> batch_entry(std::span<const std::string_view> args) noexcept;
  // The most items a run may bring together (the service's batch limit).
  std::size_t max_batch_items() const noexcept;
  // Runs such a run (every command's batch_entry() on the same key, items
  // within max_batch_items()): replies[i] is commands[i]'s, exactly as
  // execute() would write it, except that the items the run pushed out of
  // the list are named at the adds that entered over the whole run
  // (docs/resp.md). A command refused for its own arguments is refused
  // alone; anything else that stops the batch (a refusal by the service,
  // NOAUTH, LOADING) runs the commands one by one instead, each with its
  // own record.
  // `received_at`: when the commands came (0: now), the events' time.
  void execute_batch(ClientState& client, std::span<const std::span<const std::string_view>> commands, std::vector<BatchReply>& replies,
                     double received_at = 0);

  // Cluster mode (ebb serve --nats): a command that reads or writes waits
  // on the network (the partitions' answers, JetStream's acknowledgements),
  // so execute() returns it as `deferred` work, with its arguments copied,
  // which runs it off the event loop and waits for its write to be in the
  // cluster's log before its reply is final.
  bool clustered() const noexcept { return service_.cluster() != nullptr; }
  // A merge holds this key's namespace now (Service::held_long): a command
  // on it (execute(), a run) is deferred the same way on a single node, so
  // the loop's other connections do not wait the merge out with it.
  bool held_long(std::string_view key) const { return service_.held_long(key); }
  // A run as execute_batch() takes it, as work off the event loop: every
  // reply, in order, once every write is durable (in the cluster's log, or
  // a single node's; a failed write's error in its replies' place). The
  // commands are copied.
  std::function<void(std::string& replies)> deferred_batch(ClientState& client, std::span<const std::span<const std::string_view>> commands);
  // Waits until the write `commit` names is durable (in the cluster's log,
  // or a single node's): "" then, else why not (when_durable's error).
  std::string wait_published(service::Commit commit);

  service::Service& service() noexcept { return service_; }
  const service::AccessTokens& tokens() const noexcept { return tokens_; }
  ServerFigures& figures() noexcept { return figures_; }
  const std::string& version() const noexcept { return version_; }
  // The top-k lists TOPK.ADD last saw, by key (command_context.hpp).
  struct ListCaches;
  ListCaches& list_caches() noexcept { return *lists_; }

 private:
  service::Service& service_;
  const service::AccessTokens& tokens_;
  ServerFigures& figures_;
  std::string version_;
  std::unique_ptr<ListCaches> lists_;
};

}  // namespace ebb::resp
