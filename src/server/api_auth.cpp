#include "ebb/server/api.hpp"

#include "ebb/core/ascii_case.hpp"

namespace ebb::server {
namespace {

Response refuse(const std::string& code, const std::string& message, const std::string& challenge) {
  Response r = error_response(401, code, message);
  r.headers.emplace_back("WWW-Authenticate", challenge);
  return r;
}

}  // namespace

std::optional<Response> authorize(const service::AccessTokens& tokens, const Request& request, service::Access access) {
  if (!tokens.required_for(access)) return std::nullopt;
  static const std::string kChallenge = R"(Bearer realm="ebb")";
  std::optional<std::string> presented;
  if (auto header = request.header("authorization")) {
    // RFC 6750: "Bearer" (any case), one or more spaces, the token.
    const std::string_view h = *header;
    const auto space = h.find(' ');
    if (space == std::string_view::npos || !equals_ignoring_case(h.substr(0, space), "Bearer")) {
      return refuse("invalid_request", "Authorization: only the Bearer scheme is accepted (Authorization: Bearer <token>)",
                    kChallenge + R"(, error="invalid_request")");
    }
    const auto start = h.find_first_not_of(' ', space);
    presented = std::string(start == std::string_view::npos ? std::string_view{} : h.substr(start));
  } else {
    const auto [first, last] = request.query.equal_range("access_token");
    if (first != last) {
      if (std::next(first) != last) {
        return refuse("invalid_request", "access_token: given more than once", kChallenge + R"(, error="invalid_request")");
      }
      presented = first->second;
    }
  }
  if (!presented) {
    return refuse("unauthorized",
                  std::string(access == service::Access::write ? "writes and admin routes" : "this server's routes") +
                      " need a token (--auth-token-file): send \"Authorization: Bearer <token>\" or ?access_token=<token>",
                  kChallenge);
  }
  if (!tokens.accepts(*presented)) {
    return refuse("invalid_token", "the token is not one of this server's (--auth-token-file)", kChallenge + R"(, error="invalid_token")");
  }
  return std::nullopt;
}

}  // namespace ebb::server
