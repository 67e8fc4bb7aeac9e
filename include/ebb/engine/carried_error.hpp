#pragma once
// What a sketch counted before a resize widened it, and that part's error
// bound (engine resizes: DecayedView::widen, TimeRings::widen). A widened
// sketch never under-counts, but the noise its old width let in stays: its
// stated bound is the new epsilon x what came since plus what it carried.
// 0 and 0 for a sketch never resized, whose bound is then epsilon x total.
#include "ebb/core/binary_io.hpp"

#include <cmath>

namespace ebb::engine {

struct CarriedError {
  double total = 0;  // of the sketch's total, what was counted at a narrower width
  double error = 0;  // that part's error bound

  bool any() const noexcept { return total != 0 || error != 0; }
  // The bound of a sketch of `epsilon` holding `sketch_total`, this carried.
  double bound(double epsilon, double sketch_total) const noexcept { return epsilon * (sketch_total - total) + error; }
  // A resize of a sketch of `epsilon` holding `sketch_total`: all of it is
  // carried from now on, with the bound it had.
  void carry_all(double epsilon, double sketch_total) noexcept {
    error = bound(epsilon, sketch_total);
    total = sketch_total;
  }
  void add(const CarriedError& other, double weight = 1) noexcept {
    total += weight * other.total;
    error += weight * other.error;
  }
  void scale(double factor) noexcept {
    total *= factor;
    error *= factor;
  }

  void write(BinaryWriter& w) const {
    w.put<double>(total);
    w.put<double>(error);
  }
  static CarriedError read(BinaryReader& r) {
    CarriedError c{r.get<double>(), r.get<double>()};
    if (!(std::isfinite(c.total) && c.total >= 0 && std::isfinite(c.error) && c.error >= 0)) r.fail("bad error carried from before a resize");
    return c;
  }
};

}  // namespace ebb::engine
