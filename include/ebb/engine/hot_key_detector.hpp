#pragma once
// Hot keys (seed 004, notes/algorithms.md section 7): which keys' rate is at
// or above a threshold, in events/s, with bounded memory whatever the number
// of keys.
//
// The rate is lambda x S, S a key's exponentially decayed count with the
// detector's own half-life h (lambda = ln 2 / h): for a key arriving at a
// steady r events/s, lambda x S tends to r. S comes from a decayed view's
// conservative-update sketch, which never under-counts, so a key whose true
// rate reaches the threshold is never missed while the candidates hold every
// key that could (complete()); a collision can only make a key look hotter.
// There is no window boundary, hence no cliff: InferaDB's rotating pair of
// windows under-counts a key active across a rotation by up to half.
//
// Detection delay: a key that jumps from nothing to m x threshold reaches
// the threshold after h x log2(m / (m - 1)): one half-life at 2x (10 s at
// the default), less the further above it is.
//
// Hysteresis: a key turns hot when its rate reaches the threshold and cools
// only when it falls under cool_fraction x threshold, so a key sitting at
// the threshold does not flap, as long as the band is wide against the
// rate's noise: for Poisson arrivals sd(rate) ~ sqrt(threshold x lambda / 2),
// so the band is 0.34 x sqrt(threshold x half_life) standard deviations
// (10 at 100/s and 10 s; 1 at 1/s and 10 s, where it does flap).
//
// Single-writer like every view: the namespace's owner serialises apply()
// and evaluate() against reads.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ebb/engine/decayed_view.hpp"

namespace ebb::engine {

struct HotKeyOptions {
  double threshold = 100;      // events/s
  double half_life = 10;       // seconds: the detector's own time constant
  double cool_fraction = 0.8;  // a hot key cools under this x threshold
};

struct HotKey {
  std::string key;
  double rate = 0;   // events/s as of the last evaluation (an upper bound: the sketch never under-counts)
  double since = 0;  // when it turned hot
};

struct HotKeyEvent {
  bool hot = true;  // false: it cooled
  HotKey key;
};

class HotKeyDetector {
 public:
  // The sketch shape and the candidates come from the namespace's
  // configuration. InvalidArgument for a threshold, half-life or
  // cool_fraction out of range.
  HotKeyDetector(const NamespaceConfig& config, HotKeyOptions options);

  const HotKeyOptions& options() const noexcept { return options_; }
  // Run-time change (PATCH); the keys' hot/cool state is re-judged at the
  // next evaluation against the new threshold.
  void set_threshold(double threshold);

  void apply(const PreparedBatch& batch) { view_.apply(batch); }

  // Judges every candidate and every hot key at `now` (not before the
  // previous evaluation): the keys that turned hot (since = now) and those
  // that cooled, hottest first, then the cooled by key.
  std::vector<HotKeyEvent> evaluate(double now);

  // As of the last evaluation: the hot keys, highest rate first (ties by
  // key; at most `candidates` of them), and whether the list is complete:
  // false when a key outside the candidates could have reached the
  // threshold (the candidates are too few for this threshold and stream),
  // or when more keys were hot than the list holds.
  std::vector<HotKey> hot() const;
  bool complete() const noexcept { return complete_; }
  // A key's rate as of the last evaluation, as evaluate() judges it (the
  // sketch's upper bound: never under the true rate).
  double rate_of(std::string_view key) const;
  double evaluated_at() const noexcept { return evaluated_at_; }

  std::size_t memory_bytes() const noexcept;

  // Checkpoints: the counts, the hot keys and the last evaluation. The
  // threshold is configuration (it is not stored); the half-life is, and
  // restore_state() refuses (FormatError, unchanged) the state of a
  // detector with another half-life or sketch.
  void serialize_state_into(BinaryWriter& w) const;
  void restore_state(std::string_view blob);

 private:
  static void validate(const HotKeyOptions& options);

  HotKeyOptions options_;
  double lambda_;
  std::uint32_t candidates_;
  NamespaceConfig config_;  // the sketch's shape, for restore_state()
  DecayedView view_;
  std::map<std::string, HotKey, std::less<>> hot_;
  bool complete_ = true;
  double evaluated_at_ = 0;
};

}  // namespace ebb::engine
