// POST /top-k/personalised's body (server/personalised_body.hpp).
#include "ebb/server/personalised_body.hpp"

#include <simdjson.h>

#include "ebb/core/error.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "ebb/io/json_members.hpp"
#include "ebb/server/http_types.hpp"
#include "ebb/server/json_body.hpp"

namespace ebb::server {

PersonalisedBody parse_personalised_body(std::string_view body, std::size_t max_user_items) {
  simdjson::dom::parser parser;
  const simdjson::dom::object members = object_body(parser, body);
  PersonalisedBody out;
  bool has_items = false;
  auto number = [](simdjson::dom::element v, const std::string& field, const char* what) {
    double d = 0;
    if (v.get_double().get(d) != simdjson::SUCCESS) throw bad_request("invalid_field", field + ": must be " + what);
    return d;
  };
  io::JsonMembers named;
  for (auto [key, value] : members) {
    const std::string field(key);
    if (!named.first(key)) throw bad_request("invalid_field", message_text(field) + ": is given twice");
    if (field == "namespace") {
      out.name = string_field(value, field);
    } else if (field == "window") {
      out.window = string_field(value, field);
    } else if (field == "half_life") {
      out.half_life = string_field(value, field);
    } else if (field == "k") {
      std::uint64_t k = 0;
      if (value.get_uint64().get(k) != simdjson::SUCCESS || k < 1 || k > engine::NamespaceConfig::kMaxK) {
        throw bad_request("bad_parameter", "k: must be a whole number in [1, " + std::to_string(engine::NamespaceConfig::kMaxK) + "]");
      }
      out.k = static_cast<std::size_t>(k);
    } else if (field == "alpha") {
      out.alpha = number(value, field, "a number in [0, 1]");
    } else if (field == "user_items") {
      has_items = true;
      if (!value.is_array()) throw bad_request("invalid_field", "user_items: must be an array of {\"item_id\", \"weight\", \"timestamp\"} objects");
      const simdjson::dom::array entries = value.get_array().value_unsafe();  // (held: ranging over the temporary's would dangle)
      for (auto entry : entries) {
        const std::string at = "user_items[" + std::to_string(out.user_items.size()) + "]";
        if (out.user_items.size() >= max_user_items) {
          throw ApiError(413, "batch_too_large", "user_items: more than " + std::to_string(max_user_items) + " items (--max-user-items)");
        }
        if (!entry.is_object()) throw bad_request("invalid_field", at + ": must be an object with an item_id");
        engine::UserItem u;
        bool has_id = false;
        const simdjson::dom::object fields = entry.get_object().value_unsafe();
        io::JsonMembers entry_named;
        for (auto [ukey, uvalue] : fields) {
          const std::string name = at + "." + std::string(ukey);
          if (!entry_named.first(ukey)) throw bad_request("invalid_field", message_text(name) + ": is given twice");
          if (ukey == "item_id") {
            u.item = string_field(uvalue, name);
            has_id = true;
          } else if (ukey == "weight") {
            u.weight = number(uvalue, name, "a number in (0, 1e15]");
          } else if (ukey == "timestamp") {
            u.timestamp = number(uvalue, name, "a number of seconds since the epoch");
          } else {
            throw bad_request("invalid_field", message_text(name) + ": unknown field");
          }
        }
        if (!has_id) throw bad_request("invalid_field", at + ".item_id: is required");
        out.user_items.push_back(std::move(u));
      }
    } else {
      throw bad_request("invalid_field", message_text(field) + ": unknown field");
    }
  }
  if (out.name.empty()) throw bad_request("invalid_field", "namespace: is required");
  if (!has_items) throw bad_request("invalid_field", "user_items: is required");
  return out;
}

}  // namespace ebb::server
