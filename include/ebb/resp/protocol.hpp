#pragma once
// RESP, the Redis serialization protocol (RESP2 requests; replies in RESP2
// or RESP3 after HELLO 3): reading commands from a connection's buffer.
//
// A command is a multi-bulk array of bulk strings ("*2\r\n$4\r\nPING\r\n...")
// or an inline line ("PING\r\n", what telnet and `redis-cli` in some modes
// send). The reader is resumable: a large command arriving in many reads is
// scanned once, not once per read. Limits are checked as soon as a header
// states a size, before its bytes are buffered.
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::resp {

struct ProtocolLimits {
  std::size_t max_arguments = 1u << 20;        // of one command (Redis: 1024 * 1024 too)
  std::size_t max_bulk_bytes = 1u << 20;       // of one argument (Redis: 512 MB; keys and items here are short)
  std::size_t max_inline_bytes = 64u << 10;    // of an inline command line (Redis: 64 KiB)
  std::size_t max_command_bytes = 64u << 20;   // of one command, headers included
};

// What a connection may send before it authenticates, when every command
// needs a token (--auth-reads): as Redis 7, at most 10 arguments of 16 KiB,
// so that a client without the token cannot make the server buffer much.
inline ProtocolLimits unauthenticated(ProtocolLimits l) noexcept {
  l.max_arguments = std::min<std::size_t>(l.max_arguments, 10);
  l.max_bulk_bytes = std::min<std::size_t>(l.max_bulk_bytes, 16u << 10);
  l.max_inline_bytes = std::min<std::size_t>(l.max_inline_bytes, 16u << 10);
  l.max_command_bytes = std::min<std::size_t>(l.max_command_bytes, 64u << 10);
  return l;
}

class CommandReader {
 public:
  enum class Status { complete, incomplete, error };

  explicit CommandReader(ProtocolLimits limits) : limits_(limits) {}
  // Between commands only (a connection that authenticates gets larger ones).
  void set_limits(const ProtocolLimits& limits) noexcept { limits_ = limits; }

  // Reads the next command from data (the bytes not yet consumed, which may
  // have moved since the last call, but keep their contents). complete:
  // args() holds it and consumed() says how many bytes it took; incomplete:
  // call again with more bytes appended; error: error() says what (a
  // protocol error: the connection must be closed after replying it).
  Status read(std::string_view data);
  const std::vector<std::string_view>& args() const noexcept { return args_; }
  std::size_t consumed() const noexcept { return consumed_; }
  const std::string& error() const noexcept { return error_; }
  // The bytes its argument tables hold (kept between commands up to 4096
  // arguments' worth; a larger command's are given back once it is done).
  std::size_t table_bytes() const noexcept {
    return args_.capacity() * sizeof(std::string_view) + spans_.capacity() * sizeof(std::pair<std::size_t, std::size_t>) +
           inline_words_.capacity() * sizeof(std::string);
  }

 private:
  Status fail(std::string message);
  Status read_inline(std::string_view data);
  // Where the bytes of the bulk whose '$' is at data[at] begin, its length
  // in bulk_length_, when its length line is plain digits (at most 9) and
  // CRLF; 0 otherwise (the caller's general path reads it).
  std::size_t bulk_start(std::string_view data, std::size_t at) noexcept;
  std::size_t bulk_length_ = 0;
  void reset();

  ProtocolLimits limits_;
  // Resumable state of a multi-bulk command: its argument count, the
  // arguments read so far (as offsets: the buffer may move) and where the
  // next one starts.
  long long expected_ = -1;
  std::vector<std::pair<std::size_t, std::size_t>> spans_;
  std::size_t pos_ = 0;
  std::vector<std::string_view> args_;
  std::vector<std::string> inline_words_;  // an inline command's words, unescaped
  std::size_t consumed_ = 0;
  std::string error_;
};

}  // namespace ebb::resp
