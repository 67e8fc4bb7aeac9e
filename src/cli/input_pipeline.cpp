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
#include "ebb/io/utf8.hpp"
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

void InputPipeline::publish(std::unique_ptr<ParsedChunk> chunk) {
  // Balance the two cores: when the consumer is behind (chunks queue up),
  // the producer also hashes the keys; otherwise the consumer does.
  bool consumer_behind;
  {
    std::lock_guard lock(mu_);
    consumer_behind = !ready_.empty();
  }
  if (consumer_behind) {
    chunk->hashes.resize(chunk->events.size());
    for (std::size_t i = 0; i < chunk->events.size(); ++i) chunk->hashes[i] = hash_key(chunk->events[i].item);
  }
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
    const std::string_view owned(chunk->bytes.data(), chunk->bytes.size());
    // Untimed input runs on the wall clock: the time a line was read.
    const double read_time = timed ? 0 : engine::wall_clock_now();
    for (const auto& line : lines) {
      ++line_no;
      ++tally_.lines;
      if (line.oversized) {
        malformed(src, line_no, "line longer than " + std::to_string(options_.max_line_bytes) + " bytes (--max-line-bytes)");
        continue;
      }
      io::Record rec;
      error.clear();
      switch (parser_->parse(line.text, rec, error)) {
        case io::ParseStatus::skipped: ++tally_.skipped; continue;
        case io::ParseStatus::zero_weight: ++tally_.zero_weight; continue;
        case io::ParseStatus::malformed: malformed(src, line_no, error); continue;
        case io::ParseStatus::record: break;
      }
      engine::Event ev{rec.key, rec.time.value_or(read_time), rec.weight};
      if (auto problem = engine::check_event(ev, rules_)) {
        malformed(src, line_no, problem->field + " " + problem->message);
        continue;
      }
      if (options_.require_utf8) {
        if (const std::size_t valid = io::utf8_valid_prefix(ev.item); valid != ev.item.size()) [[unlikely]] {
          char byte[8];
          std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(ev.item[valid]));
          malformed(src, line_no, "item_id is not valid UTF-8 (byte " + std::string(byte) + " at offset " + std::to_string(valid) + ")");
          continue;
        }
      }
      if (timed) {
        if (auto jump = check_time_jump(ev.time, newest_time_, options_.max_time_jump)) [[unlikely]] {
          malformed(src, line_no, *jump + " (--max-time-jump)");
          continue;
        }
        if (!(ev.time <= newest_time_)) newest_time_ = ev.time;  // also the first (newest_time_ NaN)
      }
      // Keys in the read buffer travel with it; rewritten ones are copied.
      if (ev.item.data() < owned.data() || ev.item.data() >= owned.data() + owned.size()) ev.item = chunk->arena.keep(ev.item);
      chunk->events.push_back(ev);
      ++tally_.records;
    }
    parser_arena_.reset();
    progress.update(done_bytes + std::min(reader.bytes_read(), src.size));
    if (chunk->events.empty()) {
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
