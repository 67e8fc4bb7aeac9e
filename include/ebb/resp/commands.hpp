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
};

// Figures INFO reports that the transport keeps.
struct ServerFigures {
  std::atomic<std::uint64_t> connected{0};
  std::atomic<std::uint64_t> connections_total{0};
  std::atomic<std::uint64_t> commands_total{0};
  std::atomic<std::uint64_t> protocol_errors{0};
};

// One reply of a run of pipelined commands run as one batch
// (Commands::execute_batch): `waits`: it stands once the run's commit is
// durable (else it is ready now: a refusal, or nothing was logged).
struct BatchReply {
  std::string text;
  bool waits = false;
};

class Commands {
 public:
  Commands(service::Service& service, const service::AccessTokens& tokens, ServerFigures& figures, std::string version);
  ~Commands();
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  // Runs one command (args[0] is its name, in any case) and appends its
  // reply to `out`. Never throws for what a client sent.
  Outcome execute(ClientState& client, std::span<const std::string_view> args, std::string& out);

  // Pipelined TOPK.ADD / TOPK.INCRBY commands on one key, already read,
  // are counted as one batch: one log record, one look at the top-K list
  // (single-item adds pipelined by the thousand would otherwise each pay
  // for a batch). The key such a command would join a run under; nullopt
  // for any other command.
  static std::optional<std::string_view> batch_key(std::span<const std::string_view> args) noexcept;
  // Runs such a run (each command's batch_key() the same key): replies[i]
  // is commands[i]'s, exactly as execute() would write it, except that
  // the items the run pushed out of the list are named at the adds that
  // entered over the whole run (docs/resp.md). A command refused for its
  // own arguments is refused alone; anything else that stops the batch
  // runs the commands one by one instead. The commit covers every reply
  // that waits.
  Outcome execute_batch(ClientState& client, std::span<const std::vector<std::string_view>> commands, std::vector<BatchReply>& replies);

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
