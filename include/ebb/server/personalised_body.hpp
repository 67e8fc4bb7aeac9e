#pragma once
// The body of POST /top-k/personalised, parsed and checked for shape: every
// field of the type it must have, the user's items at most max_user_items
// (413), each named in its error (user_items[i].weight). What the values
// mean (alpha's range, weights, the items' length) is the service's to
// check. The handler (api_queries.cpp) and fuzz/fuzz_personalised_body.cpp
// call this.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/engine/personalised.hpp"

namespace ebb::server {

struct PersonalisedBody {
  std::string name;
  std::optional<std::string> window, half_life;
  std::optional<std::size_t> k;  // in [1, NamespaceConfig::kMaxK] when given
  double alpha = 0.5;
  std::vector<engine::UserItem> user_items;
};

// ApiError: 400 invalid_json / invalid_field / bad_parameter (k), 413
// batch_too_large.
PersonalisedBody parse_personalised_body(std::string_view body, std::size_t max_user_items);

}  // namespace ebb::server
