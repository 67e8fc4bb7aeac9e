#pragma once
// Forward decay (Cormode, Shkapenyuk, Srivastava, Xu, ICDE 2009): lazy
// exponential decay with one landmark per structure.
//
// A structure stores every quantity in the coordinates of its landmark L:
//   stored += w * exp(lambda * (t_event - L))     (write)
//   value(now) = stored * exp(-lambda * (now - L)) (read)
// so time passing never touches the state and never reorders it. Events
// from the past are exact (their weight depends on their own time only).
//
// exp() overflows near e^709, so before an add would need a factor above
// e^kRebaseExponent the owner rebases: it multiplies every stored value by
// the factor rebase() returns and the landmark moves. With lambda = 0 (no
// decay) every factor is exactly 1 and rebase never happens: the all-time
// view is the same code.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace ebb {

class ForwardDecay {
 public:
  // Rebasing is an O(state) pass; at 300 it happens once every ~433
  // half-lives of stream time and stored values stay below ~e^300 * weight.
  static constexpr double kRebaseExponent = 300.0;

  // half_life_seconds = +infinity gives no decay (lambda = 0).
  static ForwardDecay with_half_life(double half_life_seconds);
  static ForwardDecay none() { return with_half_life(std::numeric_limits<double>::infinity()); }
  // The same from the decay rate lambda (1/s, finite, >= 0; 0: no decay).
  static ForwardDecay with_rate(double lambda);

  double lambda() const noexcept { return lambda_; }
  double half_life() const noexcept;  // +inf when there is no decay
  bool decays() const noexcept { return lambda_ > 0; }
  bool anchored() const noexcept { return anchored_; }
  double landmark() const noexcept { return landmark_; }

  // Sets the landmark on first use so the first weights are ~1.
  void anchor(double t) noexcept {
    if (!anchored_) {
      landmark_ = t;
      anchored_ = true;
    }
  }

  // True when an event at t would need a factor past the overflow guard.
  bool needs_rebase(double t) const noexcept { return lambda_ * (t - landmark_) > kRebaseExponent; }

  // Moves the landmark to t and returns the factor the owner must multiply
  // every stored value (and total) by to stay in the new coordinates.
  double rebase(double t) noexcept {
    const double factor = std::exp(-lambda_ * (t - landmark_));
    landmark_ = t;
    return factor;
  }

  // Multiplier for a weight observed at t (forward coordinates).
  double weight_factor(double t) const noexcept { return lambda_ == 0 ? 1.0 : std::exp(lambda_ * (t - landmark_)); }
  // Multiplier from stored coordinates to the value at time now.
  double read_factor(double now) const noexcept { return lambda_ == 0 ? 1.0 : std::exp(-lambda_ * (now - landmark_)); }

  // Converts a stored (landmark-coordinate) value to events per second at
  // `now`: a steady rate r gives S -> r / lambda, so r ~= lambda * S.
  double rate(double stored, double now) const noexcept { return lambda_ * stored * read_factor(now); }

  std::string serialize() const;
  static ForwardDecay deserialize(std::string_view blob);

  friend bool operator==(const ForwardDecay&, const ForwardDecay&) = default;

 private:
  ForwardDecay(double lambda) : lambda_(lambda) {}
  double lambda_;
  double landmark_ = 0;
  bool anchored_ = false;
};

}  // namespace ebb
