#pragma once
// How `ebb top` shows answers: an aligned table for people, or one JSON
// document per view in the /top-k response shape (--json).
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/engine/answers.hpp"
#include "ebb/engine/namespace.hpp"

namespace ebb::cli {

void print_table(std::FILE* out, const engine::TopKAnswer& answer, bool event_time);
void print_json(std::FILE* out, const std::string& ns, const engine::TopKAnswer& answer);

// A key for a terminal: as it is, but control characters (a newline would
// forge a row, an escape colour the terminal) as '?', and past `max` bytes
// cut with "...".
std::string printable(std::string_view key, std::size_t max = 60);

// "2024-02-22T18:00:00Z" (fractions dropped) for a Unix time.
std::string format_utc(double t);

}  // namespace ebb::cli
