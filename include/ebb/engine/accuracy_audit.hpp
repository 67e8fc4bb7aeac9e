#pragma once
// The accuracy self-audit (seed 002, section 7: "is the sketch still good
// enough?"). A namespace keeps exact counts for a few of its items beside
// its views and compares them with what the views answer:
//
// - a deterministic sample: an item is sampled when a mix of its key hash
//   falls under a threshold that only ever halves (whenever more than
//   `audit_sample` items would pass), so which items are sampled depends on
//   the set of items alone: every replay and every replica picks the same
//   ones, and a sampled item has been sampled since its first event;
// - each view's current top `audit_top`, from the pass that finds it listed
//   (its error is then measured over the time it has been tracked: what the
//   view's estimate grew by, less what the item truly counted since).
//
// The error of an estimate is |estimate - base - exact|: `base` is the
// view's estimate when tracking began (decayed like the counts; 0 for an
// item tracked since its first event) and `exact` what the item counted
// since. It is reported absolute, relative to the view's stated bound
// epsilon x total (the tail's small counts cannot drown that), and, for the
// top items, as a share of their count (what an SLA such as "1% for the
// top 10" means). A window compares an item tracked part of the time only
// once the window starts after tracking began.
//
// The audit only measures: it never changes what the views count or answer.
// Single-writer like the views: the namespace's owner serialises observe()
// and pass() against reads.
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ebb/core/binary_io.hpp"
#include "ebb/decay/forward_decay.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "ebb/engine/prepared_batch.hpp"
#include "ebb/engine/view.hpp"

namespace ebb::engine {

// Relative errors (|error| / (epsilon x total)) observed by every
// comparison since the process started: Prometheus' ebb_audit_relative_error.
struct AuditHistogram {
  static constexpr std::array<double, 9> kBounds = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10};
  std::array<std::uint64_t, kBounds.size() + 1> counts{};  // per bucket (not cumulative); the last: above 10
  std::uint64_t count = 0;
  double sum = 0;  // of the finite observations
  void observe(double relative) noexcept;
  void add(const AuditHistogram& other) noexcept;
};

// One view's figures from the last audit pass.
struct ViewAudit {
  double as_of = std::numeric_limits<double>::quiet_NaN();  // the pass's "now" (NaN: no pass yet)
  bool passed() const noexcept { return as_of == as_of; }
  std::uint64_t compared = 0;       // estimates compared (sampled and top items)
  std::uint64_t outside_bound = 0;  // of them, off by more than epsilon x total
  double max_error = 0;             // the largest |error|
  double max_relative_error = 0;    // the largest |error| / (epsilon x total) (inf: an error where the bound is 0)
  double error_bound = 0;           // epsilon x total at the pass (the largest, for a cluster's partitions)
  std::uint64_t top_compared = 0;   // of them, the view's top items
  double top_max_error_share = 0;   // the largest |error| / count among the top items
  // With an SLA (audit_sla) the top items' error share passed: by how much
  // the sketch should widen to meet it (a power of two >= 2; 0: met, no
  // SLA, or nothing to widen). Error shrinks about as 1/width (each row's
  // collisions carry total / width), so width x share / SLA, rounded up.
  std::uint32_t suggested_growth = 0;
  AuditHistogram histogram;  // every comparison since start
  // A cluster's partitions' figures together (sums, the largest maxima).
  void add(const ViewAudit& part);
};

// The sketch width a view of `c` counts with (windows: their buckets'),
// 0 for exact counting; and the width a view's audit suggests: its growth
// applied to that width, up to the widest sketch there is (a cluster
// partition grows its share, the namespace's width grows alike), 0 for none.
std::uint32_t audited_width(const NamespaceConfig& c, const ViewSpec& view) noexcept;
std::uint64_t suggested_width(const NamespaceConfig& c, const ViewSpec& view, const ViewAudit& a) noexcept;

// The namespace-wide part: what is tracked.
struct AuditSummary {
  bool enabled = false;
  std::uint64_t sampled_items = 0;  // items in the hash sample
  std::uint64_t top_items = 0;      // items tracked because a view lists them (and not sampled)
  double sample_share = 1;          // the share of all items the threshold admits (1, 1/2, 1/4 ...)
  // True when the audit has run since the namespace's first event, so every
  // sampled item is tracked since its first (false after a state of an
  // older ebb was loaded, or a merge).
  bool from_start = true;
  void add(const AuditSummary& part);
};

class AccuracyAudit {
 public:
  // The views must be the namespace's (the audit keeps one record per view,
  // in their order). `from_start`: no event counted yet.
  AccuracyAudit(const NamespaceConfig& config, std::span<const std::unique_ptr<View>> views, bool from_start);
  // Not copied: its slots point into its own map.
  AccuracyAudit(const AccuracyAudit&) = delete;
  AccuracyAudit& operator=(const AccuracyAudit&) = delete;

  // Whether a configuration is audited at all.
  static bool enabled(const NamespaceConfig& config) noexcept { return config.audit_sample > 0 || config.audit_top > 0; }
  // What an audit of this configuration holds at most with keys of
  // `key_bytes` (the service plans memory with keys of typical length, as
  // it does for the candidates).
  static std::size_t planned_bytes(const NamespaceConfig& config, std::size_t key_bytes);

  // Counts a batch's tracked items exactly. Call before the views count
  // the batch: an item admitted now takes their estimates before it as its
  // base. `now`: the namespace's "now" before the batch; `newest`: its
  // newest event time before it (NaN: none).
  void observe(const PreparedBatch& batch, std::span<const std::unique_ptr<View>> views, double now, double newest) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const std::uint64_t h = batch.hashes[i];
      if (!maybe_tracked(h) && sample_key(h) >= threshold_) [[likely]]
        continue;
      observe_event(batch, i, views, now, newest);
    }
  }

  // A pass: each view's top items tracked from now on (those that left
  // every list and are not sampled let go), then every tracked item
  // compared in every view at `now` (but those taken in at this pass,
  // which have nothing to compare yet). Returns the views whose SLA verdict
  // changed (their index), for the caller to log.
  struct SlaChange {
    std::size_t view = 0;
    bool breached = false;
  };
  std::vector<SlaChange> pass(std::span<const std::unique_ptr<View>> views, double now, double newest);

  // A PATCH's new audit_sla: the next pass judges by it.
  void set_sla(std::optional<double> sla) noexcept { sla_ = sla; }
  // A resize (Namespace::reconfigure) made the views of `config` count
  // wider from now: every tracked item is compared from now on (its base
  // each view's estimate now, its exact counts afresh; windows once they
  // start after now), so the next verdicts judge the new width, not the
  // error counted before. The last pass's figures and SLA verdicts are
  // dropped (the histogram stays); from_start becomes false.
  void restart(const NamespaceConfig& config, std::span<const std::unique_ptr<View>> views, double now, double newest);

  const std::vector<ViewAudit>& report() const noexcept { return report_; }
  AuditSummary summary() const;
  std::size_t memory_bytes() const noexcept;

  // The tracked items and the sample's threshold (the last pass's figures
  // are not kept: the next pass makes them again). restore_state() throws
  // FormatError when the blob does not fit these views; unchanged then.
  void serialize_state_into(BinaryWriter& w) const;
  void restore_state(std::string_view blob);

  // The exact count the audit holds for an item in a view at `now`
  // (nullopt: not tracked), and whether it is tracked since its first
  // event: for tests and the curious.
  std::optional<double> exact(std::string_view item, std::size_t view, double now) const;

 private:
  struct PerView {
    double base = 0;       // the view's estimate when tracking began
    double base_time = 0;  // the namespace's "now" then (decays the base)
    double exact = 0;      // counted since: a sum, or in the view's forward-decay coordinates
    bool top = false;      // in the view's top at the last pass
    std::vector<std::pair<std::int64_t, double>> buckets;  // windows: weight per period, oldest first
  };
  struct Tracked {
    std::uint64_t hash = 0;  // hash_key(key)
    std::string key;
    bool sampled = false;
    bool complete = false;  // since its first event: no base, every window compared
    double since = 0;       // the newest event time when tracking began (complete: unused)
    std::vector<PerView> views;
  };
  struct ViewRule {
    ViewSpec::Kind kind = ViewSpec::Kind::all_time;
    ForwardDecay clock = ForwardDecay::none();  // decayed views: the exact counts' landmark
    double half_life = 0;                       // decayed views: the view's, as configured
    double window = 0;
    double granularity = 1;  // windows: the period of an item's buckets
    std::int64_t periods = 0;  // windows: the most bucket periods an item keeps
    double inverse = 1;        // windows: 1 / granularity
    std::uint32_t width = 0;  // the sketch width the view counts with (0: exact counting)
    // Decayed views: the last event time's weight factor (a batch's events
    // often share a time); NaN: none.
    double factor_time = std::numeric_limits<double>::quiet_NaN();
    double factor = 1;
  };

  static std::uint64_t sample_key(std::uint64_t hash) noexcept {
    // A mix of the key hash (the sketch's rows use the hash's own bits).
    hash ^= hash >> 31;
    hash *= 0x7fb5d329728ea185ULL;
    hash ^= hash >> 27;
    return hash;
  }
  // A 4096-bit filter of the tracked items' hashes: most events are of
  // untracked items and stop at one bit test.
  static constexpr std::size_t kFilterBits = 4096;
  bool maybe_tracked(std::uint64_t hash) const noexcept {
    const std::size_t bit = hash & (kFilterBits - 1);
    return (filter_[bit / 64] >> (bit % 64)) & 1;
  }
  // Tracked items by the low bits of their hash: one load finds an event's
  // record (a slot two items share is marked crowded: the map then).
  static constexpr std::size_t kSlots = 1024;
  Tracked* find(std::uint64_t hash) noexcept {
    const std::size_t s = hash & (kSlots - 1);
    if (Tracked* t = slots_[s]; t && t->hash == hash) return t;
    if ((crowded_[s / 64] >> (s % 64)) & 1) {
      const auto it = tracked_.find(hash);
      return it == tracked_.end() ? nullptr : &it->second;
    }
    return nullptr;
  }
  // One item into the filter and the slots; all of them anew (after some
  // were let go of).
  void index(Tracked& t) noexcept;
  void rebuild_index() noexcept;
  void observe_event(const PreparedBatch& batch, std::size_t i, std::span<const std::unique_ptr<View>> views, double now, double newest);
  Tracked& admit(std::string_view key, std::uint64_t hash, bool complete, std::span<const std::unique_ptr<View>> views, double now,
                 double newest);
  void shrink_sample();
  void count(Tracked& t, std::size_t view, double time, double weight);
  // An item's exact count in view v at `now`, and its base decayed to then;
  // nullopt when the view cannot compare it (a window that began before
  // tracking did).
  std::optional<std::pair<double, double>> reading(const Tracked& t, std::size_t v, double now, double window_start, double window_end,
                                                   double newest) const;
  void prune_buckets(double newest);

  std::uint32_t sample_size_;      // audit_sample
  std::uint32_t top_size_;         // audit_top
  std::uint32_t max_item_bytes_;
  std::optional<double> sla_;      // audit_sla
  std::vector<ViewRule> rules_;
  std::unordered_map<std::uint64_t, Tracked> tracked_;  // by key hash (a 64-bit collision: the first key keeps it)
  std::uint64_t threshold_ = ~std::uint64_t{0};          // sampled: sample_key(hash) < threshold_
  std::uint32_t halvings_ = 0;
  std::uint64_t sampled_ = 0;
  bool from_start_ = true;
  std::array<std::uint64_t, kFilterBits / 64> filter_{};
  std::array<Tracked*, kSlots> slots_{};  // into tracked_'s nodes (stable until erased)
  std::array<std::uint64_t, kSlots / 64> crowded_{};
  std::vector<ViewAudit> report_;
  std::vector<bool> breached_;  // per view: the SLA verdict of the last pass
};

}  // namespace ebb::engine
