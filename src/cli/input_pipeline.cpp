#include "input_pipeline.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <system_error>

#include "ebb/core/hash.hpp"
#include "ebb/core/time_jump.hpp"
#include "ebb/engine/namespace.hpp"
#include "ebb/io/line_reader.hpp"
#include "ebb/core/utf8.hpp"
#include "progress.hpp"

namespace ebb::cli {

Source open_source(const std::string& path) {
  if (path == "-") return {"stdin", STDIN_FILENO, false, 0};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Fatal{"cannot open '" + path + "': " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Fatal{"cannot read '" + path + "': it is a directory"};
  }
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  return {path, fd, true, regular ? static_cast<std::uint64_t>(st.st_size) : 0};
}

void report_input_problems(const char* program, const InputTally& tally, const std::vector<std::string>& problems,
                           const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::fprintf(stderr, "%s: warning: %s\n", program, w.c_str());
  if (tally.malformed > 0) {
    std::fprintf(stderr, "%s: %llu malformed line%s skipped (use --strict to stop at the first):\n", program,
                 static_cast<unsigned long long>(tally.malformed), tally.malformed == 1 ? "" : "s");
    for (const auto& p : problems) std::fprintf(stderr, "  %s\n", p.c_str());
    if (tally.malformed > problems.size()) {
      std::fprintf(stderr, "  ... and %llu more\n", static_cast<unsigned long long>(tally.malformed - problems.size()));
    }
  }
  if (tally.zero_weight > 0) {
    std::fprintf(stderr, "%s: %llu line%s with weight 0 or '-' not counted\n", program,
                 static_cast<unsigned long long>(tally.zero_weight), tally.zero_weight == 1 ? "" : "s");
  }
}

InputPipeline::InputPipeline(std::vector<Source> sources, std::unique_ptr<io::RecordParser> parser, io::KeyArena& parser_arena,
                             const engine::NamespaceConfig& rules, PipelineOptions options)
    : sources_(std::move(sources)), parser_(std::move(parser)), parser_arena_(parser_arena), rules_(rules), options_(options) {
  thread_ = std::thread([this] { produce(); });
}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  free_cv_.notify_all();
  thread_.join();
  for (auto& s : sources_) {
    if (s.owned) ::close(s.fd);
  }
}

std::unique_ptr<ParsedChunk> InputPipeline::next() {
  std::unique_lock lock(mu_);
  ready_cv_.wait(lock, [&] { return !ready_.empty() || done_; });
  if (failure_) std::rethrow_exception(failure_);
  if (ready_.empty()) return nullptr;
  auto chunk = std::move(ready_.front());
  ready_.pop_front();
  return chunk;
}

void InputPipeline::recycle(std::unique_ptr<ParsedChunk> chunk) {
  chunk->clear();
  {
    std::lock_guard lock(mu_);
    free_.push_back(std::move(chunk));
  }
  free_cv_.notify_one();
}

std::unique_ptr<ParsedChunk> InputPipeline::take_free() {
  std::unique_lock lock(mu_);
  if (free_.empty() && allocated_ < kInFlight) {
    ++allocated_;
    return std::make_unique<ParsedChunk>();
  }
  free_cv_.wait(lock, [&] { return !free_.empty() || stop_; });
  if (stop_) return nullptr;
  auto chunk = std::move(free_.front());
  free_.pop_front();
  return chunk;
}

void ParsedChunk::hash_all() {
  if (hashed) return;
  for (std::size_t i = 0; i < batch.count; ++i) batch.hashes[i] = hash_key(batch.items[i]);
  hashed = true;
}

bool InputPipeline::consumer_behind() {
  std::lock_guard lock(mu_);
  return !ready_.empty();
}

void InputPipeline::publish(std::unique_ptr<ParsedChunk> chunk) {
  {
    std::lock_guard lock(mu_);
    ready_.push_back(std::move(chunk));
  }
  ready_cv_.notify_one();
}

void InputPipeline::produce() {
  try {
    std::uint64_t total = 0;
    for (const auto& s : sources_) total = (s.size == 0 || total == UINT64_MAX) ? UINT64_MAX : total + s.size;
    Progress progress(options_.progress && total != UINT64_MAX ? total : 0);
    std::uint64_t done = 0;
    for (const auto& src : sources_) {
      read_source(src, progress, done);
      done += src.size;
    }
    progress.finish();
  } catch (...) {
    std::lock_guard lock(mu_);
    failure_ = std::current_exception();
  }
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  ready_cv_.notify_all();
}

void InputPipeline::malformed(const Source& src, std::uint64_t line_no, const std::string& why) {
  ++tally_.malformed;
  const std::string where = src.name + ":" + std::to_string(line_no) + ": " + why;
  if (options_.strict) throw Fatal{"malformed input at " + where + " (--strict)"};
  if (problems_.size() < options_.reported_problems) problems_.push_back(where);
}

void InputPipeline::read_source(const Source& src, Progress& progress, std::uint64_t done_bytes) {
  // A regular file is read up to the size it had when it was opened, so a
  // truncation after that (even before its turn came) is noticed.
  io::LineReader reader(src.fd, options_.max_line_bytes, src.size > 0 ? std::optional(src.size) : std::nullopt);
  std::vector<io::Line> lines;
  std::uint64_t line_no = 0;
  std::string error;
  const bool timed = parser_->has_time();
  for (;;) {
    auto chunk = take_free();
    if (!chunk) return;  // the consumer is gone
    bool more;
    try {
      more = reader.next(chunk->bytes, lines);
    } catch (const std::system_error& e) {
      throw Fatal{"cannot read '" + src.name + "': " + e.code().message()};
    }
    if (!more) {
      recycle(std::move(chunk));
      break;
    }
    const char* const owned_begin = chunk->bytes.data();
    const char* const owned_end = owned_begin + chunk->bytes.size();
    // Untimed input runs on the wall clock: the time a line was read.
    const double read_time = timed ? 0 : engine::wall_clock_now();
    engine::PreparedBatch& batch = chunk->batch;
    batch.reserve(lines.size());
    // Hash here while the consumer has chunks waiting (keys are hashed
    // best right after they are parsed, while in cache); else leave it.
    const bool hash_here = options_.hash_keys && consumer_behind();
    std::size_t kept = 0;
    // In registers through the loop (hash_key() and the rare calls would
    // otherwise make every line reload them, and newest a store-to-load
    // dependency from one line to the next).
    double newest = newest_time_;
    const double max_time_jump = options_.max_time_jump;
    const bool require_utf8 = options_.require_utf8;
    // Parsed a block at a time (one parser call each, the records read back
    // from L1), then checked and laid out line by line.
    for (std::size_t block = 0; block < lines.size();) {
      const std::size_t parsed = parser_->parse_lines(
          std::span<const io::Line>(lines).subspan(block, std::min(kParseBlock, lines.size() - block)), parsed_.data(), error);
      for (std::size_t j = 0; j < parsed; ++j) {
        ++line_no;
        const io::ParsedLine& p = parsed_[j];
        switch (p.status) {
          case io::ParseStatus::record: break;
          case io::ParseStatus::skipped: ++tally_.skipped; continue;
          case io::ParseStatus::zero_weight: ++tally_.zero_weight; continue;
          case io::ParseStatus::malformed:
            if (lines[block + j].oversized) {
              malformed(src, line_no, "line longer than " + std::to_string(options_.max_line_bytes) + " bytes (--max-line-bytes)");
            } else {
              malformed(src, line_no, error);
              error.clear();
            }
            continue;
        }
        const char* key_data = p.record.key.data();
        const std::size_t key_size = p.record.key.size();
        const double time = p.record.time ? *p.record.time : read_time;
        const double weight = p.record.weight;
        // engine::check_event(), with its fast test here and its message
        // built out of this loop's way.
        if (!engine::event_is_valid(engine::Event{std::string_view(key_data, key_size), time, weight}, rules_)) [[unlikely]] {
          if (const auto problem = engine::describe_event_problem(engine::Event{std::string_view(key_data, key_size), time, weight}, rules_)) {
            malformed(src, line_no, problem->field + " " + problem->message);
            continue;
          }
        }
        if (require_utf8) {
          const std::string_view key(key_data, key_size);
          if (const std::size_t valid = utf8_valid_prefix(key); valid != key.size()) [[unlikely]] {
            char byte[8];
            std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(key[valid]));
            malformed(src, line_no, "item_id is not valid UTF-8 (byte " + std::string(byte) + " at offset " + std::to_string(valid) + ")");
            continue;
          }
        }
        if (timed) {
          if (auto jump = check_time_jump(time, newest, max_time_jump)) [[unlikely]] {
            malformed(src, line_no, *jump + " (--max-time-jump)");
            continue;
          }
          if (!(time <= newest)) newest = time;  // also the first (newest NaN)
        }
        // Keys in the read buffer travel with it; rewritten ones are copied.
        if (key_data < owned_begin || key_data >= owned_end) [[unlikely]] {
          key_data = chunk->arena.keep(std::string_view(key_data, key_size)).data();
        }
        batch.items[kept] = std::string_view(key_data, key_size);
        batch.times[kept] = time;
        batch.weights[kept] = weight;
        if (hash_here) batch.hashes[kept] = hash_key(std::string_view(key_data, key_size));
        ++kept;
      }
      block += parsed;
    }
    newest_time_ = newest;
    batch.count = kept;
    chunk->hashed = hash_here;
    tally_.lines += lines.size();
    tally_.records += kept;
    parser_arena_.reset();
    progress.update(done_bytes + std::min(reader.bytes_read(), src.size));
    if (kept == 0) {
      recycle(std::move(chunk));
    } else {
      publish(std::move(chunk));
    }
  }
  if (reader.shrank()) {
    // logrotate's copytruncate, typically: what was read is counted, and
    // the run goes on, but the answer covers only part of the file.
    warnings_.push_back("'" + src.name + "' shrank while it was being read (truncated, e.g. by logrotate's copytruncate): " +
                        "counted the complete lines of its first " + std::to_string(reader.bytes_read()) + " of " +
                        std::to_string(reader.expected_bytes()) + " bytes");
  }
}

}  // namespace ebb::cli
