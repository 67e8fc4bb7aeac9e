#pragma once
// The members of one JSON object read so far, to refuse a member named
// twice ({"k": 10, "k": 20}): RFC 8259 leaves what that means open (most
// readers keep the last, simdjson gives both), so which one a request meant
// is a guess; the request readers refuse it by name instead.
#include <algorithm>
#include <string_view>
#include <vector>

namespace ebb::io {

class JsonMembers {
 public:
  // False when `name` was read before in this object.
  bool first(std::string_view name) {
    if (std::find(names_.begin(), names_.end(), name) != names_.end()) return false;
    names_.push_back(name);
    return true;
  }

 private:
  std::vector<std::string_view> names_;  // (objects here have a few members: a scan beats a set)
};

}  // namespace ebb::io
