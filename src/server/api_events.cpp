// POST /events: a batch of events, JSON ({"events": [...]}) or NDJSON (one
// event object per line). All or nothing: every event of every namespace
// in the batch is checked before any is counted.
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ebb/core/error.hpp"
#include "ebb/io/key_arena.hpp"
#include "ebb/server/api.hpp"

namespace ebb::server {
namespace {

using simdjson::dom::element;

struct ParsedBatch {
  std::vector<engine::Event> events;
  std::vector<std::string_view> namespaces;  // per event
  io::KeyArena arena;                        // copies of NDJSON strings
  bool ndjson = false;
};

[[noreturn]] void bad_event(const std::string& at, const std::string& field, const std::string& why) {
  throw bad_request("invalid_event", at + "." + field + ": " + why);
}

// One event object. Strings point into the parser's document (JSON) or are
// copied into the arena (NDJSON, whose lines reuse the parser).
void read_event(element obj, std::size_t index, std::string_view default_ns, double received_at, ParsedBatch& out) {
  const std::string at = "events[" + std::to_string(index) + "]";
  if (!obj.is_object()) throw bad_request("invalid_event", at + ": must be an object");
  engine::Event ev{{}, received_at, 1.0};
  std::string_view ns = default_ns;
  bool has_item = false;
  const simdjson::dom::object members = obj.get_object().value_unsafe();
  for (auto [key, value] : members) {
    if (key == "item_id") {
      if (!value.is_string()) bad_event(at, "item_id", "must be a string");
      ev.item = value.get_string().value_unsafe();
      has_item = true;
    } else if (key == "namespace") {
      if (!value.is_string()) bad_event(at, "namespace", "must be a string");
      ns = value.get_string().value_unsafe();
    } else if (key == "timestamp") {
      if (value.is_null()) continue;  // the receive time
      if (!value.is_number()) bad_event(at, "timestamp", "must be a number of Unix seconds");
      ev.time = value.get_double().value_unsafe();
    } else if (key == "weight") {
      if (!value.is_number()) bad_event(at, "weight", "must be a number");
      ev.weight = value.get_double().value_unsafe();
    }
    // Other fields (metadata) are the producer's business: ignored.
  }
  if (!has_item) bad_event(at, "item_id", "is required");
  if (ns.empty()) bad_event(at, "namespace", "is required (per event, as \"namespace\" at the top level, or ?namespace=)");
  if (out.ndjson) {
    ev.item = out.arena.keep(ev.item);
    ns = out.arena.keep(ns);
  }
  out.events.push_back(ev);
  out.namespaces.push_back(ns);
}

void check_size(const ParsedBatch& b, const ServerLimits& limits) {
  if (b.events.size() > limits.max_batch_events) {
    throw ApiError(413, "batch_too_large", "events: more than " + std::to_string(limits.max_batch_events) +
                                               " events in one batch (--max-batch-events)");
  }
}

void parse_json(const Request& req, std::string_view default_ns, simdjson::dom::parser& parser, const ServerLimits& limits,
                ParsedBatch& out) {
  element doc;
  if (auto err = parser.parse(req.body.data(), req.body.size()).get(doc)) {
    throw bad_request("invalid_json", std::string("request body is not valid JSON: ") + simdjson::error_message(err));
  }
  if (!doc.is_object()) throw bad_request("invalid_json", "request body must be an object {\"events\": [...]}");
  std::optional<element> events;
  const simdjson::dom::object members = doc.get_object().value_unsafe();
  for (auto [key, value] : members) {
    if (key == "events") {
      events = value;
    } else if (key == "namespace") {
      if (!value.is_string()) throw bad_request("invalid_field", "namespace: must be a string");
      default_ns = value.get_string().value_unsafe();
    } else {
      throw bad_request("invalid_field", std::string(key) + ": unknown field (expected \"events\" and optionally \"namespace\")");
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
  for (element e : array) read_event(e, i++, default_ns, req.received_at, out);
}

void parse_ndjson(const Request& req, std::string_view default_ns, simdjson::dom::parser& parser, const ServerLimits& limits,
                  ParsedBatch& out) {
  out.ndjson = true;
  std::string_view body = req.body;
  std::size_t line_no = 0;
  while (!body.empty()) {
    const std::size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    element doc;
    if (auto err = parser.parse(line.data(), line.size()).get(doc)) {
      throw bad_request("invalid_json", "events[" + std::to_string(out.events.size()) + "] (line " + std::to_string(line_no) +
                                            "): not valid JSON: " + simdjson::error_message(err));
    }
    read_event(doc, out.events.size(), default_ns, req.received_at, out);
    check_size(out, limits);
  }
}

}  // namespace

void add_event_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/events", "/events", [&ctx](const Request& req, const std::string&) {
    // NDJSON by its media type; anything else is read as JSON (curl -d sends
    // application/x-www-form-urlencoded, and a parse error says what is wrong).
    const bool ndjson = req.content_type == "application/x-ndjson" || req.content_type == "application/ndjson" ||
                        req.content_type == "application/jsonl" || req.content_type == "application/json-seq";
    const std::string default_ns = req.param("namespace").value_or("");
    thread_local simdjson::dom::parser parser;
    ParsedBatch batch;
    if (ndjson) {
      parse_ndjson(req, default_ns, parser, ctx.limits, batch);
    } else {
      parse_json(req, default_ns, parser, ctx.limits, batch);
    }
    if (batch.events.empty()) return empty_response(204);

    // The common case, one namespace: apply() is itself all or nothing.
    const std::string_view first_ns = batch.namespaces.front();
    if (std::all_of(batch.namespaces.begin(), batch.namespaces.end(), [&](std::string_view n) { return n == first_ns; })) {
      auto entry = ctx.registry.find(first_ns);
      if (!entry) throw ApiError(404, "namespace_not_found", "events[0].namespace: no namespace '" + std::string(first_ns) + "'");
      std::unique_lock lock(entry->mu);
      if (entry->deleted) throw ApiError(404, "namespace_not_found", "namespace '" + entry->name + "' was deleted");
      try {
        entry->ns.apply_at(batch.events, req.received_at);
      } catch (const BatchError& e) {
        throw bad_request("invalid_event", "events[" + std::to_string(e.index()) + "]." + e.field() + ": " + e.message());
      }
      entry->dirty = true;
      entry->ingest_bytes += req.body.size();
      return empty_response(204);
    }

    // Several namespaces: group, lock them all in name order, check every
    // group against one clock reading, then apply (which cannot fail then).
    std::map<std::string_view, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < batch.events.size(); ++i) groups[batch.namespaces[i]].push_back(i);
    struct Target {
      std::shared_ptr<NamespaceEntry> entry;
      const std::vector<std::size_t>* indices;
      std::vector<engine::Event> events;
    };
    std::vector<Target> targets;  // sorted by name (std::map order): a fixed lock order
    for (const auto& [name, indices] : groups) {
      auto entry = ctx.registry.find(name);
      if (!entry) {
        throw ApiError(404, "namespace_not_found", "events[" + std::to_string(indices.front()) + "].namespace: no namespace '" +
                                                       std::string(name) + "'");
      }
      Target t{std::move(entry), &indices, {}};
      t.events.reserve(indices.size());
      for (std::size_t i : indices) t.events.push_back(batch.events[i]);
      targets.push_back(std::move(t));
    }
    std::vector<std::unique_lock<std::shared_mutex>> locks;
    for (auto& t : targets) locks.emplace_back(t.entry->mu);
    for (auto& t : targets) {
      if (t.entry->deleted) throw ApiError(404, "namespace_not_found", "namespace '" + t.entry->name + "' was deleted");
      try {
        t.entry->ns.validate(t.events, req.received_at);
      } catch (const BatchError& e) {
        throw bad_request("invalid_event", "events[" + std::to_string((*t.indices)[e.index()]) + "]." + e.field() + ": " + e.message());
      }
    }
    // Every event is valid against the same clock reading: nothing below throws on input.
    for (auto& t : targets) {
      t.entry->ns.apply_at(t.events, req.received_at);
      t.entry->dirty = true;
      t.entry->ingest_bytes += req.body.size() * t.events.size() / batch.events.size();
    }
    return empty_response(204);
  });
}

}  // namespace ebb::server
