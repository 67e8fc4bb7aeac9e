#pragma once
// Reading and parsing on one thread, counting on another: `ebb top` keeps
// both cores busy. The producer reads every source in order, parses lines
// into events (keys point into the chunk's read buffer or its own arena, so
// a chunk owns all it points to), checks each event with the engine's rules
// and the front end's (UTF-8 keys, the time-jump guard) so problems are
// reported with file:line, and hands chunks over a small bounded queue.
// Order is preserved: the consumer sees events exactly as read.
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ebb/engine/event.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "ebb/engine/prepared_batch.hpp"
#include "ebb/io/key_arena.hpp"
#include "ebb/io/record_parser.hpp"

namespace ebb::cli {

class Progress;

// Thrown to stop the run with a message and exit code 1 (--strict, I/O).
struct Fatal {
  std::string message;
};

struct Source {
  std::string name;  // for messages: the path, or "stdin"
  int fd;
  bool owned;
  std::uint64_t size;  // a regular file's size when opened (it is read up to that); 0 when unknown (pipe, terminal)
};
// Opens a path ("-" = stdin); throws Fatal with the OS's reason.
Source open_source(const std::string& path);

struct InputTally {
  std::uint64_t lines = 0;
  std::uint64_t records = 0;
  std::uint64_t malformed = 0;
  std::uint64_t skipped = 0;      // blank and header lines
  std::uint64_t zero_weight = 0;
};

// Tells stderr what the input had that was not counted: malformed lines
// (the first few quoted with file:line), lines of weight 0 or "-", and
// warnings about whole sources (a file that shrank while it was read).
void report_input_problems(const char* program, const InputTally& tally, const std::vector<std::string>& problems,
                           const std::vector<std::string>& warnings);

// What one read of the input became. The chunk owns every byte its events
// point to: the read buffer itself, and an arena for keys a parser had to
// rewrite (unescaped CSV fields, JSON strings). The events are already in
// the engine's columns (Namespace::apply(PreparedBatch&) counts them where
// they are): items, times, weights, and hashes when `hashed`.
struct ParsedChunk {
  std::vector<char> bytes;  // the read buffer (unread input)
  engine::PreparedBatch batch;
  io::KeyArena arena;
  // The hash column holds hash_key() of each item. With
  // PipelineOptions::hash_keys the producer hashes a chunk while chunks
  // queue up for the consumer (it is ahead), and leaves the hashing of the
  // next one to the consumer otherwise: whichever side has time does it.
  bool hashed = false;
  std::size_t size() const noexcept { return batch.count; }
  // Fills the hash column if the producer did not.
  void hash_all();
  void clear() {
    batch.count = 0;
    hashed = false;
    arena.reset();
  }
};

struct PipelineOptions {
  bool strict = false;
  std::uint32_t max_line_bytes = 1 << 20;
  bool progress = false;                  // draw a bar on stderr (sizes known)
  std::size_t reported_problems = 5;      // how many malformed lines to quote
  // Keys must be valid UTF-8 (ebb send: the server reads JSON, which is
  // UTF-8, and refuses a whole batch over one bad key); a key that is not
  // is a malformed line. ebb top counts keys as the bytes they are.
  bool require_utf8 = false;
  // Timed input: an event more than this many seconds ahead of the newest
  // event time accepted so far is a malformed line (core/time_jump.hpp).
  double max_time_jump = 86400;
  // Hash keys (ParsedChunk::hashed) when the consumer is behind: ebb top
  // counts the keys; ebb send only sends them.
  bool hash_keys = false;
};

class InputPipeline {
 public:
  InputPipeline(std::vector<Source> sources, std::unique_ptr<io::RecordParser> parser, io::KeyArena& parser_arena,
                const engine::NamespaceConfig& rules, PipelineOptions options);
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // The next chunk in input order; nullptr at the end. Rethrows the
  // producer's failure (Fatal for --strict or a read error).
  std::unique_ptr<ParsedChunk> next();
  void recycle(std::unique_ptr<ParsedChunk> chunk);

  // Valid once next() returned nullptr.
  const InputTally& tally() const noexcept { return tally_; }
  const std::vector<std::string>& problems() const noexcept { return problems_; }
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }

 private:
  static constexpr std::size_t kInFlight = 4;  // read buffers (each one read of up to 128 KiB) in flight
  static constexpr std::size_t kParseBlock = 256;  // lines parsed per parser call

  void produce();
  void read_source(const Source& src, Progress& progress, std::uint64_t done_bytes);
  std::unique_ptr<ParsedChunk> take_free();
  void publish(std::unique_ptr<ParsedChunk> chunk);
  bool consumer_behind();
  void malformed(const Source& src, std::uint64_t line_no, const std::string& why);

  std::vector<Source> sources_;
  std::unique_ptr<io::RecordParser> parser_;
  io::KeyArena& parser_arena_;
  const engine::NamespaceConfig& rules_;
  PipelineOptions options_;
  InputTally tally_;
  std::vector<std::string> problems_;
  std::vector<std::string> warnings_;
  double newest_time_ = NAN;  // the newest event time accepted (NaN before any)
  std::vector<io::ParsedLine> parsed_ = std::vector<io::ParsedLine>(kParseBlock);  // the parser's block

  std::mutex mu_;
  std::condition_variable ready_cv_, free_cv_;
  std::deque<std::unique_ptr<ParsedChunk>> ready_, free_;
  std::size_t allocated_ = 0;
  bool done_ = false;
  bool stop_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace ebb::cli
