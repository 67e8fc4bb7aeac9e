#pragma once
// The error code of an ebb error answer ({"error": {"code": ...}}), or the
// body in <> when it is not one (so a failed expectation shows it).
#include <simdjson.h>

#include <string>
#include <string_view>

#include "support/http_client.hpp"

namespace ebb::testing {

inline std::string error_code_of(const HttpResult& r) {
  simdjson::dom::parser p;
  simdjson::dom::element e;
  std::string_view code;
  if (p.parse(r.body).get(e) || e["error"]["code"].get(code)) return "<" + r.body + ">";
  return std::string(code);
}

}  // namespace ebb::testing
