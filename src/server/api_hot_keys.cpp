// GET /hot-keys and GET /hot-keys/stream (Server-Sent Events): the
// service's hot-key answers and notices, formatted.
#include <mutex>

#include "ebb/core/duration.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/server/api.hpp"
#include "ebb/service/answer_json.hpp"
#include "anomaly_params.hpp"
#include "query_params.hpp"

namespace ebb::server {
namespace {

void write_hot_key(io::JsonWriter& w, const engine::HotKey& k) {
  w.begin_object().key("item_id").value(k.key).key("rate").value(k.rate).key("since").value(k.since).end_object();
}

// One notice as an SSE message ("event: hot", "data: {...}", blank line);
// a heartbeat is a comment line, which EventSource ignores.
std::string sse_message(const service::HotKeyNotice& n) {
  using Kind = service::HotKeyNotice::Kind;
  if (n.kind == Kind::heartbeat) return ": keep-alive\n\n";
  if (n.kind == Kind::closed) return "event: end\ndata: {\"reason\":\"namespace deleted\"}\n\n";
  io::JsonWriter w;
  write_hot_key(w, n.key);
  return std::string("event: ") + (n.kind == Kind::hot ? "hot" : "cool") + "\ndata: " + w.str() + "\n\n";
}

// An anomaly notice: "event: anomaly" with GET /anomalies' item shape.
std::string sse_message(const service::AnomalyNotice& n) {
  using Kind = service::AnomalyNotice::Kind;
  if (n.kind == Kind::heartbeat) return ": keep-alive\n\n";
  io::JsonWriter w;
  if (n.kind == Kind::closed) {
    w.begin_object().key("reason").value(n.reason).end_object();
    return "event: end\ndata: " + w.str() + "\n\n";
  }
  service::write_anomaly_item(w, n.item, n.as_of);
  return "event: anomaly\ndata: " + w.str() + "\n\n";
}

// Between the subscriptions (made by the handler, so their errors are plain
// error responses) and the stream (opened by the transport after the
// headers): messages that come first wait here.
struct Relay {
  std::mutex mu;
  std::string pending;
  std::weak_ptr<EventStream> stream;  // set once open; the session owns it
  bool opened = false, ended = false;

  // `last`: the stream ends after this message.
  void deliver(const std::string& message, bool last) {
    std::lock_guard lock(mu);
    if (ended) return;
    if (!opened) {
      pending += message;
      ended = last;
      return;
    }
    auto s = stream.lock();
    if (!s || !s->send(message) || last) {
      if (s && last) s->close();
      ended = true;
    }
  }
  void open(const std::shared_ptr<EventStream>& s) {
    std::lock_guard lock(mu);
    s->send("retry: 2000\n\n" + pending, /*opening=*/true);
    pending.clear();
    opened = true;
    stream = s;
    if (ended) s->close();
  }
};

// GET /hot-keys' answer.
Response hot_keys_answer(ApiContext& ctx, const std::string& name) {
  const auto answer = ctx.service.hot_keys(name);
  io::JsonWriter w;
  w.begin_object().key("namespace").value(answer.ns).key("threshold").value(answer.threshold);
  w.key("half_life").value(format_duration(answer.half_life)).key("cool_fraction").value(answer.cool_fraction);
  w.key("as_of");
  if (answer.evaluated_at > 0) w.value(answer.evaluated_at);
  else w.null();  // not evaluated yet (an event-clock namespace before its first event)
  w.key("complete").value(answer.complete);
  w.key("items").begin_array();
  for (const auto& k : answer.items) write_hot_key(w, k);
  w.end_array();
  service::write_coverage(w, answer.coverage);
  w.end_object();
  return json_response(200, w.take());
}

}  // namespace

void add_hot_key_routes(Router& router, ApiContext& ctx) {
  router.add("GET", "/hot-keys", "/hot-keys", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    std::string name = required(req, "namespace");
    return off_loop_if_waiting(ctx, name, [&ctx, name] { return hot_keys_answer(ctx, name); });
  });

  router.add("GET", "/hot-keys/stream", "/hot-keys/stream", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    const std::string name = required(req, "namespace");
    // With a window, the stream carries anomaly events as well (GET
    // /anomalies' parameters); detection off then leaves those alone.
    std::optional<service::AnomalyRequest> anomalies;
    if (req.param("window")) {
      anomalies = anomaly_request_from(req);
    } else {
      for (const char* p : {"baseline", "baseline_offset", "k", "min_jump", "min_rank_jump", "min_score", "min_count", "timestamp"}) {
        if (req.param(p)) throw bad_request("bad_parameter", std::string("window: is required with ") + p + " (anomaly events)");
      }
    }
    auto relay = std::make_shared<Relay>();
    // The listeners hold the relay, the relay a weak reference to the
    // stream; the stream's session holds the subscriptions: no cycle, and a
    // client that leaves ends its subscriptions at once. The anomalies'
    // first: their question is checked before anything else is set up.
    std::shared_ptr<void> hot, jumps;
    if (anomalies) {
      jumps = ctx.service.subscribe_anomalies(name, *anomalies, [relay](const service::AnomalyNotice& n) {
        relay->deliver(sse_message(n), n.kind == service::AnomalyNotice::Kind::closed);
      });
    }
    try {
      hot = ctx.service.subscribe_hot_keys(name, [relay](const service::HotKeyNotice& n) {
        relay->deliver(sse_message(n), n.kind == service::HotKeyNotice::Kind::closed);
      });
    } catch (const service::ServiceError& e) {
      if (!anomalies || e.code() != "hot_keys_off") throw;
    }
    auto subscriptions = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(std::move(hot), std::move(jumps));
    Response r;
    r.content_type = "text/event-stream";
    r.stream = [relay, subscriptions](std::shared_ptr<EventStream> stream) -> std::shared_ptr<void> {
      relay->open(stream);
      return subscriptions;
    };
    return r;
  });
}

}  // namespace ebb::server
