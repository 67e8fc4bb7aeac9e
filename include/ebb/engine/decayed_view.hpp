#pragma once
// The all-time view and every "now" view: a Count-Min sketch and a top-K
// summary sharing one forward-decay clock (lambda = 0 for all-time, so it is
// the same code). Sketch, summary and total live in the clock's landmark
// coordinates; time passing touches nothing, and a rebase scales them all
// together before exp() could overflow.
#include <cstdint>
#include <variant>
#include <vector>

#include "ebb/decay/forward_decay.hpp"
#include "ebb/decay/weight_scaler.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "ebb/engine/view.hpp"
#include "ebb/sketch/candidate_heap/candidate_heap.hpp"
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
  void rebase(double t);

  ViewSpec spec_;
  ForwardDecay clock_;
  WeightScaler scaler_;
  CountMin sketch_;
  std::variant<CandidateHeap, SpaceSaving> summary_;
  double first_time_ = 0;  // for the all-time rate
  std::uint64_t rebases_ = 0;
  std::vector<double> scaled_;     // scratch: weights in landmark coordinates (decayed views only)
  std::vector<double> estimates_;  // scratch: CMS estimates after each update
  std::vector<std::uint32_t> offered_;  // scratch: the events of a chunk the candidate heap may take
};

}  // namespace ebb::engine
