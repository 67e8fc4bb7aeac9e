#include "ebb/engine/view_spec.hpp"

#include "ebb/core/duration.hpp"

namespace ebb::engine {

std::string ViewSpec::name() const {
  switch (kind) {
    case Kind::all_time: return "all";
    case Kind::decayed: return format_duration(half_life);
    case Kind::window: return format_duration(window);
  }
  return "?";
}

std::string ViewSpec::label() const {
  switch (kind) {
    case Kind::all_time: return "all-time";
    case Kind::decayed: return "half-life " + format_duration(half_life);
    case Kind::window: return "window " + format_duration(window);
  }
  return "?";
}

}  // namespace ebb::engine
