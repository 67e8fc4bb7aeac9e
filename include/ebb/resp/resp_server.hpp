#pragma once
// The RESP transport (Boost.Asio): a listener and one session per
// connection, on their own event loops. A session reads commands as they
// come (pipelined ones in one pass), runs them in order and writes their
// replies in that order, one write per pass; a write command's reply waits
// until its log record is durable (--fsync), and the commands after it
// wait with it. A client that stops reading its replies stops being read.
#include <cstdint>
#include <memory>
#include <string>

#include "ebb/resp/commands.hpp"
#include "ebb/resp/protocol.hpp"

namespace spdlog {
class logger;
}

namespace ebb::resp {

struct RespServerOptions {
  std::string bind = "127.0.0.1";
  std::uint16_t port = 6380;  // 0: an ephemeral port (see port())
  unsigned threads = 1;
  // Threads for work off the event loops: admin commands (RESERVE,
  // INITBY*, DEL), and in cluster mode every command that reads or writes
  // (it waits on the network); a connection runs one such command at a time.
  unsigned blocking_threads = 2;
  ProtocolLimits limits;
  std::size_t max_reply_backlog = 4u << 20;  // bytes of replies a client has not taken before it is read no further
};

class RespServer {
 public:
  RespServer(RespServerOptions options, Commands& commands, std::shared_ptr<spdlog::logger> log);
  ~RespServer();
  RespServer(const RespServer&) = delete;
  RespServer& operator=(const RespServer&) = delete;

  // Binds and listens; throws std::runtime_error with the address and reason.
  void listen();
  std::uint16_t port() const;
  // Serves until shutdown(); blocks (using `threads` threads, this one included).
  void run();
  // Stops accepting and closes every connection once what it is owed (a
  // reply waiting for the disk) is written; safe from any thread.
  void shutdown();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ebb::resp
