// `ebb top`: stream files or stdin through one namespace and print the
// heaviest hitters, all-time and for each --half-life.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"
#include "ebb/engine/namespace.hpp"
#include "ebb/io/line_reader.hpp"
#include "progress.hpp"
#include "top_options.hpp"
#include "top_output.hpp"

namespace ebb::cli {
namespace {

constexpr std::size_t kBatch = 4096;
constexpr std::size_t kReportedProblems = 5;

// Thrown to stop the run with a message and exit code 1 (--strict, I/O).
struct Fatal {
  std::string message;
};

struct Source {
  std::string name;  // for messages: the path, or "stdin"
  int fd;
  bool owned;
  std::uint64_t size;  // 0 when unknown (pipe, terminal)
};

Source open_source(const std::string& path) {
  if (path == "-") return {"stdin", STDIN_FILENO, false, 0};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Fatal{"cannot open '" + path + "': " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Fatal{"cannot read '" + path + "': it is a directory"};
  }
  const std::uint64_t size = (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) ? static_cast<std::uint64_t>(st.st_size) : 0;
  return {path, fd, true, size};
}

engine::NamespaceConfig make_config(const TopOptions& o, bool event_time) {
  engine::NamespaceConfig c;
  c.name = "top";
  c.k = o.k;
  c.all_time = true;
  for (const auto& h : o.half_lives) c.half_lives.push_back(parse_duration(h));
  if (o.epsilon || o.delta) {
    c.sketch = CountMinShape::for_error(o.epsilon.value_or(1e-4), o.delta.value_or(1e-3));
  } else {
    c.sketch = CountMinShape::with_dimensions(o.width.value_or(1u << 16), o.depth.value_or(4));
  }
  c.summary = o.summary == "space_saving" ? engine::SummaryKind::space_saving : engine::SummaryKind::candidate_heap;
  c.candidates = o.candidates;
  c.exclude = o.exclude;
  c.max_item_bytes = o.max_key_bytes;
  c.clock = event_time ? engine::ClockMode::event : engine::ClockMode::wall;
  c.validate();
  return c;
}

class TopRun {
 public:
  TopRun(const TopOptions& o) : opts_(o) {
    const auto format = io::parse_input_format(o.format);
    parser_ = io::make_record_parser(format, o.fields, io::parse_time_format(o.time_format), arena_);
    event_time_ = parser_->has_time();
    ns_.emplace(make_config(o, event_time_));
    if (!o.every.empty()) every_ = parse_duration(o.every);
    live_tty_ = every_ > 0 && ::isatty(STDOUT_FILENO);
    events_.reserve(kBatch);
  }

  int run() {
    std::vector<std::string> files = opts_.files;
    if (files.empty()) files.push_back("-");
    std::uint64_t total_size = 0;
    std::vector<Source> sources;
    for (const auto& f : files) {
      sources.push_back(open_source(f));
      total_size = sources.back().size == 0 || total_size == UINT64_MAX ? UINT64_MAX : total_size + sources.back().size;
    }
    const bool show_progress = !opts_.no_progress && !live_tty_ && ::isatty(STDERR_FILENO) && total_size != UINT64_MAX && total_size > 0;
    Progress progress(show_progress ? total_size : 0);
    std::uint64_t done_bytes = 0;
    for (auto& src : sources) {
      read_source(src, progress, done_bytes);
      done_bytes += src.size;
      if (src.owned) ::close(src.fd);
    }
    flush();
    progress.finish();
    print_all(true);
    report_problems();
    return 0;
  }

 private:
  void read_source(const Source& src, Progress& progress, std::uint64_t done_bytes) {
    io::LineReader reader(src.fd, opts_.max_line_bytes);
    std::vector<io::Line> lines;
    std::uint64_t line_no = 0;
    std::string error;
    for (;;) {
      bool more;
      try {
        more = reader.next(lines);
      } catch (const std::system_error& e) {
        throw Fatal{"cannot read '" + src.name + "': " + e.code().message()};
      }
      if (!more) break;
      const double wall_now = event_time_ ? 0 : engine::wall_clock_now();
      for (const auto& line : lines) {
        ++line_no;
        ++tally_.lines;
        if (line.oversized) {
          malformed(src, line_no, "line longer than " + std::to_string(opts_.max_line_bytes) + " bytes (--max-line-bytes)");
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
        engine::Event ev{rec.key, rec.time.value_or(wall_now), rec.weight};
        if (auto problem = engine::check_event(ev, ns_->config())) {
          malformed(src, line_no, problem->field + " " + problem->message);
          continue;
        }
        if (every_ > 0) maybe_print_live(ev.time);
        events_.push_back(ev);
        ++tally_.records;
        if (events_.size() == kBatch) flush();
      }
      // The views handed out by the reader die with the next chunk.
      flush();
      if (every_ > 0 && !event_time_) maybe_print_live(engine::wall_clock_now());
      progress.update(done_bytes + std::min(reader.bytes_read(), src.size));
    }
  }

  void flush() {
    if (events_.empty()) return;
    ns_->apply(events_);  // every event was checked: this cannot throw on input
    events_.clear();
    arena_.reset();
  }

  // Live mode: print the lists each time stream time crosses a multiple of --every.
  void maybe_print_live(double t) {
    if (std::isnan(next_print_)) {
      next_print_ = (std::floor(t / every_) + 1) * every_;
      return;
    }
    if (t < next_print_) return;
    flush();
    print_all(false);
    while (next_print_ <= t) next_print_ += every_;
  }

  void print_all(bool final_frame) {
    if (live_tty_) std::fputs("\x1b[H\x1b[2J", stdout);  // redraw in place
    else if (every_ > 0 && frames_++ > 0 && !opts_.json) std::fputs("\n", stdout);
    for (const auto& view : ns_->views()) {
      const auto answer = ns_->top(view->spec(), opts_.k);
      if (opts_.json) {
        print_json(stdout, ns_->config().name, answer);
      } else {
        print_table(stdout, answer, event_time_);
        if (&view != &ns_->views().back()) std::fputs("\n", stdout);
      }
    }
    if (!opts_.json && final_frame) {
      const auto s = ns_->stats();
      std::fprintf(stdout, "\n%llu events counted from %llu lines", static_cast<unsigned long long>(s.events),
                   static_cast<unsigned long long>(tally_.lines));
      if (s.excluded) std::fprintf(stdout, ", %llu excluded", static_cast<unsigned long long>(s.excluded));
      std::fprintf(stdout, "; state %.1f MiB\n", s.memory_bytes / 1048576.0);
    }
    std::fflush(stdout);
  }

  void malformed(const Source& src, std::uint64_t line_no, const std::string& why) {
    ++tally_.malformed;
    const std::string where = src.name + ":" + std::to_string(line_no) + ": " + why;
    if (opts_.strict) throw Fatal{"malformed input at " + where + " (--strict)"};
    if (problems_.size() < kReportedProblems) problems_.push_back(where);
  }

  void report_problems() const {
    if (tally_.malformed > 0) {
      std::fprintf(stderr, "ebb top: %llu malformed line%s skipped (use --strict to stop at the first):\n",
                   static_cast<unsigned long long>(tally_.malformed), tally_.malformed == 1 ? "" : "s");
      for (const auto& p : problems_) std::fprintf(stderr, "  %s\n", p.c_str());
      if (tally_.malformed > problems_.size()) {
        std::fprintf(stderr, "  ... and %llu more\n", static_cast<unsigned long long>(tally_.malformed - problems_.size()));
      }
    }
    if (tally_.zero_weight > 0) {
      std::fprintf(stderr, "ebb top: %llu line%s with weight 0 or '-' not counted\n",
                   static_cast<unsigned long long>(tally_.zero_weight), tally_.zero_weight == 1 ? "" : "s");
    }
  }

  const TopOptions& opts_;
  io::KeyArena arena_;
  std::unique_ptr<io::RecordParser> parser_;
  std::optional<engine::Namespace> ns_;
  bool event_time_ = false;
  double every_ = 0;
  bool live_tty_ = false;
  double next_print_ = NAN;
  int frames_ = 0;
  std::vector<engine::Event> events_;
  InputTally tally_;
  std::vector<std::string> problems_;
};

// CLI11 validator: a duration ebb understands.
const CLI::Validator kDuration(
    [](std::string& s) -> std::string {
      try {
        (void)parse_duration(s);
        return {};
      } catch (const InvalidArgument& e) {
        return e.what();
      }
    },
    "DUR", "duration");

}  // namespace

CLI::App* add_top_command(CLI::App& app, TopOptions& o) {
  auto* cmd = app.add_subcommand("top", "Heaviest hitters of files or stdin, all-time and decayed (\"now\")");
  cmd->add_option("files", o.files, "Input files (stdin when none or \"-\")");
  cmd->add_option("-k", o.k, "Items to show")->default_val(10)->check(CLI::Range(1, 1000));
  cmd->add_option("--format", o.format, "Input format: plain (each line is a key), tsv, csv, json (NDJSON), clf")
      ->default_val("plain")
      ->check(CLI::IsMember({"plain", "tsv", "csv", "json", "ndjson", "clf"}));
  cmd->add_option("--key", o.fields.key, "Key field: 1-based column or header name (tsv, csv; default 1), dotted path (json; default item_id), clf field (default path)");
  cmd->add_option("--time", o.fields.time, "Time field, same syntax (clf default: time). With times, \"now\" is the newest event time");
  cmd->add_option("--weight", o.fields.weight, "Weight field, same syntax (default: every record weighs 1)");
  cmd->add_option("--time-format", o.time_format, "unix, unix_ms, rfc3339, clf or auto (detected from the first timestamp)")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "unix", "unix_ms", "rfc3339", "clf"}));
  cmd->add_option("--half-life", o.half_lives, "Add a decayed view with this half-life (e.g. 5m, 1h); repeatable")
      ->expected(1)->allow_extra_args(false)
      ->check(kDuration);
  cmd->add_option("--window", o.windows, "Exact-boundary window view (not available yet)")->expected(1)->allow_extra_args(false)->check(kDuration);
  auto* eps = cmd->add_option("--epsilon", o.epsilon, "Sketch error target: over-count <= epsilon x total (sizes the width)")
                  ->check(CLI::Range(1e-9, 0.5));
  auto* delta = cmd->add_option("--delta", o.delta, "Sketch failure probability (sizes the depth)")->check(CLI::Range(1e-12, 0.5));
  auto* width = cmd->add_option("--width", o.width, "Sketch width, a power of two (default 65536)");
  auto* depth = cmd->add_option("--depth", o.depth, "Sketch depth (default 4)");
  eps->excludes(width)->excludes(depth);
  delta->excludes(width)->excludes(depth);
  cmd->add_option("--candidates", o.candidates, "Top-K summary capacity (default max(1024, 4k))");
  cmd->add_option("--summary", o.summary, "Top-K summary: candidate_heap (CMS-fed) or space_saving")
      ->default_val("candidate_heap")
      ->check(CLI::IsMember({"candidate_heap", "space_saving"}));
  cmd->add_option("--exclude", o.exclude, "An item never counted (repeatable)")->expected(1)->allow_extra_args(false);
  cmd->add_option("--max-key-bytes", o.max_key_bytes, "Longer keys are malformed records")->default_val(1024)->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-line-bytes", o.max_line_bytes, "Longer lines are malformed")->default_val(1 << 20)->check(CLI::Range(16, 64 << 20));
  cmd->add_flag("--json", o.json, "Print each view as a JSON document in the /top-k response shape");
  cmd->add_option("--every", o.every, "Live mode: print the lists every DUR of stream time")->check(kDuration);
  cmd->add_flag("--strict", o.strict, "Stop at the first malformed line (exit 1)");
  cmd->add_flag("--no-progress", o.no_progress, "No progress bar on stderr");
  return cmd;
}

int run_top(const TopOptions& o) {
  if (!o.windows.empty()) {
    std::fprintf(stderr, "ebb top: --window is not available yet (exact-boundary windows are a later issue); use --half-life for a decayed view\n");
    return 2;
  }
  try {
    TopRun run(o);
    return run.run();
  } catch (const InvalidArgument& e) {
    std::fprintf(stderr, "ebb top: %s\n", e.what());
    return 2;
  } catch (const Fatal& f) {
    std::fflush(stdout);
    std::fprintf(stderr, "ebb top: %s\n", f.message.c_str());
    return 1;
  }
}

}  // namespace ebb::cli
