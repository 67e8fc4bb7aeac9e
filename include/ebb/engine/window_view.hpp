#pragma once
// "Top K in the last hour": one exact-boundary sliding window over the
// namespace's TimeRings (shared by all its windows; one of them feeds it).
//
// An answer sums the buckets of the window's cover:
// - candidates are the union of the buckets' candidate heaps, ranked by an
//   upper bound: the summed sketches' estimate, or the heaps' values where
//   they hold the item plus the other heaps' thresholds, if tighter;
// - the best 2k are then counted bucket by bucket: per bucket the tightest
//   of its sketch's minimum, its heap's value or threshold, summed (never
//   under the true count, and at most e / width times the covered total
//   above it at the stated confidence, as one sketch over the window);
// - lower bounds are the weights the buckets' heaps saw exactly.
// The closed buckets' sum is cached until the cover or a closed bucket
// changes (once per bucket period), so a query costs a few heads.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ebb/engine/time_rings.hpp"
#include "ebb/engine/view.hpp"

namespace ebb::engine {

class WindowView final : public View {
 public:
  // `feeds`: this view counts batches into the rings (exactly one view per
  // rings does; the others only read them).
  WindowView(ViewSpec spec, std::shared_ptr<TimeRings> rings, bool feeds);

  const ViewSpec& spec() const noexcept override { return spec_; }
  void apply(const PreparedBatch& batch) override;
  void advance_to(double t) override;
  TopKAnswer top(std::size_t k, double now) const override;
  PointAnswer point(std::string_view item, std::uint64_t hash, double now) const override;
  std::optional<TopKAnswer> top_at(std::size_t k, double as_of) const override;
  std::optional<PointAnswer> point_at(std::string_view item, std::uint64_t hash, double as_of) const override;
  std::size_t memory_bytes() const noexcept override;
  std::uint64_t dropped() const noexcept override { return rings_->dropped(spec_.window); }
  void serialize_state_into(BinaryWriter& w) const override;
  FrozenState freeze_state() const override;
  void restore_state(std::string_view blob) override;

  // A resize of the namespace's windows (TimeRings::widen): done by the
  // view that feeds the rings, nothing for the others (they share them).
  TimeRings::Widening prepare_widen(std::uint32_t width) const { return feeds_ ? rings_->prepare_widen(width) : TimeRings::Widening{}; }
  void commit_widen(TimeRings::Widening&& widening) noexcept {
    if (feeds_) rings_->commit_widen(std::move(widening));
  }

  const TimeRings& rings() const noexcept { return *rings_; }
  bool feeds() const noexcept { return feeds_; }

  // A sum over some buckets: the summed sketch and the union of their
  // candidates, best first, at most `keep` of them.
  struct Candidate {
    std::string key;
    std::uint64_t hash = 0;
    double lower = 0;  // weight the buckets' heaps saw exactly
    double upper = 0;  // over these buckets
  };
  struct Sum {
    CountMin sketch;
    std::vector<Candidate> candidates;
    // A bound on the true count, over these buckets, of an item not among
    // the candidates.
    double outside = 0;
    explicit Sum(const CountMinShape& shape, UpdatePolicy policy) : sketch(shape, policy) {}
  };

 private:
  TopKAnswer answer(const TimeRings::Cover& cover, std::size_t k, double as_of, const Sum& closed) const;
  PointAnswer point_answer(const TimeRings::Cover& cover, std::string_view item, std::uint64_t hash, double as_of) const;
  // "Now" for a live answer: never before the newest event.
  double live(double now) const noexcept;
  // The closed buckets' sum for this cover: the cached one while neither
  // changed.
  std::shared_ptr<const Sum> closed_sum(const TimeRings::Cover& cover) const;
  // An answer's view, boundaries and accuracy for this cover.
  template <typename Answer>
  Answer describe(const TimeRings::Cover& cover, double as_of) const;

  ViewSpec spec_;
  std::shared_ptr<TimeRings> rings_;
  bool feeds_;

  struct Cache {
    struct Key {
      std::uint64_t serial;
      std::uint64_t late_events;
      friend bool operator==(const Key&, const Key&) = default;
    };
    std::vector<Key> buckets;
    std::shared_ptr<const Sum> sum;
  };
  mutable std::mutex cache_mutex_;  // queries run concurrently under a shared lock
  mutable Cache cache_;
};

}  // namespace ebb::engine
