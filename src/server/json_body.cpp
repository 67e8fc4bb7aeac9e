// JSON object bodies (server/json_body.hpp).
#include "ebb/server/json_body.hpp"

#include "ebb/server/http_types.hpp"

namespace ebb::server {

simdjson::dom::object object_body(simdjson::dom::parser& parser, std::string_view body) {
  simdjson::dom::element doc;
  if (auto err = parser.parse(body.data(), body.size()).get(doc)) {
    throw bad_request("invalid_json", std::string("request body is not valid JSON: ") + simdjson::error_message(err));
  }
  if (!doc.is_object()) throw bad_request("invalid_json", "request body must be a JSON object");
  return doc.get_object().value_unsafe();
}

std::string string_field(simdjson::dom::element value, const std::string& field) {
  if (!value.is_string()) throw bad_request("invalid_field", field + ": must be a string");
  return std::string(value.get_string().value_unsafe());
}

}  // namespace ebb::server
