#pragma once
// The guard of an event clock against a corrupt timestamp. On event time,
// "now" is the newest event time seen, and it never moves back: one event
// dated far ahead (a millisecond time read as seconds, 1e18, a clock set to
// 2099) would make every later event read as ancient and decay to nothing
// for good. An event more than `max_jump` seconds ahead of the newest time
// accepted so far is refused instead of counted.
//
// Plain numbers in, no engine types, so any front end and the engine can
// share it; the caller keeps `newest` (updated with each accepted time).
#include <optional>
#include <string>

namespace ebb {

// Why `time` is refused ("timestamp is ..."), or nullopt when it may be
// counted. `newest` is NaN before any event was accepted: the first time
// is taken as it is (there is nothing to compare it with).
std::string describe_time_jump(double time, double newest, double max_jump);
inline std::optional<std::string> check_time_jump(double time, double newest, double max_jump) {
  if (!(time - newest > max_jump)) [[likely]]  // NaN (no newest yet) compares false
    return std::nullopt;
  return describe_time_jump(time, newest, max_jump);
}

}  // namespace ebb
