#include "ebb/core/clock.hpp"

#include <chrono>

namespace ebb {

double wall_clock_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace ebb
