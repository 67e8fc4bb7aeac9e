#pragma once
// Which view of a namespace an answer comes from. Today: all-time and
// exponentially decayed ("now" with a half-life). Exact-boundary windows
// (last 1m/1h/1d) slot in as another kind behind the same View interface.
#include <string>

namespace ebb::engine {

struct ViewSpec {
  enum class Kind { all_time, decayed };
  Kind kind = Kind::all_time;
  double half_life = 0;  // seconds, decayed views only

  static ViewSpec all_time() { return {Kind::all_time, 0}; }
  static ViewSpec decayed(double half_life_seconds) { return {Kind::decayed, half_life_seconds}; }

  // "all" or the half-life as written in the API ("5m").
  std::string name() const;
  // For people: "all-time" or "half-life 5m".
  std::string label() const;

  friend bool operator==(const ViewSpec&, const ViewSpec&) = default;
};

}  // namespace ebb::engine
