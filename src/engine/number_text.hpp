#pragma once
// A number as error messages show it: every digit a double holds, so the
// value a user sent can be recognised ("got 1.0000000000000002").
#include <cstdio>
#include <string>

namespace ebb::engine {

inline std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace ebb::engine
