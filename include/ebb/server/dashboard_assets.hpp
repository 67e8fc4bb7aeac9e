#pragma once
// The dashboard's files (src/server/dashboard/), compiled into the binary
// by cmake/embed_assets.cmake: `GET /` and `GET /dashboard/{file}` serve
// them with no file on disk and nothing fetched from a network.
#include <span>
#include <string_view>

namespace ebb::server {

struct DashboardAsset {
  std::string_view name;          // "index.html", "dashboard.js", ...
  std::string_view content_type;  // with charset for text
  std::string_view etag;          // quoted, strong: a digest of the bytes
  std::string_view bytes;
};

std::span<const DashboardAsset> dashboard_assets();

}  // namespace ebb::server
