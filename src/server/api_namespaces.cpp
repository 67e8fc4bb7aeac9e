// POST/GET/PATCH/DELETE /namespaces: create, list, inspect, change, drop.
#include "ebb/io/json_writer.hpp"
#include "ebb/server/api.hpp"

namespace ebb::server {

std::shared_ptr<NamespaceEntry> require_namespace(const Registry& registry, const std::string& name, const std::string& field) {
  auto entry = registry.find(name);
  if (!entry) throw ApiError(404, "namespace_not_found", field + ": no namespace '" + name + "'");
  return entry;
}

namespace {

std::string describe(const NamespaceEntry& e) {
  std::shared_lock lock(e.mu);
  return write_namespace_with_stats(e.spec, e.ns.stats(), e.ingest_bytes.load());
}

}  // namespace

void add_namespace_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/namespaces", "/namespaces", [&ctx](const Request& req, const std::string&) {
    auto spec = parse_namespace_spec(req.body, ctx.limits);
    auto entry = ctx.registry.create(std::move(spec));
    Response r = json_response(201, write_namespace_spec(entry->spec, false));
    r.headers.emplace_back("Location", "/namespaces/" + entry->name);
    return r;
  });
  router.add("GET", "/namespaces", "/namespaces", [&ctx](const Request&, const std::string&) {
    std::string body = "{\"namespaces\":[";
    bool first = true;
    for (const auto& e : ctx.registry.list()) {
      if (!first) body += ',';
      first = false;
      body += describe(*e);
    }
    body += "]}";
    return json_response(200, std::move(body));
  });
  router.add("GET", "/namespaces/{name}", "/namespaces/{name}", [&ctx](const Request&, const std::string& name) {
    return json_response(200, describe(*require_namespace(ctx.registry, name, "name")));
  });
  router.add("PATCH", "/namespaces/{name}", "/namespaces/{name}", [&ctx](const Request& req, const std::string& name) {
    auto entry = require_namespace(ctx.registry, name, "name");
    ctx.registry.patch(*entry, req.body);
    std::shared_lock lock(entry->mu);
    return json_response(200, write_namespace_spec(entry->spec, false));
  });
  router.add("DELETE", "/namespaces/{name}", "/namespaces/{name}", [&ctx](const Request&, const std::string& name) {
    ctx.registry.remove(name);
    return empty_response(204);
  });
}

}  // namespace ebb::server
