// POST /events bodies: JSON ({"events": [...]}) or NDJSON (one event object
// per line), checked for shape; the engine's rules are the service's.
#include "ebb/server/event_body_parser.hpp"

#include <simdjson.h>

#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "ebb/core/error.hpp"
#include "ebb/server/http_types.hpp"

namespace ebb::server {
namespace {

using simdjson::dom::element;

[[noreturn]] void bad_event(const std::string& at, const std::string& field, const std::string& why) {
  throw bad_request("invalid_event", at + "." + field + ": " + why);
}

// The fields an event object may hold, told apart by length first: with a
// constant length the compare is a load or two, not a call to memcmp for
// every member of every event (2.5% of the server's CPU under HTTP ingest).
enum class EventField { item_id, ns, timestamp, weight, other };
EventField event_field(std::string_view key) noexcept {
  switch (key.size()) {
    case 7: return std::memcmp(key.data(), "item_id", 7) == 0 ? EventField::item_id : EventField::other;
    case 9:
      if (std::memcmp(key.data(), "namespace", 9) == 0) return EventField::ns;
      return std::memcmp(key.data(), "timestamp", 9) == 0 ? EventField::timestamp : EventField::other;
    case 6: return std::memcmp(key.data(), "weight", 6) == 0 ? EventField::weight : EventField::other;
    default: return EventField::other;
  }
}

// One event object. Strings point into the parser's document (JSON) or are
// copied into the arena (NDJSON, whose lines reuse the parser).
void read_event(element obj, std::size_t index, std::string_view default_ns, double received_at, ParsedBatch& out, std::size_t line = 0) {
  // Where the event is, for errors only: built when one is thrown, not for
  // every event of every batch.
  const auto at = [&] { return "events[" + std::to_string(index) + "]" + (line ? " (line " + std::to_string(line) + ")" : ""); };
  if (!obj.is_object()) throw bad_request("invalid_event", at() + ": must be an object");
  engine::Event ev{{}, received_at, 1.0};
  std::string_view ns = default_ns;
  bool has_item = false;
  unsigned seen = 0;  // the known fields read, a bit each (a field named twice is refused)
  const simdjson::dom::object members = obj.get_object().value_unsafe();
  for (auto [key, value] : members) {
    const EventField field = event_field(key);
    if (field != EventField::other) {
      const unsigned bit = 1u << static_cast<unsigned>(field);
      if (seen & bit) bad_event(at(), std::string(key), "is given twice");
      seen |= bit;
    }
    switch (field) {
      case EventField::item_id:
        if (!value.is_string()) bad_event(at(), "item_id", "must be a string");
        ev.item = value.get_string().value_unsafe();
        has_item = true;
        break;
      case EventField::ns:
        if (!value.is_string()) bad_event(at(), "namespace", "must be a string");
        ns = value.get_string().value_unsafe();
        break;
      case EventField::timestamp:
        if (value.is_null()) break;  // the receive time
        if (!value.is_number()) bad_event(at(), "timestamp", "must be a number of Unix seconds");
        ev.time = value.get_double().value_unsafe();
        break;
      case EventField::weight:
        if (!value.is_number()) bad_event(at(), "weight", "must be a number");
        ev.weight = value.get_double().value_unsafe();
        break;
      case EventField::other:  // metadata: the producer's business, ignored
        break;
    }
  }
  if (!has_item) bad_event(at(), "item_id", "is required");
  if (ns.empty()) bad_event(at(), "namespace", "is required (per event, as \"namespace\" at the top level, or ?namespace=)");
  if (out.ndjson) {
    ev.item = out.arena.keep(ev.item);
    ns = out.arena.keep(ns);
  }
  out.events.push_back(ev);
  out.namespaces.push_back(ns);
}

void check_size(const ParsedBatch& b, const service::ServiceLimits& limits) {
  if (b.events.size() > limits.max_batch_events) {
    throw ApiError(413, "batch_too_large", "events: more than " + std::to_string(limits.max_batch_events) +
                                               " events in one batch (--max-batch-events)");
  }
}

void parse_json(std::string_view body, std::size_t padding, std::string_view default_ns, double received_at, simdjson::dom::parser& parser,
                const service::ServiceLimits& limits, ParsedBatch& out) {
  element doc;
  if (auto err = parser.parse(body.data(), body.size(), /*realloc_if_needed=*/padding < simdjson::SIMDJSON_PADDING).get(doc)) {
    throw bad_request("invalid_json", std::string("request body is not valid JSON: ") + simdjson::error_message(err));
  }
  if (!doc.is_object()) throw bad_request("invalid_json", "request body must be an object {\"events\": [...]}");
  std::optional<element> events;
  bool has_namespace = false;
  const simdjson::dom::object members = doc.get_object().value_unsafe();
  for (auto [key, value] : members) {
    if ((key == "events" && events) || (key == "namespace" && std::exchange(has_namespace, true))) {
      throw bad_request("invalid_field", std::string(key) + ": is given twice");
    }
    if (key == "events") {
      events = value;
    } else if (key == "namespace") {
      if (!value.is_string()) throw bad_request("invalid_field", "namespace: must be a string");
      default_ns = value.get_string().value_unsafe();
    } else {
      throw bad_request("invalid_field", message_text(key) + ": unknown field (expected \"events\" and optionally \"namespace\")");
    }
  }
  if (!events) throw bad_request("invalid_field", "events: is required");
  if (!events->is_array()) throw bad_request("invalid_field", "events: must be an array");
  auto array = events->get_array().value_unsafe();
  if (array.size() > limits.max_batch_events) {
    throw ApiError(413, "batch_too_large", "events: more than " + std::to_string(limits.max_batch_events) +
                                               " events in one batch (--max-batch-events)");
  }
  out.events.reserve(array.size());
  out.namespaces.reserve(array.size());
  std::size_t i = 0;
  for (element e : array) read_event(e, i++, default_ns, received_at, out);
}

void parse_ndjson(std::string_view body, std::size_t padding, std::string_view default_ns, double received_at, simdjson::dom::parser& parser,
                  const service::ServiceLimits& limits, ParsedBatch& out) {
  out.ndjson = true;
  const char* const readable_end = body.data() + body.size() + padding;
  std::size_t line_no = 0;
  while (!body.empty()) {
    const std::size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    element doc;
    // A line is followed by the rest of the body: in place when that leaves the padding.
    const bool padded = readable_end - (line.data() + line.size()) >= static_cast<std::ptrdiff_t>(simdjson::SIMDJSON_PADDING);
    if (auto err = parser.parse(line.data(), line.size(), /*realloc_if_needed=*/!padded).get(doc)) {
      throw bad_request("invalid_json", "events[" + std::to_string(out.events.size()) + "] (line " + std::to_string(line_no) +
                                            "): not valid JSON: " + simdjson::error_message(err));
    }
    read_event(doc, out.events.size(), default_ns, received_at, out, line_no);
    out.lines.push_back(line_no);
    check_size(out, limits);
  }
}

}  // namespace

bool is_ndjson_media_type(std::string_view content_type) noexcept {
  return content_type == "application/x-ndjson" || content_type == "application/ndjson" || content_type == "application/jsonl" ||
         content_type == "application/json-seq";
}

void parse_event_body(std::string_view body, bool ndjson, std::string_view default_ns, double received_at,
                      const service::ServiceLimits& limits, simdjson::dom::parser& parser, ParsedBatch& out,
                      std::size_t readable_past_end) {
  if (ndjson) {
    parse_ndjson(body, readable_past_end, default_ns, received_at, parser, limits, out);
  } else {
    parse_json(body, readable_past_end, default_ns, received_at, parser, limits, out);
  }
}

}  // namespace ebb::server
