#pragma once
// The unit every front end produces and the engine consumes.
#include <string_view>

namespace ebb::engine {

struct Event {
  std::string_view item;  // must stay valid for the duration of apply()
  double time = 0;        // Unix seconds
  double weight = 1;
};

}  // namespace ebb::engine
