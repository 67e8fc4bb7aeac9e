#pragma once
// The event-time store behind a namespace's window views: hierarchical
// bucket rings (1 s -> 10 s -> 1 min -> 10 min -> 1 h -> 1 d, seed 002).
// A bucket holds one period of event time: a small Count-Min sketch and a
// candidate heap. A conservative-update sketch cannot be subtracted, so a
// window is a sum of buckets (notes/algorithms.md section 4).
//
// - Ingest: an event goes to the finest level's newest bucket (its head)
//   and to the top level's. When a head below the top closes it is added
//   into its parent: one sketch merge per bucket period, so an event costs
//   two sketch updates whatever the number of windows. The top level,
//   which holds most of a long window, counts with conservative update
//   over its whole period instead of summing its children's over-counts.
// - Cover: a window [T - W, T] is the sum of whole buckets, the coarsest that
//   fit, each from a level that still holds it. Its start is exact to the
//   granularity of the bucket at that end, and the answer says so (the
//   rings never pretend to a boundary they do not have).
// - Late events land in their bucket while some level still holds it, and
//   in each parent that bucket was already added into; older ones are
//   counted as unplaced.
// - Every level keeps the buckets its windows need plus a quarter, so "the
//   window as it was at T" is answered from memory while T is that recent.
//
// Single-writer like every view: the namespace's owner serialises apply()
// against reads.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/engine/carried_error.hpp"
#include "ebb/engine/prepared_batch.hpp"
#include "ebb/sketch/candidate_heap/candidate_heap.hpp"
#include "ebb/sketch/count_min/count_min.hpp"

namespace ebb::engine {

struct RingLevel {
  double granularity = 1;  // seconds per bucket (whole)
  std::uint32_t slots = 0;  // buckets kept
  friend bool operator==(const RingLevel&, const RingLevel&) = default;
};

// The granularity a window's start is exact to: the coarsest of the ladder
// that still gives the window at least 24 buckets (1m -> 1 s, 1h -> 1 min,
// 1d and 7d -> 1 h). Finer levels do not reach back that far, so the bucket
// holding a live window's start is of this level.
double window_granularity(double window_seconds);
// The levels a set of windows needs, finest first.
std::vector<RingLevel> plan_ring_levels(std::span<const double> windows);

class TimeRings {
 public:
  struct Bucket {
    Bucket(std::int64_t index, const CountMinShape& shape, UpdatePolicy policy, std::uint32_t candidates)
        : index(index), sketch(shape, policy), heap(candidates) {}
    std::int64_t index;  // period: [index * granularity, (index + 1) * granularity)
    CountMin sketch;
    CandidateHeap heap;
    std::uint64_t late_events = 0;  // counted after it closed: caches of sums over it compare this
    // What of sketch.total() was counted at a narrower width (before a
    // resize: a head widened in place, a narrower child added in), and
    // that part's error bound.
    CarriedError carried;
    // The bucket's error bound at its own width (its carried part's own).
    double error_bound() const noexcept { return carried.bound(sketch.shape().epsilon(), sketch.total()); }
    // Unique per bucket object and content generation in these rings (a
    // new bucket, a reused one, a copy made before a write): with
    // late_events, what a cache of sums over buckets is keyed by (an
    // address alone may be reused once a frozen copy lets go of a bucket).
    std::uint64_t serial = 0;
  };

  // The buckets whose sum holds exactly the events in [start, end].
  struct Cover {
    bool reached = false;  // false: the rings hold no stretch ending there (too old)
    double start = 0;
    double end = 0;
    double granularity = 0;  // the coarsest bucket at either boundary
    // Closed buckets change only by late events; open ones (the heads)
    // with every event.
    std::vector<const Bucket*> closed;
    std::vector<const Bucket*> open;
  };

  TimeRings(std::vector<double> windows, CountMinShape bucket_shape, UpdatePolicy policy, std::uint32_t candidates);
  // A copy shares every bucket with the original, copy-on-write: whichever
  // side writes a bucket the other still holds writes its own copy. A
  // checkpoint takes one under the namespace's lock (a few hundred pointers)
  // and serialises it after releasing the lock, so ingest does not wait on
  // tens of MiB being written out.
  TimeRings(const TimeRings&) = default;
  TimeRings& operator=(const TimeRings&) = delete;

  const std::vector<double>& windows() const noexcept { return windows_; }
  const std::vector<RingLevel>& levels() const noexcept { return levels_; }
  // Buckets below the top level; the top level's are twice as wide (it
  // holds most of a long window). Answers state the narrower bound. Since
  // a widen(), older buckets may be narrower.
  const CountMinShape& bucket_shape() const noexcept { return shape_; }
  const CountMinShape& shape_of(std::size_t level) const noexcept { return level == top() && top() > 0 ? top_shape_ : shape_; }
  static CountMinShape top_shape(const CountMinShape& bucket_shape);
  std::uint32_t candidates() const noexcept { return candidates_; }

  // A resize (a logged configuration change, so every replay and replica
  // makes it at the same point): buckets opened from now on are `width`
  // wide (a power-of-two multiple of the width now; the top level's twice
  // that), and the heads are widened in place. Closed buckets keep their
  // width until they leave the rings: a window's sum spreads them to its
  // width, and its stated bound counts each bucket at its own epsilon.
  // InvalidArgument (unchanged) for any other width. In two steps for a
  // caller that must not be left half-changed: prepare (what can fail:
  // the checks, every allocation), then commit (cannot fail).
  struct Widening {
    std::optional<CountMinShape> shape;  // none: nothing to do
    struct Head {
      std::size_t level;
      std::shared_ptr<Bucket> bucket;  // the head, or its copy when a frozen copy shares it
      CountMin sketch;                 // its widened sketch
    };
    std::vector<Head> heads;
  };
  Widening prepare_widen(std::uint32_t width) const;
  void commit_widen(Widening&& widening) noexcept;
  void widen(std::uint32_t width) { commit_widen(prepare_widen(width)); }

  void apply(const PreparedBatch& batch);
  // Turns the heads as an event at `t` would, counting nothing: the rings
  // of a cluster partition, which holds some of a namespace's events, keep
  // the heads (and so the reach back in time) of a single node's.
  void advance_to(double t);

  // The cover of the window of `window` seconds as it was at `as_of`. While
  // as_of is at or after the newest event counted, the newest buckets count
  // up to as_of itself; before that the end is rounded down to a bucket
  // boundary so no event after as_of is in the answer.
  Cover cover(double window, double as_of) const;

  double newest() const noexcept { return newest_; }  // -infinity before any event
  // Events older than the window when they arrived (counted in the other views).
  std::uint64_t dropped(double window) const noexcept;
  // Late events older than every level's oldest bucket, and events past
  // kMaxTime: in no window.
  std::uint64_t unplaced() const noexcept { return unplaced_; }

  // Event times from here on are not placed (2^40 s, year 36812): every
  // bucket boundary stays an exact double and an exact int64 index, and a
  // millisecond timestamp cannot make a window walk 10^12 buckets.
  static constexpr double kMaxTime = 1099511627776.0;

  std::size_t memory_bytes() const noexcept;
  std::string serialize() const;
  void serialize_into(BinaryWriter& w) const;  // the same bytes, appended in place
  // Into rings built from the same configuration; FormatError otherwise
  // (unchanged then).
  void restore(std::string_view blob);

 private:
  struct Level {
    RingLevel plan;
    std::int64_t ratio = 1;  // this level's buckets per parent bucket
    std::int64_t head = kNoHead;
    std::vector<std::shared_ptr<Bucket>> slots;  // shared with frozen copies until written
  };
  static constexpr std::int64_t kNoHead = INT64_MIN;

  std::size_t top() const noexcept { return rings_.size() - 1; }
  std::int64_t index_at(std::size_t level, double t) const noexcept;
  // Whether a level still holds (or will hold) the bucket of this index.
  bool holds(std::size_t level, std::int64_t index) const noexcept;
  const Bucket* find(std::size_t level, std::int64_t index) const noexcept;
  // The bucket of (level, index) to write into: opened (a new one, or the
  // slot's older bucket cleared) if the slot holds another, and made this
  // rings' own first if a frozen copy shares it.
  Bucket& open_bucket(std::size_t level, std::int64_t index);
  void advance(std::size_t level, std::int64_t index);
  void add_late(std::string_view item, std::uint64_t hash, double weight, double t);
  void add_run(Bucket& head, const PreparedBatch& batch, std::size_t begin, std::size_t end);
  // Appends the buckets holding the events of (level, index); a head holds
  // the heads below it too.
  void collect(std::size_t level, std::int64_t index, Cover& cover) const;
  // Steps back from `cursor` to `start` by whole buckets; false if a stretch
  // is held by no level. The cover's granularity becomes at least that of
  // the bucket its start lies in (`start_granularity` if none is taken).
  bool walk_back(double cursor, double start, Cover& cover, double start_granularity) const;

  std::vector<double> windows_;
  CountMinShape shape_;
  CountMinShape top_shape_;
  UpdatePolicy policy_;
  std::uint32_t candidates_;
  std::vector<RingLevel> levels_;
  std::vector<Level> rings_;
  std::vector<std::uint64_t> dropped_;  // per window
  std::uint64_t unplaced_ = 0;
  double newest_;
  std::uint64_t next_serial_ = 1;
  std::vector<double> estimates_;       // scratch
  std::vector<std::uint32_t> offered_;  // scratch
};

}  // namespace ebb::engine
