#include "query_params.hpp"

#include <charconv>
#include <cmath>

#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"
#include "ebb/engine/namespace_config.hpp"

namespace ebb::server {


std::optional<engine::ViewSpec> view_from(const std::optional<std::string>& window, const std::optional<std::string>& half_life) {
  if (window && half_life) throw bad_request("bad_parameter", "window, half_life: give one of the two, not both");
  if (window) {
    if (*window == "all") return engine::ViewSpec::all_time();
    double seconds = 0;
    try {
      seconds = parse_duration(*window);
    } catch (const InvalidArgument&) {
      throw bad_request("bad_parameter", "window: must be \"all\" or a duration like 1h (got '" + *window + "')");
    }
    if (seconds != std::floor(seconds)) throw bad_request("bad_parameter", "window: windows are whole seconds (got '" + *window + "')");
    return engine::ViewSpec::sliding(seconds);
  }
  if (half_life) {
    try {
      return engine::ViewSpec::decayed(parse_duration(*half_life));
    } catch (const InvalidArgument& e) {
      throw bad_request("bad_parameter", std::string("half_life: ") + e.what());
    }
  }
  return std::nullopt;
}

std::optional<double> as_of_from(const std::optional<std::string>& text, const std::string& name) {
  if (!text) return std::nullopt;
  double t = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), t);
  if (ec != std::errc() || end != text->data() + text->size() || !std::isfinite(t) || t < 0) {
    throw bad_request("bad_parameter", name + ": must be seconds since the epoch, like 1708632000 (got '" + *text + "')");
  }
  return t;
}

std::optional<std::size_t> k_from(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::size_t k = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), k);
  if (ec != std::errc() || end != text->data() + text->size() || k < 1 || k > engine::NamespaceConfig::kMaxK) {
    throw bad_request("bad_parameter", "k: must be a whole number in [1, " + std::to_string(engine::NamespaceConfig::kMaxK) + "] (got '" + *text + "')");
  }
  return k;
}

std::string required(const Request& req, const std::string& name) {
  auto v = req.param(name);
  if (!v || v->empty()) throw bad_request("bad_parameter", name + ": is required");
  return *v;
}

double time_param(const Request& req, const std::string& name) {
  const auto t = as_of_from(req.param(name), name);
  if (!t) throw bad_request("bad_parameter", name + ": is required (seconds since the epoch)");
  return *t;
}

}  // namespace ebb::server
