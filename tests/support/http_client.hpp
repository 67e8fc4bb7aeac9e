#pragma once
// The tests use the project's own client (a real HTTP/1.1 client over Beast).
#include "ebb/server/http_client.hpp"

namespace ebb::testing {
using server::HttpClient;
using server::HttpResult;
}  // namespace ebb::testing
