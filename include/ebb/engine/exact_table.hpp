#pragma once
// The records of a `"counting": "exact"` namespace (tidalDB's signal
// ledger, seed 003): one record per item, nothing estimated.
//
// A record holds, for every view of the namespace at once:
// - a running decayed score per half-life, in forward-decay coordinates
//   (one landmark per half-life for the whole table): an event's weight
//   depends on its own time only, so out-of-order events are exact and
//   time passing touches nothing;
// - its undecayed all-time count;
// - per window granularity (window_granularity(): minutes for 1h, hours
//   for 1d and 7d), a sparse ring of bucket counts, oldest first, holding
//   only the buckets the item had events in. A window's count is the sum
//   of the buckets its cover holds; velocity is that over the cover.
// Two aggregate records of the same shape sit beside the items: the total
// of everything counted and the sum of everything eviction took.
//
// Memory is bounded by max_items. A new item past it evicts the item with
// the lowest eviction key, taken from the namespace's longest memory: its
// score under the longest half-life; with no half-life, its all-time count;
// with windows only, its newest event time (least recently seen). Each
// order is time-invariant, so a binary min-heap keeps it. The evicted record
// is added into the evicted aggregate, and every answer says how much
// weight eviction took from its view: an item's upper bound is its count
// plus that (it may have been evicted before and lost at most all of it),
// and an item not held counted at most that. Nothing is dropped silently.
//
// Single-writer like every view: the namespace's owner serialises apply()
// against reads.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/core/binary_io.hpp"
#include "ebb/decay/forward_decay.hpp"
#include "ebb/decay/weight_scaler.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "ebb/engine/prepared_batch.hpp"
#include "ebb/engine/view_spec.hpp"

namespace ebb::engine {

class ExactTable {
 public:
  // One bucket of a record's ring: the weight its events in the period
  // [index * granularity, (index + 1) * granularity) carried.
  struct Bucket {
    std::int64_t index;
    double weight;
    friend bool operator==(const Bucket&, const Bucket&) = default;
  };
  // The buckets kept at one granularity: enough for the longest window of
  // that granularity and a quarter more, so "the window as it was at T" is
  // answered from memory while T is that recent.
  struct Ring {
    double granularity = 1;
    std::int64_t slots = 0;
    friend bool operator==(const Ring&, const Ring&) = default;
  };

  // How a view reads a record at one moment, computed once per answer (a
  // list, or one point) and then applied to each record with a multiply.
  struct Reading {
    ViewSpec::Kind kind = ViewSpec::Kind::all_time;
    std::size_t index = 0;  // the half-life's or the ring's
    double factor = 1;      // decayed: from forward coordinates to now
    std::int64_t lo = 0, hi = -1;  // window: the buckets of the cover
    double start = 0, end = 0;     // the cover's (window), or the counting's span
    double granularity = 0;        // window: boundaries exact to this
  };

  explicit ExactTable(const NamespaceConfig& config);

  // Counts a checked batch (times within the namespace's guards).
  void apply(const PreparedBatch& batch);

  std::size_t size() const noexcept { return live_; }
  std::uint64_t max_items() const noexcept { return max_items_; }
  std::uint64_t evictions() const noexcept { return evictions_; }
  // Events older than the window when they arrived (late), per window.
  std::uint64_t dropped(double window) const noexcept;
  const std::vector<double>& half_lives() const noexcept { return half_lives_; }
  const std::vector<Ring>& rings() const noexcept { return rings_; }

  // The reading of a view at `as_of`. `live`: as_of is now, every event
  // counted so far is in. For a past moment a window's end is rounded down
  // to its bucket boundary (no later event is in), and nullopt when its
  // buckets are no longer held; decayed and all-time views keep no past.
  std::optional<Reading> reading(const ViewSpec& view, double as_of, bool live) const;

  static constexpr std::uint32_t kNone = UINT32_MAX;
  // The record of a key (hash = hash_key(key)), or kNone.
  std::uint32_t find(std::string_view key, std::uint64_t hash) const noexcept;
  const std::string& key(std::uint32_t record) const noexcept { return keys_[record]; }
  // A record's count under a reading; the total counted, and the weight
  // eviction took, under the same.
  double value(std::uint32_t record, const Reading& r) const noexcept {
    switch (r.kind) {
      case ViewSpec::Kind::all_time: return all_time_[record];
      case ViewSpec::Kind::decayed: return scores_[record * half_lives_.size() + r.index] * r.factor;
      case ViewSpec::Kind::window: break;
    }
    return window_sum(ring_of(record, r.index), r);
  }
  double total(const Reading& r) const noexcept { return aggregate_value(total_, r); }
  double evicted(const Reading& r) const noexcept { return aggregate_value(evicted_, r); }
  // The decay rate of a half-life (1/s).
  double lambda(std::size_t half_life) const noexcept { return clocks_[half_life].lambda(); }
  // The earliest event time counted (the all-time view's start), +inf before any.
  double first_time() const noexcept { return first_time_; }
  // The newest event time counted, -inf before any.
  double newest_time() const noexcept { return newest_time_; }

  // The k records with the highest positive counts under a reading,
  // highest first, ties by key.
  std::vector<std::uint32_t> top(const Reading& r, std::size_t k) const;

  // The most the table can hold: max_items records, every key of
  // max_item_bytes, every ring full, every vector at its largest capacity
  // (what a namespace's memory budget is checked against at creation).
  static std::size_t bytes_max(const NamespaceConfig& config);
  std::size_t memory_bytes() const noexcept;

  void serialize_into(BinaryWriter& w) const;
  // Into a table built from the same configuration; FormatError otherwise
  // (unchanged then).
  void restore(std::string_view blob);

 private:
  struct Aggregate {
    double all_time = 0;
    std::vector<double> scores;             // per half-life, forward coordinates
    std::vector<std::vector<Bucket>> rings;  // per ring
  };

  const std::vector<Bucket>& ring_of(std::uint32_t record, std::size_t ring) const noexcept {
    return ring_buckets_[record * rings_.size() + ring];
  }
  static double window_sum(const std::vector<Bucket>& buckets, const Reading& r) noexcept;
  double aggregate_value(const Aggregate& a, const Reading& r) const noexcept;
  // The oldest bucket index a ring still holds.
  std::int64_t oldest(std::size_t ring) const noexcept { return heads_[ring] - rings_[ring].slots + 1; }
  // The same, or INT64_MIN before the ring's first event.
  std::int64_t kept_from(std::size_t ring) const noexcept { return heads_[ring] == INT64_MIN ? INT64_MIN : oldest(ring); }
  static void add_to_ring(std::vector<Bucket>& buckets, std::int64_t index, double weight, std::int64_t oldest);
  // Removes the buckets older than `oldest` (the ring has moved past them).
  static void drop_before(std::vector<Bucket>& buckets, std::int64_t oldest);

  std::uint32_t admit(std::string_view key, std::uint64_t hash);
  void evict_lowest();
  void rebase(std::size_t half_life, double t);

  // The open-addressing index: per cell the hash's high 32 bits and record
  // + 1 in the low 32, 0 empty.
  static std::uint64_t tag_of(std::uint64_t hash) noexcept { return hash & ~std::uint64_t{UINT32_MAX}; }
  void index_insert(std::uint32_t record);
  void index_erase(std::uint32_t record);
  void index_grow();

  // The eviction heap: record ids, lowest eviction key at the root.
  double evict_key(std::uint32_t record) const noexcept {
    if (evict_by_ < half_lives_.size()) return scores_[record * half_lives_.size() + evict_by_];
    return evict_by_ == kByAllTime ? all_time_[record] : newest_[record];
  }
  bool evicts_before(std::uint32_t a, std::uint32_t b) const noexcept;
  void heap_place(std::size_t pos, std::uint32_t record) noexcept {
    heap_[pos] = record;
    heap_pos_[record] = static_cast<std::uint32_t>(pos);
  }
  void sift_up(std::size_t pos) noexcept;
  void sift_down(std::size_t pos) noexcept;

  // Configuration (fixed at creation).
  std::vector<double> half_lives_;
  std::vector<Ring> rings_;
  std::vector<double> windows_;
  std::vector<std::size_t> window_ring_;  // per window: its ring
  std::uint64_t max_items_;
  // The longest half-life's index, kByAllTime, or kByNewest.
  static constexpr std::size_t kByAllTime = SIZE_MAX - 1, kByNewest = SIZE_MAX;
  std::size_t evict_by_;

  // Clocks and ring heads.
  std::vector<ForwardDecay> clocks_;
  std::vector<WeightScaler> scalers_;
  std::vector<std::int64_t> heads_;  // per ring: the newest bucket index (INT64_MIN before any)
  std::vector<std::uint64_t> dropped_;  // per window
  double first_time_;
  double newest_time_;
  std::uint64_t evictions_ = 0;

  // Records, one slot each (free slots are reused).
  std::vector<std::string> keys_;
  std::vector<std::uint64_t> hashes_;
  std::vector<double> all_time_;
  std::vector<double> newest_;
  std::vector<double> scores_;                   // slots x half-lives
  std::vector<std::vector<Bucket>> ring_buckets_;  // slots x rings
  std::vector<std::uint32_t> heap_pos_;
  std::vector<std::uint32_t> free_;
  std::size_t live_ = 0;

  std::vector<std::uint32_t> heap_;
  std::vector<std::uint64_t> index_;
  Aggregate total_, evicted_;
};

}  // namespace ebb::engine
