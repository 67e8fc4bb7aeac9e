#pragma once
// The body of POST /events, parsed and checked for shape (not for the
// engine's rules, which are the service's): JSON ({"events": [...]}, with
// an optional top-level "namespace") or NDJSON (one event object per line).
// The handler (api_events.cpp) and fuzz/fuzz_event_body.cpp call this.
#include <cstddef>
#include <string_view>
#include <vector>

#include "ebb/engine/event.hpp"
#include "ebb/io/key_arena.hpp"
#include "ebb/service/limits.hpp"

namespace simdjson::dom {
class parser;
}

namespace ebb::server {

struct ParsedBatch {
  std::vector<engine::Event> events;
  std::vector<std::string_view> namespaces;  // per event, never empty
  std::vector<std::size_t> lines;            // NDJSON: each event's line number (1-based); empty for JSON
  io::KeyArena arena;                        // copies of NDJSON strings
  bool ndjson = false;
};

// Whether a request's media type (lower case, no parameters) selects NDJSON;
// anything else is read as JSON.
bool is_ndjson_media_type(std::string_view content_type) noexcept;

// Parses `body` into `out` (which must be fresh). Events without
// "timestamp" (or with null) get `received_at`, without "weight" 1; an
// event's namespace is its own "namespace", else the body's top-level one
// (JSON), else `default_ns` (?namespace=); none at all is an error.
//
// Strings point into `body`'s parse in `parser` (JSON: valid until the
// parser's next parse) or into out.arena (NDJSON).
//
// `readable_past_end`: how many bytes after the body's end may be read
// (never used for the result). simdjson reads in 64-byte blocks; with
// SIMDJSON_PADDING bytes there it parses the body in place instead of
// copying it into a padded buffer of its own.
//
// Throws ApiError only: 400 invalid_json, invalid_field or invalid_event
// (the message names the event, its line for NDJSON, and the field), or
// 413 batch_too_large past limits.max_batch_events.
void parse_event_body(std::string_view body, bool ndjson, std::string_view default_ns, double received_at,
                      const service::ServiceLimits& limits, simdjson::dom::parser& parser, ParsedBatch& out,
                      std::size_t readable_past_end = 0);

}  // namespace ebb::server
