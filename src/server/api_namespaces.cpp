// POST/GET/PATCH/DELETE /namespaces: create, list, inspect, change, drop.
#include "ebb/server/api.hpp"

#include "ebb/core/percent_encoding.hpp"

namespace ebb::server {

Response run_on(const std::function<void(std::function<void()>)>& runner, std::function<Response()> work, ErrorFormat format) {
  Response r;
  r.deferred = [&runner, work = std::move(work), format](Response::Send send) mutable {
    runner([work = std::move(work), send = std::move(send), format]() mutable {
      Response answer = respond(work, format);
      if (!answer.deferred) return send(std::move(answer));
      auto later = std::move(answer.deferred);  // (a write's answer waits for its log)
      later(std::move(send));
    });
  };
  return r;
}

Response run_off_loop(ApiContext& ctx, std::function<Response()> work, ErrorFormat format) { return run_on(ctx.run_blocking, std::move(work), format); }

Response run_stats_read(ApiContext& ctx, std::function<Response()> work) {
  return run_on(ctx.run_lock_waiters, std::move(work), error_response);
}

Response off_loop_in_cluster(ApiContext& ctx, std::function<Response()> work, ErrorFormat format) {
  return ctx.service.cluster() ? run_off_loop(ctx, std::move(work), format) : work();
}

Response off_loop_if_waiting(ApiContext& ctx, std::string_view name, std::function<Response()> work, ErrorFormat format) {
  if (ctx.service.cluster()) return run_off_loop(ctx, std::move(work), format);
  if (ctx.service.held_long(name)) return run_on(ctx.run_lock_waiters, std::move(work), format);
  return work();
}

void add_namespace_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/namespaces", "/namespaces", Router::Access::write, [&ctx](const Request& req, const std::string&) {
    auto spec = service::parse_namespace_spec(req.body, ctx.service.limits());
    // Off the event loop: a large namespace takes a while to allocate, and
    // the create waits for its log record's fsync.
    return run_off_loop(ctx, [&ctx, spec = std::move(spec)]() mutable {
      const auto created = ctx.service.create(std::move(spec));
      Response r = json_response(201, service::write_namespace_spec(created, false));
      r.headers.emplace_back("Location", "/namespaces/" + percent_encode(created.config.name, "-_.~"));
      return r;
    });
  });
  // Off the event loop: the stats are read under each namespace's lock,
  // which a merge into it holds for as long as the merge takes (the loop's
  // other connections, health probes included, would wait it out). Cluster
  // mode: the stats are the partitions', a question to each.
  router.add("GET", "/namespaces", "/namespaces", Router::Access::read, [&ctx](const Request&, const std::string&) {
    return run_stats_read(ctx, [&ctx] {
      std::string body = "{\"namespaces\":[";
      bool first = true;
      for (const auto& info : ctx.service.list()) {
        if (!first) body += ',';
        first = false;
        body += service::write_namespace_with_stats(info.spec, info.stats, info.ingest_bytes, info.coverage);
      }
      body += "]}";
      return json_response(200, std::move(body));
    });
  });
  router.add("GET", "/namespaces/{name}", "/namespaces/{name}", Router::Access::read, [&ctx](const Request&, const std::string& name) {
    return run_stats_read(ctx, [&ctx, name] {  // (as the list)
      const auto info = ctx.service.describe(name);
      return json_response(200, service::write_namespace_with_stats(info.spec, info.stats, info.ingest_bytes, info.coverage));
    });
  });
  router.add("PATCH", "/namespaces/{name}", "/namespaces/{name}", Router::Access::write, [&ctx](const Request& req, const std::string& name) {
    return run_off_loop(ctx, [&ctx, name, body = req.body] {
      const auto next = ctx.service.patch(name, [&](const service::NamespaceSpec& current) {
        return service::patch_namespace_spec(current, body, ctx.service.limits());
      });
      return json_response(200, service::write_namespace_spec(next, false));
    });
  });
  router.add("DELETE", "/namespaces/{name}", "/namespaces/{name}", Router::Access::write, [&ctx](const Request&, const std::string& name) {
    return run_off_loop(ctx, [&ctx, name] {
      ctx.service.remove(name);
      return empty_response(204);
    });
  });
}

}  // namespace ebb::server
