#pragma once
// Turns event times into forward-decay weight factors without one exp() per
// event. Consecutive events are close in time compared with a half-life, so
// exp(lambda (t - L)) = exp(lambda (t0 - L)) * exp(lambda (t - t0)) and the
// second factor is a 4th-order Taylor polynomial while |lambda (t - t0)| <
// 1e-3 (truncation error < 1e-17 relative). Anything farther recomputes the
// base with exp(). This keeps decayed updates within a few ns of undecayed.
#include <cmath>
#include <limits>

#include "ebb/decay/forward_decay.hpp"

namespace ebb {

class WeightScaler {
 public:
  static constexpr double kPolyRange = 1e-3;

  // Must be called after the clock's landmark changes (anchor, rebase).
  void reset() noexcept { base_time_ = std::numeric_limits<double>::quiet_NaN(); }

  double factor(const ForwardDecay& clock, double t) noexcept {
    if (!clock.decays()) return 1.0;
    const double x = clock.lambda() * (t - base_time_);
    if (std::fabs(x) < kPolyRange) {  // false for NaN: first use recomputes
      return base_factor_ * (1.0 + x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0)))));
    }
    base_time_ = t;
    base_factor_ = clock.weight_factor(t);
    return base_factor_;
  }

 private:
  double base_time_ = std::numeric_limits<double>::quiet_NaN();
  double base_factor_ = 1.0;
};

}  // namespace ebb
