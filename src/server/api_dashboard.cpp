// GET / (the dashboard page) and GET /dashboard/{file} (its script, style
// sheet and icon): files compiled into the binary. The page holds no data:
// it reads the public JSON API like any client (with the token it is given,
// when reads need one), so serving it needs no token.
#include "ebb/core/error.hpp"
#include "ebb/server/api.hpp"
#include "ebb/server/dashboard_assets.hpp"

namespace ebb::server {
namespace {

// The page runs only its own script and style sheet and talks only to
// this server; no page may frame it; a token in its address (with
// --auth-reads) is never sent on as a referrer.
constexpr const char* kPagePolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const DashboardAsset* find_asset(std::string_view name) {
  for (const auto& asset : dashboard_assets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

// Whether an If-None-Match value names `etag`: "*", or a comma-separated
// list of entity tags compared weakly (RFC 9110 13.1.2: W/ is ignored).
bool none_match_names(std::string_view header, std::string_view etag) {
  while (!header.empty()) {
    const auto comma = header.find(',');
    std::string_view tag = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
  }
  return false;
}

Response serve(const Request& request, const DashboardAsset& asset) {
  Response r;
  // no-cache: a browser may keep the file but asks each time (a 304 when
  // the binary's copy is the same), so an upgraded server is seen at once.
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("ETag", std::string(asset.etag));
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  if (asset.content_type.starts_with("text/html")) {
    r.headers.emplace_back("Content-Security-Policy", kPagePolicy);
    r.headers.emplace_back("X-Frame-Options", "DENY");
  }
  if (auto match = request.header("if-none-match"); match && none_match_names(*match, asset.etag)) {
    r.status = 304;
    return r;
  }
  r.status = 200;
  r.content_type = std::string(asset.content_type);
  r.body = std::string(asset.bytes);
  return r;
}

}  // namespace

void add_dashboard_routes(Router& router, ApiContext&) {
  // HEAD too (the transport sends the head alone): link checkers and
  // proxies ask it of pages.
  for (const char* method : {"GET", "HEAD"}) {
    router.add(method, "/", "/", Router::Access::open, [](const Request& request, const std::string&) {
      return serve(request, *find_asset("index.html"));
    }, false);
    router.add(method, "/dashboard/{file}", "/dashboard/{file}", Router::Access::open, [](const Request& request, const std::string& file) {
      const DashboardAsset* asset = find_asset(file);
      if (asset == nullptr) throw ApiError(404, "not_found", "the dashboard has no file '" + message_text(file) + "' (GET / is the page)");
      return serve(request, *asset);
    }, false);
  }
}

}  // namespace ebb::server
