// POST /events: a batch of events, JSON ({"events": [...]}) or NDJSON (one
// event object per line). All or nothing: every event of every namespace
// in the batch is checked before any is counted.
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/io/key_arena.hpp"
#include "ebb/server/api.hpp"

namespace ebb::server {
namespace {

using simdjson::dom::element;

struct ParsedBatch {
  std::vector<engine::Event> events;
  std::vector<std::string_view> namespaces;  // per event
  std::vector<std::size_t> lines;            // NDJSON: each event's line number
  io::KeyArena arena;                        // copies of NDJSON strings
  bool ndjson = false;
};

[[noreturn]] void bad_event(const std::string& at, const std::string& field, const std::string& why) {
  throw bad_request("invalid_event", at + "." + field + ": " + why);
}

// One event object. Strings point into the parser's document (JSON) or are
// copied into the arena (NDJSON, whose lines reuse the parser).
void read_event(element obj, std::size_t index, std::string_view default_ns, double received_at, ParsedBatch& out, std::size_t line = 0) {
  const std::string at = "events[" + std::to_string(index) + "]" + (line ? " (line " + std::to_string(line) + ")" : "");
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

void check_size(const ParsedBatch& b, const service::ServiceLimits& limits) {
  if (b.events.size() > limits.max_batch_events) {
    throw ApiError(413, "batch_too_large", "events: more than " + std::to_string(limits.max_batch_events) +
                                               " events in one batch (--max-batch-events)");
  }
}

void parse_json(const Request& req, std::string_view default_ns, simdjson::dom::parser& parser, const service::ServiceLimits& limits,
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

void parse_ndjson(const Request& req, std::string_view default_ns, simdjson::dom::parser& parser, const service::ServiceLimits& limits,
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
    read_event(doc, out.events.size(), default_ns, req.received_at, out, line_no);
    out.lines.push_back(line_no);
    check_size(out, limits);
  }
}

}  // namespace

void add_event_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/events", "/events", Router::Access::write, [&ctx](const Request& req, const std::string&) {
    // NDJSON by its media type; anything else is read as JSON (curl -d sends
    // application/x-www-form-urlencoded, and a parse error says what is wrong).
    const bool ndjson = req.content_type == "application/x-ndjson" || req.content_type == "application/ndjson" ||
                        req.content_type == "application/jsonl" || req.content_type == "application/json-seq";
    const std::string default_ns = req.param("namespace").value_or("");
    const auto& limits = ctx.service.limits();
    thread_local simdjson::dom::parser parser;
    ParsedBatch batch;
    if (ndjson) {
      parse_ndjson(req, default_ns, parser, limits, batch);
    } else {
      parse_json(req, default_ns, parser, limits, batch);
    }
    if (batch.events.empty()) return empty_response(204);

    service::IngestRequest in;
    in.events = batch.events;
    in.namespaces = batch.namespaces;
    in.lines = batch.lines;
    in.received_at = req.received_at;
    in.body_bytes = req.body.size();
    const auto key = req.header("idempotency-key");
    if (key) {
      in.idempotency_key = *key;
      // What the batch is: the body, and what says how to read it (a
      // retry to another ?namespace= or as NDJSON is another batch).
      std::string what = default_ns;
      what += '\0';
      what += ndjson ? "ndjson" : "json";
      what += '\0';
      what += req.body;
      in.body_hash = hash_key(what);
    }
    const service::Commit commit = ctx.service.ingest(in);
    if (commit.lsn == 0) return empty_response(204);
    // 204 once the batch is as durable as --fsync promises.
    Response r;
    r.deferred = [&ctx, commit](Response::Send send) {
      ctx.service.when_durable(commit, [send = std::move(send)](const std::string& error) {
        send(error.empty() ? empty_response(204) : [&] {
          Response e = error_response(503, "persist_failed", error);
          e.headers.emplace_back("Retry-After", "1");
          return e;
        }());
      });
    };
    return r;
  });
}

}  // namespace ebb::server
