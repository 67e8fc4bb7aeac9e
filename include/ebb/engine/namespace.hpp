#pragma once
// A namespace: one configuration, its views, and the batch path both front
// ends share: validate the whole batch (all or nothing), hash every key
// once, feed every view, answer top-K and point queries with bounds.
//
// Single-writer: the owner (the CLI loop, or the server's per-namespace
// ownership) serialises apply() against queries.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ebb/core/clock.hpp"
#include "ebb/engine/accuracy_audit.hpp"
#include "ebb/engine/answers.hpp"
#include "ebb/engine/event.hpp"
#include "ebb/engine/hot_key_detector.hpp"
#include "ebb/engine/namespace_config.hpp"
#include "ebb/engine/prepared_batch.hpp"
#include "ebb/engine/trending.hpp"
#include "ebb/engine/view.hpp"

namespace ebb::engine {

using ebb::wall_clock_now;

// What is wrong with one event under a configuration's rules (item length,
// weight, time), or nullopt. The clock's future check is apply()'s alone.
// Front ends use it to attribute a problem to an input line before batching.
struct EventProblem {
  std::string field;
  std::string message;
};
std::optional<EventProblem> describe_event_problem(const Event& event, const NamespaceConfig& config);
// The hot path: a valid event costs a few compares, the message is built
// only for a bad one.
inline bool event_is_valid(const Event& e, const NamespaceConfig& config) noexcept {
  return !e.item.empty() && e.item.size() <= config.max_item_bytes && e.weight > 0 && e.weight <= NamespaceConfig::kMaxWeight &&
         e.time >= 0 && e.time < INFINITY;  // NaN fails every compare
}
inline std::optional<EventProblem> check_event(const Event& e, const NamespaceConfig& config) {
  if (event_is_valid(e, config)) [[likely]]
    return std::nullopt;
  return describe_event_problem(e, config);
}

struct ViewStats {
  ViewSpec view;
  std::size_t memory_bytes = 0;  // the first window view holds the windows' shared rings
  std::uint64_t dropped = 0;     // events older than the view's window when they arrived
  ViewAudit audit;               // the accuracy audit's last pass over this view
};

struct NamespaceStats {
  std::uint64_t events = 0;     // counted (after exclusions)
  std::uint64_t excluded = 0;   // dropped by the exclusion list
  std::uint64_t batches = 0;
  double weight = 0;            // undecayed total weight counted
  double newest_time = 0;       // newest event time seen (0 before any)
  std::size_t memory_bytes = 0;
  std::vector<ViewStats> views;
  AuditSummary audit;  // enabled false: the namespace is not audited

  // Adds what a disjoint part counted (a cluster partition's stats): counts,
  // weights and memory summed, the newest time the latest, views matched by
  // their spec (a part behind the others may lack a patch's new view).
  void add(const NamespaceStats& part);
  // Adds a part's accuracy audit figures alone (the summary and its views'
  // audits, matched by spec; a view this one lacks is left out).
  void add_audit(const NamespaceStats& part);
};

class Namespace {
 public:
  using Clock = std::function<double()>;

  explicit Namespace(NamespaceConfig config, Clock wall_clock = wall_clock_now);

  const NamespaceConfig& config() const noexcept { return config_; }
  const std::vector<std::unique_ptr<View>>& views() const noexcept { return views_; }

  // Applies a batch, all or nothing: on any bad event throws BatchError
  // naming its index and field, and nothing of the batch is counted. Events
  // without a time should carry the receive time (front ends' job).
  void apply(std::span<const Event> events);
  // The same with every key's hash_key() computed by the caller (who had
  // the bytes in cache, or time to spare); hashes.size() == events.size().
  void apply(std::span<const Event> events, std::span<const std::uint64_t> hashes);
  // The same for a batch a front end has laid out in the views' columns
  // itself (items, hashes = hash_key(item), times, weights; count), which
  // saves copying it: checked as apply() checks, in place (an excluded event
  // is dropped from it, a time clamped), then counted. On BatchError nothing
  // is counted and the columns' contents are unspecified.
  void apply(PreparedBatch& batch);
  // Checks a batch as apply() would with the wall clock reading `wall_now`,
  // without counting anything; throws BatchError. A front end that must
  // apply several namespaces' batches all or nothing checks each first, then
  // calls apply_at() with the same reading, which then cannot fail.
  void validate(std::span<const Event> events, double wall_now) const;
  void apply_at(std::span<const Event> events, double wall_now);
  // apply_at() in two steps, for a caller that must log a batch between
  // checking it and counting it: stage() checks the batch and prepares it
  // (BatchError, nothing staged then); apply_staged() counts the staged
  // batch and cannot fail. Another stage() replaces an unapplied one.
  void stage(std::span<const Event> events, double wall_now);
  // The same with hashes[i] = hash_key(events[i].item) computed by the
  // caller before it took the namespace's lock (hashes.size() == events.size()).
  void stage(std::span<const Event> events, std::span<const std::uint64_t> hashes, double wall_now);
  void apply_staged();

  // The newest event time across a cluster's partitions (docs/cluster.md):
  // each partition counts some of a batch's events, yet all of them must
  // keep one event clock, check alike what the writing node checked, and
  // turn their windows' buckets alike.
  // The event clock a batch staged now is checked against (NaN: no event
  // yet; event-clock namespaces), and the newest event time once it is
  // counted (NaN: none yet; an event clock's "now" then).
  double clock_before_staged() const noexcept { return newest_before_batch(); }
  double newest_after_staged() const noexcept;
  // stage() for a batch already in a log (recovery's replay, a cluster
  // partition's part): what was accepted when it was written counts now.
  // Events are checked for what they are (item, weight) and wall-clock
  // times clamped as then (`wall_now`: the record's receive time), but an
  // event clock's guards (max_time_jump, max_event_age) refuse nothing: a
  // cluster partition sees only its part of a batch, which its writer
  // checked whole. `clock_before` (a cluster commit's: the writing node's
  // event clock; NaN: no event yet) stands in for this namespace's own.
  void stage_logged(std::span<const Event> events, double wall_now, std::optional<double> clock_before = std::nullopt);
  // The namespace's newest event time is `t`, if this one is behind: it
  // moves the event clock (event-clock namespaces), the newest time the
  // stats show, and the windows' buckets, counting nothing.
  void advance_newest(double t);

  // What can change at run time: the default answer size and the
  // exclusion list. Validated like the configuration; nothing changes on error.
  void set_k(std::uint32_t k);
  void set_exclude(std::vector<std::string> exclude);
  // The time guards are run-time settings (PATCH): a backfill of older data
  // raises max_event_age for a while.
  void set_time_guards(double max_event_age, double max_time_jump);
  // Every run-time setting above from `next` at once (a PATCH, or its
  // replay): InvalidArgument naming the field and nothing changed when
  // `next` is invalid or differs in what is fixed at creation. Returns the
  // hot keys that cooled because detection stopped or restarted.
  //
  // A wider sketch_width or window_sketch_width (a power-of-two multiple)
  // is a resize: the views' sketches, or the windows' buckets from now on,
  // widen, carrying their counts (DecayedView::widen, TimeRings::widen),
  // and the audit starts comparing afresh (AccuracyAudit::restart).
  std::vector<HotKeyEvent> reconfigure(const NamespaceConfig& next);
  // Hot-key detection on (a threshold) or off (nullopt). A new threshold
  // keeps the detector's counts; a new half-life starts it afresh (counts
  // decayed at one rate cannot be converted to another), as does turning
  // it on. InvalidArgument naming the field; nothing changes on error.
  // Returns the keys of a detector that stopped or restarted, as cooled.
  std::vector<HotKeyEvent> set_hot_keys(std::optional<double> threshold, double half_life);

  // The detector (null while detection is off), and its judgement now:
  // the keys that turned hot or cooled since the last evaluation.
  const HotKeyDetector* hot_keys() const noexcept { return hot_keys_.get(); }
  std::vector<HotKeyEvent> evaluate_hot_keys();

  // The accuracy self-audit (null: off), and a pass of it now: the views
  // whose SLA verdict changed. Measures only: no answer changes.
  const AccuracyAudit* audit() const noexcept { return audit_.get(); }
  std::vector<AccuracyAudit::SlaChange> audit_pass();

  // The namespace's whole counting state (views and stats; not the
  // configuration) for checkpoints, and its restoration into a namespace
  // built from the same configuration (FormatError otherwise; unchanged then).
  std::string serialize_state() const;
  void restore_state(std::string_view blob);
  // serialize_state() in two steps: freeze under the owner's lock (cheap:
  // window buckets are shared copy-on-write), call the result after
  // releasing it for the same bytes.
  std::function<std::string()> freeze_state() const;

  // CMS.MERGE: a namespace of this configuration (its batch count this
  // one's + 1, so caches see a change) holding the weighted sum of the
  // sources' counts instead of this one's, built aside: the caller logs its
  // state, then adopt()s it. A source may be this namespace. Every
  // namespace must keep one all-time view only, counted with a sketch and
  // the augmented heap, of one sketch shape (DecayedView::add_weighted);
  // weights finite and >= 0; no hot-key detection and no exclusion list
  // here (neither survives a sum). Throws InvalidArgument ("destination: ...", "sources:
  // ...", "weights: ...") otherwise, and CountOverflow when the summed
  // weight reaches kMaxSummedWeight; nothing changes then.
  Namespace summed(std::span<const Namespace* const> sources, std::span<const double> weights) const;
  // summed()'s checks alone, nothing built: the same refusals. `totals`
  // (one per source; a cluster: its weight as every partition counted it)
  // stands in for each source's own counted weight in the overflow check.
  void check_summable(std::span<const Namespace* const> sources, std::span<const double> weights, std::span<const double> totals = {}) const;
  // Takes over `other`'s counting state (views, detector, stats), keeping
  // this object's identity, configuration and clock. `other` must have
  // been built from this configuration (summed() builds one). Cannot fail.
  void adopt(Namespace&& other) noexcept;
  // Where a double stops counting unit events exactly (2^53).
  static constexpr double kMaxSummedWeight = 9007199254740992.0;

  // "Now": the wall clock, or in event-clock mode the newest event time seen.
  double now() const;

  // The view asked for; nullopt = the first view. Throws InvalidArgument
  // ("half_life: ...") when the namespace does not keep it.
  const View& view(const std::optional<ViewSpec>& spec) const;

  TopKAnswer top(const std::optional<ViewSpec>& spec = std::nullopt, std::optional<std::size_t> k = std::nullopt) const;
  PointAnswer count(std::string_view item, const std::optional<ViewSpec>& spec = std::nullopt) const;
  // Many items at one and the same "now" (POST /counts): each checked as
  // count() checks it (InvalidArgument "item_ids[i]: ...").
  std::vector<PointAnswer> counts(std::span<const std::string> items, const std::optional<ViewSpec>& spec = std::nullopt) const;
  // The same as they were at `as_of` (seconds since the epoch, at most now),
  // from the view's own memory: nullopt when it keeps nothing that old (the
  // caller turns to history). Throws InvalidArgument ("timestamp: ...").
  std::optional<TopKAnswer> top_at(const std::optional<ViewSpec>& spec, std::optional<std::size_t> k, double as_of) const;
  std::optional<PointAnswer> count_at(std::string_view item, const std::optional<ViewSpec>& spec, double as_of) const;
  // Items rising fastest (engine/trending.hpp) between two half-lives the
  // namespace keeps (default: its shortest and longest). InvalidArgument
  // ("short: ...", "long: ...", "k: ...", "min_count: ...") otherwise.
  // `since`: find_trending's (a cluster partition's stream start).
  TrendingAnswer trending(std::optional<double> short_half_life, std::optional<double> long_half_life, std::optional<std::size_t> k,
                          double min_count, std::optional<double> since = std::nullopt) const;
  // k as asked, or the namespace's when none; InvalidArgument ("k: ...")
  // outside [1, kMaxK].
  std::size_t checked_k(std::optional<std::size_t> k) const;
  // What count() checks of an item id: InvalidArgument ("item_id: ...")
  // unless it is 1 to max_item_bytes bytes.
  void check_item(std::string_view item) const;

  NamespaceStats stats() const;
  // The undecayed weight counted so far (stats().weight), without building the stats.
  double counted_weight() const noexcept { return stats_.weight; }
  // Batches counted so far, and this object's id (unique in the process):
  // together they name a state of the namespace, for caches kept outside
  // it (a namespace deleted and made again is another object).
  std::uint64_t batches() const noexcept { return stats_.batches; }
  std::uint64_t instance_id() const noexcept { return instance_id_; }

 private:
  double checked_as_of(double as_of) const;
  const View* find_view(const ViewSpec& spec) const noexcept;  // null when the namespace does not keep it
  void prepare(std::span<const Event> events, std::span<const std::uint64_t> hashes, double wall_now);
  // The adjusted time of a valid event (clamped within the skew tolerance);
  // throws BatchError. Inline: it runs for every event of every batch.
  // `newest` is the event clock's running newest time over the batch so
  // far (NaN before any event): a batch is checked in order.
  double checked_time(const Event& e, std::size_t index, double wall_now, double& newest) const {
    if (!event_is_valid(e, config_)) [[unlikely]] reject(e, index);
    if (config_.clock == ClockMode::wall) {
      if (e.time > wall_now) [[unlikely]] return clamp_future(e, index, wall_now);
      if (wall_now - e.time > config_.max_event_age) [[unlikely]] reject_old(e, index, wall_now, "the server clock");
      return e.time;
    }
    if (!(e.time <= newest)) {  // ahead of the newest (or the first event)
      if (!logged_) {
        if (e.time - newest > config_.max_time_jump) [[unlikely]] reject_jump(e, index, newest, "the newest event time so far");
        // The first event has no newest to compare with: a millisecond time
        // or 1e18 is caught against the clock instead.
        if (e.time - wall_now > config_.max_time_jump) [[unlikely]] reject_jump(e, index, wall_now, "the server clock");
      }
      newest = e.time;
    } else if (newest - e.time > config_.max_event_age && !logged_) [[unlikely]] {
      reject_old(e, index, newest, "the newest event time");
    }
    return e.time;
  }
  // checked_time for an event of a batch; nullopt for an excluded one,
  // which is checked like the others but does not move the event clock
  // (stats' newest time counts kept events only).
  std::optional<double> kept_time(const Event& e, std::size_t index, double wall_now, double& newest) const {
    if (!exclude_.empty() && exclude_.contains(e.item)) {
      double unmoved = newest;
      (void)checked_time(e, index, wall_now, unmoved);
      return std::nullopt;
    }
    return checked_time(e, index, wall_now, newest);
  }
  // The event clock's newest time before this batch (NaN before any event).
  double newest_before_batch() const noexcept;
  // The one check loop of every way in: events [0, n) (event_at(i), an
  // Event) are checked in order (BatchError on the first bad one); each
  // counted one goes to out[kept], its time set here and its other columns
  // by keep(i, kept, event) (kept <= i, so `out` may be the source); out's
  // count and time range are set. Defined in namespace.cpp, its only user.
  template <typename EventAt, typename Keep>
  void check_into(PreparedBatch& out, std::size_t n, double wall_now, EventAt event_at, Keep keep) const;
  [[noreturn]] void reject(const Event& e, std::size_t index) const;
  [[noreturn]] void reject_old(const Event& e, std::size_t index, double now, const char* what_now) const;
  [[noreturn]] void reject_jump(const Event& e, std::size_t index, double reference, const char* what_reference) const;
  double clamp_future(const Event& e, std::size_t index, double wall_now) const;
  void apply_prepared(std::size_t submitted) { count_prepared(batch_, submitted); }
  void count_prepared(const PreparedBatch& batch, std::size_t submitted);
  void rebuild_exclude();
  void resize(const NamespaceConfig& next);

  NamespaceConfig config_;
  Clock wall_clock_;
  std::vector<std::unique_ptr<View>> views_;
  std::unique_ptr<HotKeyDetector> hot_keys_;      // null: detection off
  std::unique_ptr<AccuracyAudit> audit_;          // null: no audit
  std::unordered_set<std::string_view> exclude_;  // views into config_.exclude
  PreparedBatch batch_;                           // reused scratch
  std::size_t staged_ = 0;                        // events submitted to the staged batch
  std::optional<double> clock_override_;          // stage_logged()'s clock, while it stages
  bool logged_ = false;                           // stage_logged() is staging: no event-clock guard refuses
  NamespaceStats stats_;
  std::uint64_t instance_id_ = next_instance_id();
  static std::uint64_t next_instance_id() noexcept;
  bool seen_event_ = false;
};

}  // namespace ebb::engine
