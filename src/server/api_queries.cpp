// GET /top-k, GET /count, POST /counts, GET /history: answers with bounds and accuracy.
#include <simdjson.h>

#include <cmath>

#include "ebb/core/error.hpp"
#include "ebb/io/json_members.hpp"
#include "ebb/service/answer_json.hpp"
#include "ebb/server/api.hpp"
#include "ebb/server/json_body.hpp"
#include "ebb/server/personalised_body.hpp"
#include "anomaly_params.hpp"
#include "query_params.hpp"

namespace ebb::server {
namespace {

// Points in one GET /history answer, at most (the answer says "truncated").
constexpr std::size_t kMaxHistoryPoints = 10000;


}  // namespace

void add_query_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/top-k/personalised", "/top-k/personalised", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    auto q = parse_personalised_body(req.body, ctx.service.limits().max_user_items);
    const auto view = view_from(q.window, q.half_life);
    const std::string name = q.name;  // (q moves into the work: not read in the same call)
    return off_loop_if_waiting(ctx, name, [&ctx, q = std::move(q), view] {
      const auto answer = ctx.service.personalised(q.name, view, q.k, q.alpha, q.user_items);
      io::JsonWriter w;
      service::write_personalised(w, q.name, answer);
      return json_response(200, w.take());
    });
  });

  router.add("GET", "/history", "/history", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    const std::string name = required(req, "namespace");
    const std::string item = required(req, "item_id");
    const auto view = view_from(req.param("window"), req.param("half_life"));
    const double from = time_param(req, "from");
    const double to = time_param(req, "to");
    if (from > to) throw bad_request("bad_parameter", "from: must be at most to");
    return off_loop_in_cluster(ctx, [&ctx, name, item, view, from, to] {
      const auto series = ctx.service.history(name, item, view, from, to, kMaxHistoryPoints);
      io::JsonWriter w;
      service::write_history(w, name, item, series);
      return json_response(200, w.take());
    });
  });

  router.add("GET", "/top-k", "/top-k", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    const std::string name = required(req, "namespace");
    const auto k = k_from(req.param("k"));
    const auto view = view_from(req.param("window"), req.param("half_life"));
    if (const auto as_of = as_of_from(req.param("timestamp"))) {
      return off_loop_if_waiting(ctx, name, [&ctx, name, view, k, as_of] {
        io::JsonWriter w;
        service::write_top_k(w, name, ctx.service.top_at(name, view, k, *as_of));
        return json_response(200, w.take());
      });
    }
    return off_loop_if_waiting(ctx, name, [&ctx, name, view, k] {
      const auto body = ctx.service.top_rendered(name, view, k, "json", [&name](const engine::TopKAnswer& top) {
        io::JsonWriter w;
        service::write_top_k(w, name, top);
        return w.take();
      });
      return json_response(200, body);  // (shared with the cache, not copied)
    });
  });

  router.add("GET", "/trending", "/trending", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    const std::string name = required(req, "namespace");
    const auto k = k_from(req.param("k"));
    const double min_count = non_negative_from(req.param("min_count"), "min_count", "a number >= 0").value_or(engine::kDefaultTrendingMinCount);
    const auto short_half_life = duration_from(req.param("short"), "short");
    const auto long_half_life = duration_from(req.param("long"), "long");
    return off_loop_if_waiting(ctx, name, [&ctx, name, k, min_count, short_half_life, long_half_life] {
      const auto answer = ctx.service.trending(name, short_half_life, long_half_life, k, min_count);
      io::JsonWriter w;
      service::write_trending(w, name, answer);
      return json_response(200, w.take());
    });
  });

  router.add("GET", "/anomalies", "/anomalies", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    const std::string name = required(req, "namespace");
    const auto request = anomaly_request_from(req);
    return off_loop_if_waiting(ctx, name, [&ctx, name, request] {
      const auto answer = ctx.service.anomalies(name, request);
      io::JsonWriter w;
      service::write_anomalies(w, name, request, answer);
      return json_response(200, w.take());
    });
  });

  router.add("GET", "/count", "/count", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    const std::string name = required(req, "namespace");
    const std::string item = required(req, "item_id");
    const auto view = view_from(req.param("window"), req.param("half_life"));
    const auto as_of = as_of_from(req.param("timestamp"));
    return off_loop_if_waiting(ctx, name, [&ctx, name, item, view, as_of] {
      const auto point = as_of ? ctx.service.count_at(name, item, view, *as_of) : ctx.service.count(name, item, view);
      io::JsonWriter w;
      service::write_point(w, name, point);
      return json_response(200, w.take());
    });
  });

  router.add("POST", "/counts", "/counts", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    simdjson::dom::parser parser;
    const simdjson::dom::object members = object_body(parser, req.body);
    std::string name;
    std::optional<std::string> window, half_life;
    std::optional<double> as_of;
    std::vector<std::string> ids;
    bool has_ids = false;
    io::JsonMembers named;
    for (auto [key, value] : members) {
      const std::string field(key);
      if (!named.first(key)) throw bad_request("invalid_field", message_text(field) + ": is given twice");
      if (field == "namespace") {
        name = string_field(value, field);
      } else if (field == "window") {
        window = string_field(value, field);
      } else if (field == "half_life") {
        half_life = string_field(value, field);
      } else if (field == "timestamp") {
        double t = 0;
        if (value.get_double().get(t) != simdjson::SUCCESS || !std::isfinite(t) || t < 0) {
          throw bad_request("invalid_field", "timestamp: must be a number of seconds since the epoch");
        }
        as_of = t;
      } else if (field == "item_ids") {
        has_ids = true;
        if (!value.is_array()) throw bad_request("invalid_field", "item_ids: must be an array of strings");
        const simdjson::dom::array entries = value.get_array().value_unsafe();
        for (auto id : entries) {
          if (!id.is_string()) throw bad_request("invalid_field", "item_ids[" + std::to_string(ids.size()) + "]: must be a string");
          ids.emplace_back(id.get_string().value_unsafe());
          if (ids.size() > ctx.service.limits().max_batch_events) {
            throw ApiError(413, "batch_too_large", "item_ids: more than " + std::to_string(ctx.service.limits().max_batch_events) + " ids (--max-batch-events)");
          }
        }
      } else {
        throw bad_request("invalid_field", message_text(field) + ": unknown field");
      }
    }
    if (name.empty()) throw bad_request("invalid_field", "namespace: is required");
    if (!has_ids) throw bad_request("invalid_field", "item_ids: is required");
    const auto view = view_from(window, half_life);
    return off_loop_if_waiting(ctx, name, [&ctx, name, ids = std::move(ids), view, as_of] {
      engine::TopKAnswer view_answer;  // the view and its accuracy block, read under the same lock
      const auto answers = ctx.service.counts(name, ids, view, view_answer, as_of);
      io::JsonWriter w;
      service::write_counts(w, name, answers, view_answer);
      return json_response(200, w.take());
    });
  });
}

}  // namespace ebb::server
