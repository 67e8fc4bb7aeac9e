#pragma once
// The wall clock as the engine and every front end read it.
namespace ebb {

// Seconds since the Unix epoch, from the system clock.
double wall_clock_now();

}  // namespace ebb
