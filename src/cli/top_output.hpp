#pragma once
// How `ebb top` shows answers: an aligned table for people, or one JSON
// document per view in the /top-k response shape (--json).
#include <cstdio>
#include <string>
#include <vector>

#include "ebb/engine/answers.hpp"
#include "ebb/engine/namespace.hpp"

namespace ebb::cli {

struct InputTally {
  std::uint64_t lines = 0;
  std::uint64_t records = 0;
  std::uint64_t malformed = 0;
  std::uint64_t skipped = 0;      // blank and header lines
  std::uint64_t zero_weight = 0;
};

void print_table(std::FILE* out, const engine::TopKAnswer& answer, bool event_time);
void print_json(std::FILE* out, const std::string& ns, const engine::TopKAnswer& answer);

// "2024-02-22T18:00:00Z" (fractions dropped) for a Unix time.
std::string format_utc(double t);

}  // namespace ebb::cli
