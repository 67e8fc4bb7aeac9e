#pragma once
// CLI11 check for duration flags (--half-life 5m, --every 1m, ...): the
// message is the parser's own, naming the text that was wrong.
#include <CLI/CLI.hpp>

#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"

namespace ebb::cli {

inline const CLI::Validator& duration_validator() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        try {
          (void)parse_duration(s);
          return {};
        } catch (const InvalidArgument& e) {
          return e.what();
        }
      },
      "DUR", "duration");
  return v;
}

// The same, also taking "0" (for flags where 0 turns a feature off).
inline const CLI::Validator& duration_or_zero_validator() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        if (s == "0") return {};
        std::string copy = s;
        const std::string problem = duration_validator()(copy);
        return problem.empty() ? problem : problem + " (or 0 for off)";
      },
      "DUR|0", "duration or 0");
  return v;
}

}  // namespace ebb::cli
