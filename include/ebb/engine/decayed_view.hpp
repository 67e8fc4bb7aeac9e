#pragma once
// The all-time view and every "now" view: a Count-Min sketch and a top-K
// summary sharing one forward-decay clock (lambda = 0 for all-time, so it is
// the same code). Sketch, summary and total live in the clock's landmark
// coordinates; time passing touches nothing, and a rebase scales them all
// together before exp() could overflow.
//
// The summary is the augmented candidate heap (held keys counted exactly,
// outside the sketch), or Space-Saving beside a sketch that counts every
// event (config "summary": "space_saving").
#include <cstdint>
#include <variant>
#include <vector>

#include "ebb/decay/forward_decay.hpp"
#include "ebb/decay/weight_scaler.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "ebb/engine/view.hpp"
#include "ebb/sketch/augmented_heap/augmented_heap.hpp"
#include "ebb/sketch/count_min/count_min.hpp"
#include "ebb/sketch/space_saving/space_saving.hpp"

namespace ebb::engine {

class DecayedView final : public View {
 public:
  DecayedView(ViewSpec spec, const NamespaceConfig& config);

  const ViewSpec& spec() const noexcept override { return spec_; }
  void apply(const PreparedBatch& batch) override;
  TopKAnswer top(std::size_t k, double now) const override;
  PointAnswer point(std::string_view item, std::uint64_t hash, double now) const override;
  std::size_t memory_bytes() const noexcept override;
  void serialize_state_into(BinaryWriter& w) const override;
  void restore_state(std::string_view blob) override;

  const ForwardDecay& clock() const noexcept { return clock_; }
  std::uint64_t rebases() const noexcept { return rebases_; }

 private:
  Accuracy accuracy(double read_factor) const;
  double total() const noexcept;
  void rebase(double t);

  ViewSpec spec_;
  ForwardDecay clock_;
  WeightScaler scaler_;
  CountMin sketch_;
  std::variant<AugmentedHeap, SpaceSaving> summary_;
  double first_time_ = 0;  // for the all-time rate
  std::uint64_t rebases_ = 0;
  std::vector<double> scaled_;  // scratch: weights in landmark coordinates (decayed views only)
};

}  // namespace ebb::engine
