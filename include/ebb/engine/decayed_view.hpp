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
#include <span>
#include <variant>
#include <vector>

#include "ebb/decay/forward_decay.hpp"
#include "ebb/decay/weight_scaler.hpp"
#include "ebb/engine/carried_error.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "ebb/engine/view.hpp"
#include "ebb/sketch/augmented_heap/augmented_heap.hpp"
#include "ebb/sketch/count_min/count_min.hpp"
#include "ebb/sketch/space_saving/space_saving.hpp"

namespace ebb::engine {

// What a view of a memory budget holds: its sketch and candidates.
struct ViewSizing {
  CountMinShape sketch;
  std::uint32_t candidates = 0;
};

class DecayedView final : public View {
 public:
  DecayedView(ViewSpec spec, const NamespaceConfig& config);

  // The bytes a view of this shape holds before any key bytes (exactly
  // memory_bytes() of a new view with the augmented heap).
  static std::size_t reserved_bytes(const CountMinShape& sketch, std::uint32_t candidates) noexcept;
  // The shape of a view of `bytes` all in: depth 3, the widest power of
  // two whose counters take at most 3/8 of the budget, then as many
  // candidates (at least k) as leave a fifth of the rest for key bytes
  // (keys past 15 bytes live outside their entries). Throws
  // InvalidArgument ("memory: ...") when k candidates cannot fit.
  static ViewSizing fit_budget(std::uint64_t bytes, std::uint32_t k);
  static constexpr std::uint64_t kMaxMemory = std::uint64_t{1} << 30;

  const ViewSpec& spec() const noexcept override { return spec_; }
  void apply(const PreparedBatch& batch) override;
  TopKAnswer top(std::size_t k, double now) const override;
  PointAnswer point(std::string_view item, std::uint64_t hash, double now) const override;
  bool held_scores(std::span<const std::string_view> items, std::span<const std::uint64_t> hashes,
                   std::span<std::optional<double>> scores) const noexcept override;
  bool held_at_least(double bound, std::size_t max_held, std::size_t max_found, std::vector<HeldScore>& out) const override;
  std::uint64_t evictions() const noexcept override;
  std::optional<double> evicted_bound() const noexcept override;
  std::uint64_t rescales() const noexcept override { return rebases_; }
  std::size_t memory_bytes() const noexcept override;
  void serialize_state_into(BinaryWriter& w) const override;
  void restore_state(std::string_view blob) override;

  // Makes this view, empty (logic_error otherwise), the weighted sum of
  // other views' counts (CMS.MERGE; weights finite, >= 0). All-time views
  // only (no time to reconcile), of this sketch's shape and policy, with
  // the augmented heap: InvalidArgument otherwise, and nothing changes.
  // Bounds stay honest (decayed_view_merge.cpp says how); where nothing
  // collides the sum is exact.
  void add_weighted(std::span<const DecayedView* const> sources, std::span<const double> weights);
  // add_weighted()'s checks alone, nothing summed: the same refusals.
  void check_summable(std::span<const DecayedView* const> sources, std::span<const double> weights) const;

  // A resize (a logged configuration change: every replay and replica
  // makes it at the same point): the sketch becomes `width` wide (a
  // power-of-two multiple of its width), each counter copied to the
  // columns that start with its index, so nothing under-counts and events
  // from now on collide width/old-width times less. What was counted before
  // keeps its bound: the stated error is the old epsilon times the total
  // then (decaying with it) plus the new epsilon times what came since.
  // InvalidArgument (unchanged) for another width, or a view sized by a
  // memory budget. In two steps for a caller that must not be left
  // half-changed: prepare (the checks and the allocation; nullopt: the
  // width it has), then commit (cannot fail).
  std::optional<CountMin> prepare_widen(std::uint32_t width) const;
  void commit_widen(std::optional<CountMin>&& wider) noexcept;
  void widen(std::uint32_t width) { commit_widen(prepare_widen(width)); }

  const ForwardDecay& clock() const noexcept { return clock_; }
  std::uint64_t rebases() const noexcept { return rebases_; }

 private:
  Accuracy accuracy(double read_factor) const;
  std::uint64_t key_budget() const noexcept;
  double total() const noexcept;
  void rebase(double t);

  ViewSpec spec_;
  std::uint64_t memory_ = 0;  // the configured budget (0: none)
  ForwardDecay clock_;
  WeightScaler scaler_;
  CountMin sketch_;
  std::variant<AugmentedHeap, SpaceSaving> summary_;
  double first_time_ = 0;  // for the all-time rate
  std::uint64_t rebases_ = 0;
  // What was counted before the last resize and its bound (landmark
  // coordinates, scaled by rebases).
  CarriedError carried_;
  std::vector<double> scaled_;  // scratch: weights in landmark coordinates (decayed views only)
};

}  // namespace ebb::engine
