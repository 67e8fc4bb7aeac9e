#pragma once
// Routes (method, path) to handlers. Paths are literal or end in one
// "{name}" segment (/namespaces/{name}). Unknown paths give 404, known
// paths with another method 405 with an Allow header. A handler's
// ApiError becomes its JSON error response; anything else a 500.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ebb/server/http_types.hpp"
#include "ebb/service/access_tokens.hpp"

namespace ebb::server {

class Router {
 public:
  // The path segment matched by a trailing "{...}", if any.
  using Handler = std::function<Response(const Request&, const std::string& tail)>;

  using Access = service::Access;
  // Every route says what it does (`access`), for the authorisation check
  // that runs first. Gated routes then run the gate (e.g. 503 until the
  // server is ready).
  void add(std::string method, std::string pattern, std::string route_name, Access access, Handler handler, bool gated = true);
  void set_gate(std::function<void()> gate) { gate_ = std::move(gate); }
  // Returns the refusal (401) of a request that may not run the route.
  using Auth = std::function<std::optional<Response>(const Request&, Access)>;
  void set_auth(Auth auth) { auth_ = std::move(auth); }

  struct Result {
    Response response;
    std::string route;  // the pattern's label for metrics ("unmatched" when none)
  };
  Result dispatch(const Request& request) const;

 private:
  struct Route {
    std::string method, prefix, name;
    bool has_tail;
    Access access;
    Handler handler;
    bool gated;
  };
  std::vector<Route> routes_;
  std::function<void()> gate_;
  Auth auth_;
};

}  // namespace ebb::server
