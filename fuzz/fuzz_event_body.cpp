// POST /events bodies (server/event_body_parser.hpp), the bytes every
// client can send. Input: one option byte (bit 0: NDJSON, else JSON; bit 1:
// a ?namespace= default), then the body.
// Checks: a refused body is an ApiError (400 invalid_json, invalid_field or
// invalid_event, 413 batch_too_large) with a message, never anything else;
// an accepted one has one non-empty namespace per event, at most
// max_batch_events events, NDJSON line numbers rising within the body; and
// each accepted NDJSON line reads the same as the JSON body {"events":[line]}.
#include <simdjson.h>

#include <cstring>

#include "ebb/server/event_body_parser.hpp"
#include "ebb/server/http_types.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb;
using ebb::server::ParsedBatch;

constexpr double kReceivedAt = 1.7e9;

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Parses, turning the documented errors into false; anything else escapes.
bool parse(std::string_view body, bool ndjson, std::string_view default_ns, const service::ServiceLimits& limits,
           simdjson::dom::parser& parser, ParsedBatch& out, std::string* error_code = nullptr, std::string* message = nullptr) {
  try {
    server::parse_event_body(body, ndjson, default_ns, kReceivedAt, limits, parser, out);
    return true;
  } catch (const server::ApiError& e) {
    const std::string code = e.code();
    FUZZ_CHECK_MSG((e.status() == 400 && (code == "invalid_json" || code == "invalid_field" || code == "invalid_event")) ||
                       (e.status() == 413 && code == "batch_too_large"),
                   code);
    FUZZ_CHECK(std::strlen(e.what()) > 0);
    if (error_code) *error_code = code;
    if (message) *message = e.what();
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const std::uint8_t options = in.byte();
  const bool ndjson = options & 1;
  const std::string_view default_ns = options & 2 ? "dflt" : "";
  const std::string_view body = in.rest();
  service::ServiceLimits limits;
  limits.max_batch_events = 16;  // small enough for the fuzzer to reach the 413

  static simdjson::dom::parser parser;
  ParsedBatch batch;
  if (!parse(body, ndjson, default_ns, limits, parser, batch)) return 0;

  FUZZ_CHECK(batch.ndjson == ndjson);
  FUZZ_CHECK(batch.events.size() == batch.namespaces.size());
  FUZZ_CHECK(batch.events.size() <= limits.max_batch_events);
  for (auto ns : batch.namespaces) FUZZ_CHECK(!ns.empty());
  if (!ndjson) {
    FUZZ_CHECK(batch.lines.empty());
    return 0;
  }
  FUZZ_CHECK(batch.lines.size() == batch.events.size());
  for (std::size_t i = 0; i < batch.lines.size(); ++i) FUZZ_CHECK(batch.lines[i] >= 1 && (i == 0 || batch.lines[i] > batch.lines[i - 1]));

  // Each event's line alone, as a JSON body: the same event (NDJSON strings
  // live in the batch's arena, so they outlive the parser's next document).
  std::vector<std::string_view> lines;
  for (std::string_view rest = body;;) {
    const std::size_t nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  for (std::size_t i = 0; i < batch.events.size(); ++i) {
    const std::string wrapped = "{\"events\":[" + std::string(lines.at(batch.lines[i] - 1)) + "]}";
    ParsedBatch single;
    std::string code, message;
    if (!parse(wrapped, false, default_ns, limits, parser, single, &code, &message)) {
      // Two more levels of nesting can pass simdjson's depth limit; nothing else may differ.
      FUZZ_CHECK_MSG(code == "invalid_json" && message.find("too deep") != std::string::npos, message);
      continue;
    }
    FUZZ_CHECK(single.events.size() == 1);
    const auto& a = batch.events[i];
    const auto& b = single.events[0];
    FUZZ_CHECK(a.item == b.item && same_bits(a.time, b.time) && same_bits(a.weight, b.weight));
    FUZZ_CHECK(batch.namespaces[i] == single.namespaces[0]);
  }
  return 0;
}
