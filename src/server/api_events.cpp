// POST /events: a batch of events, JSON ({"events": [...]}) or NDJSON (one
// event object per line). All or nothing: every event of every namespace
// in the batch is checked before any is counted.
#include <simdjson.h>

#include "ebb/core/hash.hpp"
#include "ebb/server/api.hpp"
#include "ebb/server/event_body_parser.hpp"

namespace ebb::server {

namespace {

// Bodies up to this size keep the thread's parser allocated for the next
// (a batch of 10,000 events, --max-batch-events' default, with items of
// 300 bytes): a larger one is parsed in space allocated for it.
constexpr std::size_t kKeptParserBytes = 4u << 20;

// Whether a merge holds a namespace of the batch now (Service::held_long).
bool waits_for_a_merge(const ApiContext& ctx, const ParsedBatch& batch) {
  std::string_view last;
  for (const auto ns : batch.namespaces) {
    if (ns == last) continue;  // (a batch is mostly one namespace)
    if (ctx.service.held_long(ns)) return true;
    last = ns;
  }
  return false;
}

// Parses and counts one body; the answer waits for the batch's log. On the
// event loop (`on_loop`), a batch to a namespace a merge holds is not
// counted: nullopt, and the caller runs it again off the loop.
std::optional<Response> ingest_body(ApiContext& ctx, std::string_view body, std::size_t padding, bool ndjson, const std::string& default_ns,
                                    double received_at, const std::optional<std::string>& key, bool on_loop) {
  const auto& limits = ctx.service.limits();
  thread_local simdjson::dom::parser parser;
  // The parser keeps what its largest document needed (about 14 bytes
  // allocated a byte of JSON: ~200 MiB after a 16 MiB body, though only
  // the pages it touched stay resident) unless it is given back here, once
  // the batch is done with the document's strings.
  struct KeepLittle {
    simdjson::dom::parser& p;
    ~KeepLittle() {
      if (p.capacity() > kKeptParserBytes) p = simdjson::dom::parser{};
    }
  } const keep_little{parser};
  ParsedBatch batch;
  parse_event_body(body, ndjson, default_ns, received_at, limits, parser, batch, padding);
  if (batch.events.empty()) return empty_response(204);
  if (on_loop && !ctx.service.cluster() && waits_for_a_merge(ctx, batch)) return std::nullopt;

  service::IngestRequest in;
  in.events = batch.events;
  in.namespaces = batch.namespaces;
  in.lines = batch.lines;
  in.received_at = received_at;
  in.body_bytes = body.size();
  if (key) {
    in.idempotency_key = *key;
    // What the batch is: the body, and what says how to read it (a
    // retry to another ?namespace= or as NDJSON is another batch).
    std::string what = default_ns;
    what += '\0';
    what += ndjson ? "ndjson" : "json";
    what += '\0';
    what += body;
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
}

}  // namespace

void add_event_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/events", "/events", Router::Access::write, [&ctx](const Request& req, const std::string&) {
    // NDJSON by its media type; anything else is read as JSON (curl -d sends
    // application/x-www-form-urlencoded, and a parse error says what is wrong).
    const bool ndjson = is_ndjson_media_type(req.content_type);
    std::string default_ns = req.param("namespace").value_or("");
    std::optional<std::string> key;
    if (const auto k = req.header("idempotency-key")) key = std::string(*k);
    // Off the event loop with its own copy of the body (padded for the parser).
    auto off_loop = [&](const std::function<void(std::function<void()>)>& runner) {
      std::string body;
      body.reserve(req.body.size() + simdjson::SIMDJSON_PADDING);
      body.assign(req.body);
      return run_on(runner, [&ctx, body = std::move(body), ndjson, default_ns = std::move(default_ns), received_at = req.received_at, key = std::move(key)] {
        return *ingest_body(ctx, body, body.capacity() - body.size(), ndjson, default_ns, received_at, key, false);
      });
    };
    // A keyed batch in a cluster first waits (bounded) for this node's view
    // of the log to catch up, to tell a retry.
    if (key && ctx.service.cluster()) return off_loop(ctx.run_blocking);
    if (auto answer = ingest_body(ctx, req.body, req.body.capacity() - req.body.size(), ndjson, default_ns, req.received_at, key, true)) {
      return std::move(*answer);
    }
    // A merge holds a namespace of the batch: counted where waiting for it
    // holds up no other connection (parsed again there).
    return off_loop(ctx.run_lock_waiters);
  });
}

}  // namespace ebb::server
