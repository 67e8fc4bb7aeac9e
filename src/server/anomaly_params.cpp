#include "anomaly_params.hpp"

#include <charconv>
#include <cmath>

#include "ebb/core/error.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "query_params.hpp"

namespace ebb::server {
namespace {

// A window's length: whole seconds, as GET /top-k's window=.
std::optional<double> window_length(const Request& req, const std::string& name) {
  const auto seconds = duration_from(req.param(name), name);
  if (seconds && *seconds != std::floor(*seconds)) {
    throw bad_request("bad_parameter", name + ": windows are whole seconds (got '" + *req.param(name) + "')");
  }
  return seconds;
}

}  // namespace

service::AnomalyRequest anomaly_request_from(const Request& req) {
  service::AnomalyRequest r;
  const auto window = window_length(req, "window");
  if (!window) throw bad_request("bad_parameter", "window: is required (a window the namespace keeps, like 1m)");
  r.window = *window;
  r.baseline = window_length(req, "baseline");
  r.baseline_offset = duration_from(req.param("baseline_offset"), "baseline_offset");
  r.k = k_from(req.param("k"));
  auto& t = r.thresholds;
  t.min_jump = non_negative_from(req.param("min_jump"), "min_jump", "a number >= 0").value_or(t.min_jump);
  t.min_score = non_negative_from(req.param("min_score"), "min_score", "a number >= 0").value_or(t.min_score);
  t.min_count = non_negative_from(req.param("min_count"), "min_count", "a number >= 0").value_or(t.min_count);
  if (const auto text = req.param("min_rank_jump")) {
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
    if (ec != std::errc() || end != text->data() + text->size() || n > engine::NamespaceConfig::kMaxK) {
      throw bad_request("bad_parameter",
                        "min_rank_jump: must be a whole number in [0, " + std::to_string(engine::NamespaceConfig::kMaxK) + "] (got '" + message_text(*text) + "')");
    }
    t.min_rank_jump = n;
  }
  r.as_of = as_of_from(req.param("timestamp"));
  return r;
}

}  // namespace ebb::server
