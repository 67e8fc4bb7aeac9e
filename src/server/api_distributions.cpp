// Distributions that forget, with the routes, parameter names and JSON
// envelope of bitly's Go forgettable server, so its clients work unchanged:
//
//   GET /incr?distribution=D&field=F[&field=G...][&N=1]    -> 200 "OK"
//   GET /get?distribution=D&field=F[&field=...][&rate=R]
//   GET /dist?distribution=D[&rate=R]
//   GET /nmostprobable?distribution=D[&N=10][&rate=R]
//   GET /dbsize
//
// Answers are {"status_code": 200, "status_txt": "", "data": ...}; errors
// keep the envelope with forgettable's status_txt (MISSING_ARG_FIELD, ...)
// and the HTTP status of the error, plus ebb's own "error" object saying
// which parameter was wrong and how.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "ebb/core/error.hpp"
#include "ebb/core/utf8.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/server/api.hpp"

namespace ebb::server {
namespace {

constexpr std::size_t kDefaultMostProbable = 10;

// forgettable's status_txt for an error of ours: its own names where it
// had one, else the error code in capitals.
std::string status_txt(const std::string& code, const std::string& message) {
  if (code == "bad_parameter") {
    if (message.starts_with("N:")) return "COULDNT_PARSE_N";
    if (message.starts_with("rate:")) return "CANNOT_PARSE_RATE";
    if (message.starts_with("distribution:")) return "INVALID_DISTRIBUTION";
    if (message.starts_with("field:")) return "INVALID_FIELD";
  }
  std::string out = code;
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

Response envelope_error(int status, const std::string& code, const std::string& message) {
  io::JsonWriter w;
  w.begin_object().key("status_code").value(status).key("status_txt").value(status_txt(code, message)).key("data").null();
  w.key("error").begin_object().key("code").value(code).key("message").value(message).end_object().end_object();
  Response r = json_response(status, w.take());
  r.error_code = code;
  return r;
}

// Runs a handler; its error comes back inside the envelope.
Response enveloped(const std::function<Response()>& handler) { return respond(handler, envelope_error); }

Response ok_data(const std::function<void(io::JsonWriter&)>& data) {
  io::JsonWriter w;
  w.begin_object().key("status_code").value(200).key("status_txt").value("").key("data");
  data(w);
  w.end_object();
  return json_response(200, w.take());
}

// Names are answered in JSON: one that is not UTF-8 would come back
// altered (U+FFFD), another name than the one stored.
void require_utf8(std::string_view name, const char* what, const char* code) {
  if (utf8_valid_prefix(name) != name.size()) throw bad_request(code, std::string(what) + ": must be valid UTF-8");
}

std::string distribution_param(const Request& req) {
  auto d = req.param("distribution");
  if (!d || d->empty()) throw bad_request("missing_arg_distribution", "distribution: is required");
  require_utf8(*d, "distribution", "invalid_distribution");
  return *d;
}

// Every field=, in request order.
// (Owned: in cluster mode the answer is made off the loop.)
std::vector<std::string> field_params(const Request& req) {
  std::vector<std::string> fields;
  auto [from, to] = req.query.equal_range("field");
  for (auto it = from; it != to; ++it) {
    if (it->second.empty()) throw bad_request("missing_arg_field", "field: must not be empty");
    require_utf8(it->second, "field", "invalid_field");
    fields.emplace_back(it->second);
  }
  if (fields.empty()) throw bad_request("missing_arg_field", "field: is required");
  return fields;
}

double number_param(const std::string& text, const std::string& name, const std::string& code, const std::string& expected) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    throw bad_request(code, name + ": must be " + expected + " (got '" + message_text(text) + "')");
  }
  return v;
}

std::optional<double> rate_param(const Request& req) {
  auto r = req.param("rate");
  if (!r) return std::nullopt;
  const double rate = number_param(*r, "rate", "cannot_parse_rate", "a decay rate in 1/s, a number >= 0");
  if (rate < 0) throw bad_request("cannot_parse_rate", "rate: must be a decay rate in 1/s, a number >= 0 (got '" + message_text(*r) + "')");
  return rate;
}

void write_distribution(io::JsonWriter& w, const engine::DistributionAnswer& a) {
  // T in whole seconds, as forgettable's (an int in its Go struct).
  w.begin_object().key("distribution").value(a.distribution).key("Z").value(a.z).key("T").value(static_cast<std::uint64_t>(a.t));
  w.key("data").begin_array();
  for (const auto& b : a.bins) w.begin_object().key("bin").value(b.bin).key("count").value(b.count).key("p").value(b.p).end_object();
  // Exact decay: bins decay towards 0 and are pruned under the minimum
  // count (forgettable's "prune": true); Poisson decay stops each bin at 1
  // (its default, "prune": false).
  w.end_array().key("rate").value(a.rate).key("prune").value(a.decay == engine::DistributionDecay::exact).end_object();
}

// A distribution that holds nothing answers as forgettable did: no bins
// (or the asked fields at 0), Z and T 0.
engine::DistributionAnswer answer_or_empty(ApiContext& ctx, const std::string& name, std::span<const std::string> fields, double now,
                                           std::optional<double> rate, std::optional<std::size_t> most_probable) {
  const std::vector<std::string_view> views(fields.begin(), fields.end());
  if (auto a = ctx.service.distribution(name, views, now, rate, most_probable)) return std::move(*a);
  engine::DistributionAnswer empty;
  empty.distribution = name;
  empty.rate = rate.value_or(ctx.service.distribution_options().default_rate);
  for (const auto& f : fields) empty.bins.push_back({f, 0, 0});
  return empty;
}

// Cluster mode: the distribution's owner is asked over the network, off the loop.
Response distribution_answer(ApiContext& ctx, std::string name, std::vector<std::string> fields, double now, std::optional<double> rate,
                             std::optional<std::size_t> most_probable) {
  return off_loop_in_cluster(ctx, [&ctx, name = std::move(name), fields = std::move(fields), now, rate, most_probable] {
    const auto answer = answer_or_empty(ctx, name, fields, now, rate, most_probable);
    return ok_data([&](io::JsonWriter& w) { write_distribution(w, answer); });
  }, envelope_error);
}

}  // namespace

void add_distribution_routes(Router& router, ApiContext& ctx) {
  router.add("GET", "/incr", "/incr", Router::Access::write, [&ctx](const Request& req, const std::string&) {
    return enveloped([&] {
      std::string name = distribution_param(req);
      auto fields = field_params(req);
      const auto n_text = req.param("N");
      const double n = n_text ? number_param(*n_text, "N", "couldnt_parse_n", "a number > 0") : 1.0;
      // (Cluster mode: the owner checks the increment over the network.)
      return off_loop_in_cluster(ctx, [&ctx, name = std::move(name), fields = std::move(fields), n, received_at = req.received_at] {
        const std::vector<std::string_view> views(fields.begin(), fields.end());
        const service::Commit commit = ctx.service.incr(name, views, n, received_at);
        Response r = text_response(200, "text/plain", "OK");
        if (commit.lsn == 0) return r;
        // "OK" once the increment is as durable as --fsync promises.
        r.deferred = [&ctx, commit](Response::Send send) {
          ctx.service.when_durable(commit, [send = std::move(send)](const std::string& error) {
            if (error.empty()) return send(text_response(200, "text/plain", "OK"));
            Response e = envelope_error(503, "persist_failed", error);
            e.headers.emplace_back("Retry-After", "1");
            send(std::move(e));
          });
        };
        return r;
      }, envelope_error);
    });
  });

  router.add("GET", "/get", "/get", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    return enveloped([&] {
      std::string name = distribution_param(req);
      auto fields = field_params(req);
      const auto rate = rate_param(req);
      return distribution_answer(ctx, std::move(name), std::move(fields), req.received_at, rate, std::nullopt);
    });
  });

  router.add("GET", "/dist", "/dist", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    return enveloped([&] {
      std::string name = distribution_param(req);
      const auto rate = rate_param(req);
      return distribution_answer(ctx, std::move(name), {}, req.received_at, rate, std::nullopt);
    });
  });

  router.add("GET", "/nmostprobable", "/nmostprobable", Router::Access::read, [&ctx](const Request& req, const std::string&) {
    return enveloped([&] {
      const std::string name = distribution_param(req);
      std::size_t n = kDefaultMostProbable;
      if (auto text = req.param("N")) {
        auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
        if (ec != std::errc() || end != text->data() + text->size() || n < 1) {
          throw bad_request("invalid_arg_n", "N: must be a whole number >= 1 (got '" + message_text(*text) + "')");
        }
      }
      const auto rate = rate_param(req);
      return distribution_answer(ctx, name, {}, req.received_at, rate, n);
    });
  });

  router.add("GET", "/dbsize", "/dbsize", Router::Access::read, [&ctx](const Request&, const std::string&) {
    return enveloped([&] {
      return off_loop_in_cluster(ctx, [&ctx] {
        const std::uint64_t n = ctx.service.count_distributions();
        return ok_data([&](io::JsonWriter& w) { w.value(n); });
      }, envelope_error);
    });
  });
}

}  // namespace ebb::server
