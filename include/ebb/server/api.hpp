#pragma once
// The HTTP API of ../shared/notes/api.md, as routes on a Router. Handlers
// only parse requests and format answers; every rule of ingest, admin and
// queries is the service's (service/service.hpp).
#include <atomic>
#include <functional>
#include <optional>

#include "ebb/server/metrics.hpp"
#include "ebb/server/router.hpp"
#include "ebb/service/service.hpp"

namespace ebb::server {

struct ApiContext {
  service::Service& service;
  Metrics& metrics;
  std::atomic<bool>& stopping;  // shutting down: not ready
  // Runs work off the event loop (admin operations allocate and fsync).
  std::function<void(std::function<void()>)> run_blocking;
  // Who may write (and read, with --auth-reads); empty = everything open.
  const service::AccessTokens& tokens;
  // Runs off the event loop, apart from the admin operations, what may
  // wait out a merge (which holds a namespace's lock for as long as it
  // takes): reads of every namespace's stats, and the queries and batches
  // of a namespace a merge holds now (an admin operation should not wait
  // behind them).
  std::function<void(std::function<void()>)> run_lock_waiters;
};

// The refusal (401 with WWW-Authenticate) of a request without an accepted
// token for `access`: the token comes as "Authorization: Bearer <token>"
// or, for what a browser opens without headers (SSE, links), as
// ?access_token=<token>.
std::optional<Response> authorize(const service::AccessTokens& tokens, const Request& request, service::Access access);

void add_namespace_routes(Router& router, ApiContext& ctx);
void add_event_routes(Router& router, ApiContext& ctx);
void add_query_routes(Router& router, ApiContext& ctx);
void add_ops_routes(Router& router, ApiContext& ctx);
void add_hot_key_routes(Router& router, ApiContext& ctx);
void add_distribution_routes(Router& router, ApiContext& ctx);
// GET / (the dashboard) and its files: open to all, the page holds no data.
void add_dashboard_routes(Router& router, ApiContext& ctx);

inline void add_api_routes(Router& router, ApiContext& ctx) {
  router.set_auth([&ctx](const Request& request, service::Access access) { return authorize(ctx.tokens, request, access); });
  router.set_gate([&ctx] {
    if (ctx.stopping.load()) throw ApiError(503, "not_ready", "the server is shutting down; retry shortly");
    if (!ctx.service.recovered()) throw ApiError(503, "not_ready", "the server is recovering its namespaces; retry shortly");
  });
  add_namespace_routes(router, ctx);
  add_event_routes(router, ctx);
  add_query_routes(router, ctx);
  add_ops_routes(router, ctx);
  add_hot_key_routes(router, ctx);
  add_distribution_routes(router, ctx);
  add_dashboard_routes(router, ctx);
}

// Runs `work` with `runner` (one of ApiContext's) and answers with what it
// returns (its errors in `format`; an answer deferred in turn is awaited
// there too).
Response run_on(const std::function<void(std::function<void()>)>& runner, std::function<Response()> work, ErrorFormat format = error_response);
// run_on(ctx.run_blocking, ...).
Response run_off_loop(ApiContext& ctx, std::function<Response()> work, ErrorFormat format = error_response);
// run_off_loop() on ctx.run_lock_waiters: the namespaces' stats (list,
// describe, metrics), read under each namespace's lock.
Response run_stats_read(ApiContext& ctx, std::function<Response()> work);
// A question to namespace `name`: off the loop in cluster mode (as
// off_loop_in_cluster), on ctx.run_lock_waiters while a merge holds the
// namespace (Service::held_long), else in place.
Response off_loop_if_waiting(ApiContext& ctx, std::string_view name, std::function<Response()> work, ErrorFormat format = error_response);
// Cluster mode: a question waits on the network (the partitions' owners,
// JetStream), which must not hold up the event loop's other connections,
// so `work` runs off the loop there; on a single node, in place.
Response off_loop_in_cluster(ApiContext& ctx, std::function<Response()> work, ErrorFormat format = error_response);

}  // namespace ebb::server
