#include "ebb/core/time_jump.hpp"

#include <cstdio>

#include "ebb/core/duration.hpp"

namespace ebb {

std::string describe_time_jump(double time, double newest, double max_jump) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "is %.15g s ahead of the newest event time so far (%.15g), more than the %s allowed",
                time - newest, newest, format_duration(max_jump).c_str());
  return std::string("timestamp ") + buf;
}

}  // namespace ebb
