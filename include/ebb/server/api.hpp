#pragma once
// The HTTP API of ../shared/notes/api.md, as routes on a Router. Handlers
// are plain functions of (Request) -> Response over the registry; the
// transport is server/http_server.
#include <atomic>

#include "ebb/server/metrics.hpp"
#include "ebb/server/registry.hpp"
#include "ebb/server/router.hpp"
#include "ebb/server/server_limits.hpp"

namespace ebb::server {

struct ApiContext {
  Registry& registry;
  Metrics& metrics;
  const ServerLimits& limits;
  std::atomic<bool>& ready;  // recovered and serving
};

void add_namespace_routes(Router& router, ApiContext& ctx);
void add_event_routes(Router& router, ApiContext& ctx);
void add_query_routes(Router& router, ApiContext& ctx);
void add_ops_routes(Router& router, ApiContext& ctx);

inline void add_api_routes(Router& router, ApiContext& ctx) {
  router.set_gate([&ctx] {
    if (!ctx.ready.load()) throw ApiError(503, "not_ready", "the server is recovering its namespaces or shutting down; retry shortly");
  });
  add_namespace_routes(router, ctx);
  add_event_routes(router, ctx);
  add_query_routes(router, ctx);
  add_ops_routes(router, ctx);
}

// The entry for a namespace named in a request; ApiError 404 when missing.
std::shared_ptr<NamespaceEntry> require_namespace(const Registry& registry, const std::string& name, const std::string& field);

}  // namespace ebb::server
