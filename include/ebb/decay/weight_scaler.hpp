#pragma once
// Turns event times into forward-decay weight factors without one exp() per
// event. Consecutive events are close in time compared with a half-life, so
// exp(lambda (t - L)) = exp(lambda (t0 - L)) * exp(lambda (t - t0)) and the
// second factor is a 4th-order Taylor polynomial while |lambda (t - t0)| <
// 1e-3 (truncation error < 1e-17 relative). Anything farther recomputes the
// base with exp(). This keeps decayed updates within a few ns of undecayed.
#include <algorithm>
#include <cmath>
#include <cstddef>
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

  // out[i] = weights[i] * factor(times[i]) for a chunk. When the whole chunk
  // lies within the polynomial's range of one base time (the usual case: a
  // chunk spans far less than a half-life), the loop has no branches and
  // vectorises; otherwise it falls back to factor() per event.
  void scale(const ForwardDecay& clock, const double* times, const double* weights, double* out, std::size_t n) noexcept {
    if (!clock.decays()) {
      for (std::size_t i = 0; i < n; ++i) out[i] = weights[i];
      return;
    }
    if (n == 0) return;
    double lo = times[0], hi = times[0];
    for (std::size_t i = 1; i < n; ++i) {
      lo = std::min(lo, times[i]);
      hi = std::max(hi, times[i]);
    }
    const double lambda = clock.lambda();
    auto in_range = [&] { return lambda * std::max(hi - base_time_, base_time_ - lo) < kPolyRange; };  // false for NaN base
    if (!in_range()) {
      base_time_ = lo + (hi - lo) / 2;
      base_factor_ = clock.weight_factor(base_time_);
    }
    if (in_range()) {
      const double base_t = base_time_, base_f = base_factor_;
      for (std::size_t i = 0; i < n; ++i) {
        const double x = lambda * (times[i] - base_t);
        out[i] = weights[i] * (base_f * (1.0 + x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0))))));
      }
      return;
    }
    for (std::size_t i = 0; i < n; ++i) out[i] = weights[i] * factor(clock, times[i]);
  }

 private:
  double base_time_ = std::numeric_limits<double>::quiet_NaN();
  double base_factor_ = 1.0;
};

}  // namespace ebb
