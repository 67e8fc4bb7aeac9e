#include "ebb/server/router.hpp"

#include <exception>


namespace ebb::server {

void Router::add(std::string method, std::string pattern, std::string route_name, Access access, Handler handler, bool gated) {
  const bool tail = pattern.ends_with("}");
  if (tail) pattern = pattern.substr(0, pattern.rfind('{'));
  routes_.push_back(Route{std::move(method), std::move(pattern), std::move(route_name), tail, access, std::move(handler), gated});
}

Router::Result Router::dispatch(const Request& request) const {
  std::string allow;
  for (const auto& r : routes_) {
    std::string tail;
    if (r.has_tail) {
      // Matched on the path as sent, the {name} decoded alone: a name may
      // hold a '/' (sent as %2F), which must not split the path.
      const std::string& raw = request.raw_path.empty() ? request.path : request.raw_path;
      if (!raw.starts_with(r.prefix) || raw.size() == r.prefix.size()) continue;
      const std::string_view raw_tail = std::string_view(raw).substr(r.prefix.size());
      if (raw_tail.find('/') != std::string_view::npos) continue;
      tail = decode_path_segment(raw_tail);  // (the whole path decoded already: this cannot fail)
    } else if (request.path != r.prefix) {
      continue;
    }
    if (r.method != request.method) {
      allow += (allow.empty() ? "" : ", ") + r.method;
      continue;
    }
    if (auth_) {
      if (auto refused = auth_(request, r.access)) return {std::move(*refused), r.name};
    }
    return {respond([&] {
              if (r.gated && gate_) gate_();
              return r.handler(request, tail);
            }),
            r.name};
  }
  if (!allow.empty()) {
    Response r = error_response(405, "method_not_allowed", request.method + " is not allowed on " + request.path + " (allowed: " + allow + ")");
    r.headers.emplace_back("Allow", allow);
    return {std::move(r), "unmatched"};
  }
  return {error_response(404, "not_found", "no route for " + request.method + " " + request.path), "unmatched"};
}

}  // namespace ebb::server
