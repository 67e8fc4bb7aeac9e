// GET /hot-keys and GET /hot-keys/stream (Server-Sent Events): the
// service's hot-key answers and notices, formatted.
#include <mutex>

#include "ebb/core/duration.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/server/api.hpp"
#include "ebb/service/answer_json.hpp"
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

// Between the subscription (made by the handler, so its errors are plain
// error responses) and the stream (opened by the transport after the
// headers): notices that come first wait here.
struct Relay {
  std::mutex mu;
  std::string pending;
  std::weak_ptr<EventStream> stream;  // set once open; the session owns it
  bool opened = false, ended = false;

  void deliver(const service::HotKeyNotice& n) {
    std::lock_guard lock(mu);
    if (ended) return;
    const bool last = n.kind == service::HotKeyNotice::Kind::closed;
    if (!opened) {
      pending += sse_message(n);
      ended = last;
      return;
    }
    auto s = stream.lock();
    if (!s || !s->send(sse_message(n)) || last) {
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
    return off_loop_in_cluster(ctx, [&ctx, name = required(req, "namespace")] { return hot_keys_answer(ctx, name); });
  });

  router.add("GET", "/hot-keys/stream", "/hot-keys/stream", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    auto relay = std::make_shared<Relay>();
    // The listener holds the relay, the relay a weak reference to the
    // stream; the stream's session holds the subscription: no cycle, and a
    // client that leaves ends its subscription at once.
    auto subscription = ctx.service.subscribe_hot_keys(required(req, "namespace"),
                                                       [relay](const service::HotKeyNotice& n) { relay->deliver(n); });
    Response r;
    r.content_type = "text/event-stream";
    r.stream = [relay, subscription](std::shared_ptr<EventStream> stream) -> std::shared_ptr<void> {
      relay->open(stream);
      return subscription;
    };
    return r;
  });
}

}  // namespace ebb::server
