// `ebb top`: stream files or stdin through one namespace and print the
// heaviest hitters, all-time and for each --half-life.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "ebb/core/byte_size.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"
#include "ebb/engine/decayed_view.hpp"
#include "ebb/engine/namespace.hpp"
#include "byte_size_transform.hpp"
#include "duration_validator.hpp"
#include "input_pipeline.hpp"
#include "top_options.hpp"
#include "top_output.hpp"

namespace ebb::cli {
namespace {

engine::NamespaceConfig make_config(const TopOptions& o, bool event_time) {
  engine::NamespaceConfig c;
  c.name = "top";
  c.k = o.k;
  c.all_time = true;
  for (const auto& w : o.windows) c.windows.push_back(parse_duration(w));
  for (const auto& h : o.half_lives) c.half_lives.push_back(parse_duration(h));
  if (o.epsilon || o.delta) {
    c.sketch = CountMinShape::for_error(o.epsilon.value_or(1e-4), o.delta.value_or(1e-3));
  } else {
    c.sketch = CountMinShape::with_dimensions(o.width.value_or(1u << 16), o.depth.value_or(4));
  }
  if (o.exact) {
    c.counting = engine::Counting::exact;
    c.max_items = o.max_items;
  }
  c.summary = o.summary == "space_saving" ? engine::SummaryKind::space_saving : engine::SummaryKind::candidate_heap;
  c.candidates = o.candidates;
  if (!o.memory.empty()) {
    c.memory = parse_byte_size(o.memory);
    if (c.memory == 0) throw InvalidArgument("--memory: must be a size above 0, e.g. 128KiB");
    if (c.summary == engine::SummaryKind::space_saving) throw InvalidArgument("--memory: sizes the candidate heap, not --summary space_saving");
    const auto sizing = engine::DecayedView::fit_budget(c.memory, c.k);
    c.sketch = sizing.sketch;
    c.candidates = sizing.candidates;
  }
  c.exclude = o.exclude;
  c.max_item_bytes = o.max_key_bytes;
  c.clock = event_time ? engine::ClockMode::event : engine::ClockMode::wall;
  // The input pipeline guards event time itself (--max-time-jump, reported
  // per line); a file is history, so no age limit here.
  c.max_event_age = INFINITY;
  c.max_time_jump = INFINITY;
  c.validate();
  return c;
}

class TopRun {
 public:
  explicit TopRun(const TopOptions& o) : opts_(o) {
    const auto format = io::parse_input_format(o.format);
    auto parser = io::make_record_parser(format, o.fields, io::parse_time_format(o.time_format), parser_arena_);
    event_time_ = parser->has_time();
    config_ = make_config(o, event_time_);
    if (!o.every.empty()) every_ = parse_duration(o.every);
    max_time_jump_ = parse_duration(o.max_time_jump);
    live_tty_ = every_ > 0 && ::isatty(STDOUT_FILENO);
    parser_ = std::move(parser);
  }

  int run() {
    std::vector<std::string> files = opts_.files;
    if (files.empty()) files.push_back("-");
    std::vector<Source> sources;
    try {
      for (const auto& f : files) sources.push_back(open_source(f));
    } catch (...) {
      for (auto& s : sources) {
        if (s.owned) ::close(s.fd);
      }
      throw;
    }
    PipelineOptions popts;
    popts.strict = opts_.strict;
    popts.max_line_bytes = opts_.max_line_bytes;
    popts.progress = !opts_.no_progress && !live_tty_ && ::isatty(STDERR_FILENO);
    popts.max_time_jump = max_time_jump_;
    popts.hash_keys = true;
    // The namespace before the producer thread starts: if building it fails
    // (memory), the error is reported at once, not after a pipeline blocked
    // in read(2) on an idle stdin was joined.
    ns_.emplace(config_);
    InputPipeline input(std::move(sources), std::move(parser_), parser_arena_, config_, popts);
    while (auto chunk = input.next()) {
      apply(*chunk);
      input.recycle(std::move(chunk));
    }
    print_all(true, input.tally());
    report_input_problems("ebb top", input.tally(), input.problems(), input.warnings());
    return 0;
  }

 private:
  // Every event was checked by the producer, so apply() cannot reject it.
  void apply(ParsedChunk& chunk) {
    chunk.hash_all();
    engine::PreparedBatch& batch = chunk.batch;
    if (every_ == 0) {
      ns_->apply(batch);
      return;
    }
    // Live mode: print each time stream time crosses a multiple of --every.
    std::size_t begin = 0;
    for (std::size_t i = 0; i < batch.count; ++i) {
      const double t = batch.times[i];
      if (std::isnan(next_print_)) next_print_ = (std::floor(t / every_) + 1) * every_;
      if (t < next_print_) continue;
      apply_part(batch, begin, i);
      begin = i;
      print_all(false, {});
      while (next_print_ <= t) next_print_ += every_;
    }
    apply_part(batch, begin, batch.count);
  }

  // Events [begin, end) of a chunk, through a batch of their own.
  void apply_part(const engine::PreparedBatch& batch, std::size_t begin, std::size_t end) {
    const std::size_t n = end - begin;
    part_.reserve(n);
    std::copy_n(batch.items.begin() + begin, n, part_.items.begin());
    std::copy_n(batch.hashes.begin() + begin, n, part_.hashes.begin());
    std::copy_n(batch.times.begin() + begin, n, part_.times.begin());
    std::copy_n(batch.weights.begin() + begin, n, part_.weights.begin());
    part_.count = n;
    ns_->apply(part_);
  }

  void print_all(bool final_frame, const InputTally& tally) {
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
                   static_cast<unsigned long long>(tally.lines));
      if (s.excluded) std::fprintf(stdout, ", %llu excluded", static_cast<unsigned long long>(s.excluded));
      std::fprintf(stdout, "; state %.1f MiB\n", s.memory_bytes / 1048576.0);
    }
    std::fflush(stdout);
  }

  const TopOptions& opts_;
  io::KeyArena parser_arena_;
  std::unique_ptr<io::RecordParser> parser_;
  engine::NamespaceConfig config_;
  std::optional<engine::Namespace> ns_;
  bool event_time_ = false;
  double every_ = 0;
  double max_time_jump_ = 0;
  bool live_tty_ = false;
  double next_print_ = NAN;
  int frames_ = 0;
  engine::PreparedBatch part_;  // live mode: the part of a chunk before an interval boundary
};


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
  cmd->add_option("--time-format", o.time_format,
                  "unix, unix_ms, rfc3339, clf or auto (each value by its own shape; a number's unit by its size: "
                  "< 1e11 s, < 1e14 ms, < 1e17 us, else ns)")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "unix", "unix_ms", "rfc3339", "clf"}));
  cmd->add_option("--max-time-jump", o.max_time_jump,
                  "With times: an event more than DUR ahead of the newest event time so far is a malformed line "
                  "(instead of moving \"now\" for good)")
      ->default_val("1d")
      ->check(duration_validator());
  cmd->add_option("--half-life", o.half_lives, "Add a decayed view with this half-life (e.g. 5m, 1h); repeatable")
      ->allow_extra_args(false)
      ->check(duration_validator());
  cmd->add_option("--window", o.windows, "Add an exact-boundary window view (the last DUR: 1m, 1h, 1d); repeatable")->allow_extra_args(false)->check(duration_validator());
  auto* eps = cmd->add_option("--epsilon", o.epsilon, "Sketch error target: over-count <= epsilon x total (sizes the width)")
                  ->check(CLI::Range(1e-9, 0.5));
  auto* delta = cmd->add_option("--delta", o.delta, "Sketch failure probability (sizes the depth)")->check(CLI::Range(1e-12, 0.5));
  auto* width = cmd->add_option("--width", o.width, "Sketch width, a power of two (default 65536)");
  auto* depth = cmd->add_option("--depth", o.depth, "Sketch depth (default 4)");
  eps->excludes(width)->excludes(depth);
  delta->excludes(width)->excludes(depth);
  auto* candidates = cmd->add_option("--candidates", o.candidates, "Top-K summary capacity (default max(1024, 4k))");
  auto* exact = cmd->add_flag("--exact", o.exact, "Count exactly: one record per key, no sketch (memory grows with keys up to --max-items)");
  cmd->add_option("--max-items", o.max_items, "With --exact: records held at most; past it the lowest-scoring is evicted and the answer says so")
      ->check(CLI::Range(std::uint64_t{1}, engine::NamespaceConfig::kMaxItems))
      ->needs(exact);
  auto* memory = cmd->add_option("--memory", o.memory,
                                 "Memory budget per all-time or decayed view, all in (e.g. 128KiB): sizes the sketch and the candidates; "
                                 "with long keys fewer candidates fit, and the answer says so")
                     ->check([](const std::string& s) { return s.empty() ? std::string("must be a size such as 128KiB") : std::string(); });
  for (auto* sized : {eps, delta, width, depth, candidates}) memory->excludes(sized);
  for (auto* sketch_flag : {eps, delta, width, depth, candidates, memory}) exact->excludes(sketch_flag);
  exact->excludes(cmd->add_option("--summary", o.summary, "Top-K summary: candidate_heap (CMS-fed) or space_saving")
                      ->default_val("candidate_heap")
                      ->check(CLI::IsMember({"candidate_heap", "space_saving"})));
  cmd->add_option("--exclude", o.exclude, "An item never counted (repeatable)")->allow_extra_args(false);
  cmd->add_option("--max-key-bytes", o.max_key_bytes, "Longer keys are malformed records")->default_val(1024)->transform(byte_size_transform())->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-line-bytes", o.max_line_bytes, "Longer lines are malformed")->default_val(1 << 20)->transform(byte_size_transform())->check(CLI::Range(16, 64 << 20));
  cmd->add_flag("--json", o.json,
                "Print each view as a JSON document in the /top-k response shape (in keys, bytes that are not UTF-8 read \\ufffd)");
  cmd->add_option("--every", o.every, "Live mode: print the lists every DUR of stream time")->check(duration_validator());
  cmd->add_flag("--strict", o.strict, "Stop at the first malformed line (exit 1)");
  cmd->add_flag("--no-progress", o.no_progress, "No progress bar on stderr");
  return cmd;
}

int run_top(const TopOptions& o) {
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
