#pragma once
// Query parameters the query routes share, parsed with errors that name the
// parameter (ApiError 400 bad_parameter).
#include <optional>
#include <string>

#include "ebb/engine/view_spec.hpp"
#include "ebb/server/http_types.hpp"

namespace ebb::server {

// window=all|DUR | half_life=DUR (one of the two; none = the namespace's first view).
std::optional<engine::ViewSpec> view_from(const std::optional<std::string>& window, const std::optional<std::string>& half_life);
// A duration ("5m"); none when not given.
std::optional<double> duration_from(const std::optional<std::string>& text, const std::string& name);
// A finite decimal >= 0; the error says it must be `expected`.
std::optional<double> non_negative_from(const std::optional<std::string>& text, const std::string& name, const std::string& expected);
// timestamp=T: seconds since the epoch (a decimal); none = now.
std::optional<double> as_of_from(const std::optional<std::string>& text, const std::string& name = "timestamp");
// k in [1, kMaxK]; none = the namespace's.
std::optional<std::size_t> k_from(const std::optional<std::string>& text);
// A parameter that must be given, non-empty.
std::string required(const Request& req, const std::string& name);
// A required time parameter (seconds since the epoch).
double time_param(const Request& req, const std::string& name);

}  // namespace ebb::server
