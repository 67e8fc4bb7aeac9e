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
      throw bad_request("bad_parameter", "window: must be \"all\" or a duration like 1h (got '" + message_text(*window) + "')");
    }
    if (seconds != std::floor(seconds)) throw bad_request("bad_parameter", "window: windows are whole seconds (got '" + message_text(*window) + "')");
    return engine::ViewSpec::sliding(seconds);
  }
  if (half_life) return engine::ViewSpec::decayed(*duration_from(half_life, "half_life"));
  return std::nullopt;
}

std::optional<double> duration_from(const std::optional<std::string>& text, const std::string& name) {
  if (!text) return std::nullopt;
  try {
    return parse_duration(*text);
  } catch (const InvalidArgument& e) {
    throw bad_request("bad_parameter", name + ": " + e.what());
  }
}

std::optional<double> non_negative_from(const std::optional<std::string>& text, const std::string& name, const std::string& expected) {
  if (!text) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || end != text->data() + text->size() || !std::isfinite(v) || v < 0) {
    throw bad_request("bad_parameter", name + ": must be " + expected + " (got '" + message_text(*text) + "')");
  }
  return v;
}

std::optional<double> as_of_from(const std::optional<std::string>& text, const std::string& name) {
  return non_negative_from(text, name, "seconds since the epoch, like 1708632000");
}

std::optional<std::size_t> k_from(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::size_t k = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), k);
  if (ec != std::errc() || end != text->data() + text->size() || k < 1 || k > engine::NamespaceConfig::kMaxK) {
    throw bad_request("bad_parameter", "k: must be a whole number in [1, " + std::to_string(engine::NamespaceConfig::kMaxK) + "] (got '" + message_text(*text) + "')");
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
