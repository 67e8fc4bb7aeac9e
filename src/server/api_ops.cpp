// GET /healthz, /readyz, /metrics.
#include "ebb/io/json_writer.hpp"
#include "ebb/server/api.hpp"

namespace ebb::server {

void add_ops_routes(Router& router, ApiContext& ctx) {
  router.add("GET", "/healthz", "/healthz", Router::Access::open, [](const Request&, const std::string&) {
    return json_response(200, R"({"status":"ok"})");
  }, false);
  // Ready = recovered and able to persist writes. Failing checkpoints do
  // not lose data (the log has it) and show as a warning.
  router.add("GET", "/readyz", "/readyz", Router::Access::open, [&ctx](const Request&, const std::string&) {
    if (ctx.stopping.load()) return error_response(503, "not_ready", "the server is shutting down");
    if (!ctx.service.ready()) return error_response(503, "not_ready", ctx.service.not_ready_reason());
    io::JsonWriter w;
    w.begin_object().key("status").value("ready");
    if (auto warn = ctx.service.warnings(); !warn.empty()) w.key("warning").value(warn);
    // Cluster mode: this node, the partitions and who serves them.
    if (const auto* cluster = ctx.service.cluster()) w.key("cluster").value(cluster->status());
    w.end_object();
    return json_response(200, w.take());
  }, false);
  // Off the event loop: the figures are read under every namespace's lock
  // (a merge holds its destination's for as long as it takes).
  router.add("GET", "/metrics", "/metrics", Router::Access::read, [&ctx](const Request&, const std::string&) {
    return run_stats_read(ctx, [&ctx] {
      return text_response(200, "text/plain; version=0.0.4; charset=utf-8", ctx.metrics.render(ctx.service.metrics()));
    });
  }, false);
}

}  // namespace ebb::server
