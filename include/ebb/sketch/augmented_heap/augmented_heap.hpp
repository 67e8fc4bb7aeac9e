#pragma once
// The candidate heap in front of a Count-Min sketch, augmented (Roy, Khan,
// Alonso, "Augmented Sketch", SIGMOD 2016): a held key is counted here,
// exactly, and its events no longer touch the sketch.
//
// Why: with every event in the sketch, the heavy keys' weight sits in its
// cells and a cold key that shares a cell with a heavy one in every row is
// estimated as heavy (at 128 KiB, one such key in 200k: reported at
// hundreds of times its count). Taken out, the sketch holds the tail only,
// and its noise drops with it.
//
// Per held key (value = upper bound, aux = lower bound):
// - it enters with the sketch's estimate e after its event of weight w:
//   its count before that event was at most e - w (the sketch never
//   under-counts a key it holds all of);
// - from then on each event adds its weight to both bounds, so the lower
//   bound is the exact weight since entry and the upper bound is it plus
//   e - w;
// - when it is evicted (the minimum, when a key with a larger estimate
//   comes), its cells are raised to its upper bound (CountMin::raise_to),
//   so the sketch never under-counts it again.
// Every key not held has true count <= threshold() (the minimum, which only
// grows): it was not let in at its last event, or it was evicted, at or
// below the minimum of the time.
//
// A key budget (views sized by a memory budget) bounds the bytes held keys
// take outside their entries (keys past std::string's inline capacity):
// past it, the minimum leaves (written back, as above) until the newcomer
// fits, or the newcomer stays out. Every key that left or was kept out is
// bounded by floor(), and with long keys fewer than capacity() are held.
//
// The estimate reported is the lower bound plus an estimate of the count
// before entry: e - w less the sketch's noise at entry (the median estimate
// of keys never counted, probed at fixed hashes), within [0, e - w]. Ranks
// follow the estimate; hot-key detection and anything else that must never
// under-count uses the upper bound.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/core/binary_io.hpp"
#include "ebb/sketch/common/counted_item.hpp"
#include "ebb/sketch/common/keyed_min_heap.hpp"

namespace ebb {

class CountMin;
class CandidateHeap;

class AugmentedHeap {
 public:
  // Events apply() takes per call (its scratch holds that many).
  static constexpr std::size_t kMaxBatch = 128;

  static constexpr std::uint64_t kNoKeyBudget = UINT64_MAX;
  explicit AugmentedHeap(std::uint32_t capacity, std::uint64_t key_budget = kNoKeyBudget);

  std::uint32_t capacity() const noexcept { return heap_.capacity(); }
  std::uint32_t size() const noexcept { return heap_.size(); }
  // How many keys it holds at most now: capacity(), or once the key budget
  // has turned a key away, what it holds.
  std::uint32_t held_at_most() const noexcept { return budget_bound_ ? size() : capacity(); }
  std::uint64_t key_bytes() const noexcept { return key_bytes_; }
  // The bytes a heap of this capacity reserves, before any key bytes.
  static std::size_t reserved_bytes(std::uint32_t capacity) noexcept;
  // Weight counted by held keys, which the sketch's total() lacks.
  double absorbed() const noexcept { return absorbed_; }

  // Counts n <= kMaxBatch events (columns: keys, hashes, weights): a held
  // key's here, the others' in `sketch` (always the same sketch), each then
  // offered with its estimate. Keys held at the start of the call count
  // here; the others' events all go to the sketch, also when the key comes
  // in midway (its later events then count in both: noise, never a wrong
  // bound).
  void apply(CountMin& sketch, const std::string_view* keys, const std::uint64_t* hashes, const double* weights, std::size_t n);

  // A merge's way in (DecayedView::add_weighted): a key not held, whose
  // whole count is already in `sketch` (its estimate there is the upper
  // bound) and `lower` of it known exactly, competes for a place as an
  // event's key would, without counting anything.
  void admit(CountMin& sketch, std::string_view key, std::uint64_t hash, double lower);
  // Weight a merge brought that the sketch's total lacks (the sources'
  // held keys' counts since entry): total = sketch total + absorbed().
  void absorb(double weight) noexcept { absorbed_ += weight; }

  std::optional<CountedItem> find(std::string_view key, std::uint64_t hash) const;
  // Each key's estimate (what top() ranks by) into out[0..n), without
  // building its answer; nullopt for a key not held. Each lookup's table
  // line and entry are fetched some keys ahead: asked after a batch was
  // counted, one by one they missed cache (the sketch's counters had pushed
  // the heap out of L2 meanwhile).
  void held_estimates(const std::string_view* keys, const std::uint64_t* hashes, std::size_t n,
                      std::optional<double>* out) const noexcept;
  // Appends every held key whose estimate is at least `bound`, in no order,
  // by one pass over the heap (size() entries; held_estimates() looks up
  // one key in about the time the pass takes for eight). False, and the
  // pass cut short: more than `max_found` keys are that high.
  bool held_at_least(double bound, std::size_t max_found, std::vector<HeldScore>& out) const;
  // Keys let go of since this heap was made or read (in memory only).
  std::uint64_t evictions() const noexcept { return evictions_; }
  // Every key not held has true count <= this.
  double threshold() const noexcept { return heap_.bound_outside(floor_); }
  // At least the upper bound of every key let go of (or kept out), when it was.
  double floor() const noexcept { return floor_; }
  // Known from outside (a merge: the keys no merged summary held): every
  // key not held counts at most `bound`, or what threshold() says already.
  void raise_floor(double bound) noexcept { floor_ = std::max(floor_, bound); }
  // The k best by estimate (ties by key), and the bound on every other key.
  RankedList top(std::size_t k) const;

  void scale(double factor) noexcept;

  std::size_t memory_bytes() const noexcept;
  std::string serialize() const;
  void serialize_into(BinaryWriter& w) const;  // the same bytes, appended in place
  // With `capacity`, a blob of another capacity is refused before anything is allocated.
  static AugmentedHeap deserialize(std::string_view blob, std::optional<std::uint32_t> capacity = std::nullopt,
                                   std::uint64_t key_budget = kNoKeyBudget);
  // State written before augmentation (a candidate heap whose sketch counted
  // every event): its bounds carry over, and its estimate stays the upper
  // bound it reported.
  static AugmentedHeap from_candidate_heap(const CandidateHeap& old, std::uint64_t key_budget = kNoKeyBudget);

 private:
  void offer(CountMin& sketch, std::string_view key, std::uint64_t hash, double weight, double estimate);
  // A key not held, of upper bound `estimate` with `exact` of it known
  // exactly: held if there is room or it beats the minimum, else kept out.
  void place(CountMin& sketch, std::string_view key, std::uint64_t hash, double estimate, double exact);
  double before_entry(const CountMin& sketch, double upper);
  void let_go(CountMin& sketch, const KeyedMinHeap::Entry& out);
  void evict_min(CountMin& sketch);
  void count_keys() noexcept;
  double estimate(std::uint32_t slot) const noexcept;
  CountedItem report(std::uint32_t slot) const;

  KeyedMinHeap heap_;
  std::vector<double> base_;  // per slot: the estimated count before entry
  double absorbed_ = 0;
  double floor_ = 0;  // bound on the keys that left or were kept out (the minimum covers them while full)
  std::uint64_t key_budget_;
  std::uint64_t key_bytes_ = 0;  // held keys' bytes outside their entries
  bool budget_bound_ = false;     // the key budget has turned a key away
  std::uint64_t evictions_ = 0;
  // Scratch of apply(), for the events that go to the sketch.
  std::vector<std::uint64_t> miss_hashes_;
  std::vector<double> miss_weights_, miss_estimates_;
  std::vector<std::uint32_t> miss_events_;
  double noise_ = -1;  // the sketch's noise, probed once per apply() that lets a key in; < 0: not yet
};

}  // namespace ebb
