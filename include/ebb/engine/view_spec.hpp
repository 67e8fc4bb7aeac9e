#pragma once
// Which view of a namespace an answer comes from: all-time, exponentially
// decayed ("now" with a half-life), or an exact-boundary sliding window
// ("the last hour", exact to its bucket granularity).
#include <string>

namespace ebb::engine {

struct ViewSpec {
  enum class Kind { all_time, decayed, window };
  Kind kind = Kind::all_time;
  double half_life = 0;  // seconds, decayed views only
  double window = 0;     // seconds, window views only

  static ViewSpec all_time() { return {Kind::all_time, 0, 0}; }
  static ViewSpec decayed(double half_life_seconds) { return {Kind::decayed, half_life_seconds, 0}; }
  static ViewSpec sliding(double window_seconds) { return {Kind::window, 0, window_seconds}; }

  // "all", or the half-life or window as written in the API ("5m", "1h").
  std::string name() const;
  // For people: "all-time", "half-life 5m" or "window 1h".
  std::string label() const;

  friend bool operator==(const ViewSpec&, const ViewSpec&) = default;
};

}  // namespace ebb::engine
