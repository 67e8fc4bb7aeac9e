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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

  // out[i] = weights[i] * factor(times[i]) for a chunk, in one branch-free
  // pass that vectorises; it also tracks the largest |lambda (t - base)|.
  // Only when some event fell outside the polynomial's range (a new base is
  // needed, or the chunk spans a lot of a half-life) is the chunk redone:
  // around its midpoint if that suffices, else event by event.
  void scale(const ForwardDecay& clock, const double* times, const double* weights, double* out, std::size_t n) noexcept {
    if (!clock.decays()) {
      for (std::size_t i = 0; i < n; ++i) out[i] = weights[i];
      return;
    }
    if (n == 0) return;
    if (std::isnan(base_time_)) rebase(clock, times[0]);
    if (poly_pass(clock.lambda(), times, weights, out, n)) return;
    double lo = times[0], hi = times[0];
    for (std::size_t i = 1; i < n; ++i) {
      lo = std::min(lo, times[i]);
      hi = std::max(hi, times[i]);
    }
    rebase(clock, lo + (hi - lo) / 2);
    if (poly_pass(clock.lambda(), times, weights, out, n)) return;
    for (std::size_t i = 0; i < n; ++i) out[i] = weights[i] * factor(clock, times[i]);
  }

 private:
  void rebase(const ForwardDecay& clock, double t) noexcept {
    base_time_ = t;
    base_factor_ = clock.weight_factor(t);
  }
  // Writes every out[i]; returns whether every |lambda (t_i - base)| was in
  // the polynomial's range. Two events at a time with SSE2 (part of x86-64):
  // GCC does not vectorise the range test's reduction by itself.
  bool poly_pass(double lambda, const double* times, const double* weights, double* out, std::size_t n) const noexcept {
    const double base_t = base_time_, base_f = base_factor_;
    std::size_t i = 0;
    bool outside = false;
#if defined(__SSE2__)
    const __m128d vl = _mm_set1_pd(lambda), vb = _mm_set1_pd(base_t), vf = _mm_set1_pd(base_f);
    const __m128d range = _mm_set1_pd(kPolyRange), sign = _mm_set1_pd(-0.0), one = _mm_set1_pd(1.0);
    const __m128d c2 = _mm_set1_pd(0.5), c3 = _mm_set1_pd(1.0 / 6.0), c4 = _mm_set1_pd(1.0 / 24.0);
    __m128d bad = _mm_setzero_pd();
    for (; i + 2 <= n; i += 2) {
      const __m128d x = _mm_mul_pd(vl, _mm_sub_pd(_mm_loadu_pd(times + i), vb));
      bad = _mm_or_pd(bad, _mm_cmpge_pd(_mm_andnot_pd(sign, x), range));
      __m128d p = _mm_add_pd(c3, _mm_mul_pd(x, c4));  // same order of operations as the scalar path
      p = _mm_add_pd(c2, _mm_mul_pd(x, p));
      p = _mm_add_pd(one, _mm_mul_pd(x, p));
      p = _mm_add_pd(one, _mm_mul_pd(x, p));
      _mm_storeu_pd(out + i, _mm_mul_pd(_mm_loadu_pd(weights + i), _mm_mul_pd(vf, p)));
    }
    outside = _mm_movemask_pd(bad) != 0;
#endif
    for (; i < n; ++i) {
      const double x = lambda * (times[i] - base_t);
      outside = outside || std::fabs(x) >= kPolyRange;
      out[i] = weights[i] * (base_f * (1.0 + x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0))))));
    }
    return !outside;
  }

  double base_time_ = std::numeric_limits<double>::quiet_NaN();
  double base_factor_ = 1.0;
};

}  // namespace ebb
