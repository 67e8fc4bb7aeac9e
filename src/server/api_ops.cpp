// GET /healthz, /readyz, /metrics.
#include "ebb/server/api.hpp"

namespace ebb::server {

void add_ops_routes(Router& router, ApiContext& ctx) {
  router.add("GET", "/healthz", "/healthz", [](const Request&, const std::string&) {
    return json_response(200, R"({"status":"ok"})");
  }, false);
  router.add("GET", "/readyz", "/readyz", [&ctx](const Request&, const std::string&) {
    if (!ctx.ready.load()) return error_response(503, "not_ready", "the server is recovering its namespaces or shutting down");
    return json_response(200, R"({"status":"ready"})");
  }, false);
  router.add("GET", "/metrics", "/metrics", [&ctx](const Request&, const std::string&) {
    return text_response(200, "text/plain; version=0.0.4; charset=utf-8", ctx.metrics.render(ctx.registry));
  }, false);
}

}  // namespace ebb::server
