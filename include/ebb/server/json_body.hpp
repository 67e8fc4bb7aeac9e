#pragma once
// JSON request bodies that are one object of named fields (POST /counts,
// POST /top-k/personalised): the object, and a field's string, each refused
// with a 400 that says what was wrong (ApiError).
#include <simdjson.h>

#include <string>
#include <string_view>

namespace ebb::server {

// The body as a JSON object (400 invalid_json otherwise); `parser` holds
// what the object points into.
simdjson::dom::object object_body(simdjson::dom::parser& parser, std::string_view body);
// A field that must be a string (400 invalid_field naming `field` otherwise).
std::string string_field(simdjson::dom::element value, const std::string& field);

}  // namespace ebb::server
