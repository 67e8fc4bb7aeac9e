#pragma once
// `ebb top`'s options, as parsed from the command line.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ebb/engine/namespace_config.hpp"
#include "ebb/io/record_parser.hpp"
#include "ebb/io/time_format.hpp"

namespace CLI {
class App;
}

namespace ebb::cli {

struct TopOptions {
  std::vector<std::string> files;  // "-" or none: stdin
  std::uint32_t k = 10;
  std::string format = "plain";
  io::FieldSpec fields;
  std::string time_format = "auto";
  std::string max_time_jump = "1d";
  std::vector<std::string> half_lives;
  std::vector<std::string> windows;
  std::optional<double> epsilon, delta;
  std::optional<std::uint64_t> width, depth;
  std::uint32_t candidates = 0;
  std::string memory;  // a budget per view ("128KiB"): sizes the sketch and the candidates
  std::string summary = "candidate_heap";
  bool exact = false;                    // one exact record per key (no sketch)
  std::uint64_t max_items = 1'000'000;   // exact: records held at most
  std::vector<std::string> exclude;
  std::uint32_t max_key_bytes = 1024;
  std::uint32_t max_line_bytes = 1 << 20;
  bool json = false;
  std::string every;
  bool strict = false;
  bool no_progress = false;
};

// Registers the subcommand and its flags on the app; `opts` receives values.
CLI::App* add_top_command(CLI::App& app, TopOptions& opts);

// Runs it: returns the process exit code (0 ok, 1 input error, 2 usage).
int run_top(const TopOptions& opts);

}  // namespace ebb::cli
