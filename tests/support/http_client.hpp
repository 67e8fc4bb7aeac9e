#pragma once
// The tests use the project's own client (a real HTTP/1.1 client over Beast).
#include "ebb/io/http_client.hpp"

namespace ebb::testing {
using io::HttpClient;
using io::HttpResult;
}  // namespace ebb::testing
