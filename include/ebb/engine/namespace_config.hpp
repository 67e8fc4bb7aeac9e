#pragma once
// The configuration of one namespace (one independent top-K list), with the
// validation every front end shares: a bad field is rejected with an
// InvalidArgument whose message starts with the field's API name.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ebb/sketch/count_min/count_min.hpp"

namespace ebb::engine {

enum class ClockMode { wall, event };
enum class SummaryKind { candidate_heap, space_saving };
// Sketches (memory bounded whatever the number of items) or one exact
// record per item (engine/exact_table.hpp), at most max_items of them.
enum class Counting { sketch, exact };

struct NamespaceConfig {
  static constexpr std::uint32_t kMaxK = 1000;
  static constexpr double kMaxWeight = 1e15;
  static constexpr double kMaxWindow = 366 * 86400.0;  // keeps weight * e^300 far from overflow
  static constexpr std::uint64_t kDefaultMaxItems = 100'000;
  static constexpr std::uint64_t kMaxItems = 100'000'000;

  std::string name = "default";
  std::uint32_t k = 10;               // default answer size
  bool all_time = true;               // keep the all-time view ("all")
  std::vector<double> half_lives;     // seconds; one decayed view each
  // Exact-boundary sliding windows (seconds, whole, in [1s, 366d]); one
  // window view each, all sharing the namespace's bucket rings.
  std::vector<double> windows;
  // Width of each window bucket's sketch (a power of two; depth is the
  // namespace's). Buckets are many, so narrower than the views' sketch: a
  // window's error bound is e / window_sketch_width times its total.
  std::uint32_t window_sketch_width = 8192;
  CountMinShape sketch;               // per view
  UpdatePolicy update = UpdatePolicy::conservative;
  SummaryKind summary = SummaryKind::candidate_heap;
  std::uint32_t candidates = 0;       // summary capacity; 0 = max(1024, 4k)
  // A memory budget per all-time or decayed view, all in (sketch counters,
  // candidates, their keys, scratch): 0 = none. Front ends size `sketch`
  // and `candidates` from it (DecayedView::fit_budget); the view holds its
  // keys' bytes to what the rest leaves. Windows are sized apart.
  std::uint64_t memory = 0;
  std::vector<std::string> exclude;   // items never counted
  Counting counting = Counting::sketch;
  // Exact counting: the records held at most; a new item past it evicts
  // one (engine/exact_table.hpp says which), and answers report it.
  std::uint64_t max_items = kDefaultMaxItems;
  ClockMode clock = ClockMode::wall;
  double max_future_skew = 60;        // seconds an event may be ahead of the wall clock
  // Guards of "now" against corrupt timestamps (infinity = no guard). An
  // event older than `max_event_age` behind now (the wall clock, or on the
  // event clock the newest event time) is refused: a timestamp of 0 would
  // start the all-time window in 1970. On the event clock an event more
  // than `max_time_jump` ahead of the newest is refused too: it would move
  // "now" for good and every later event would decay to nothing.
  double max_event_age = 7 * 86400.0;
  double max_time_jump = 86400.0;     // event clock only
  std::uint32_t max_item_bytes = 1024;
  // Hot-key detection (engine/hot_key_detector.hpp): on while a threshold
  // (events/s) is set. The detector decays with its own half-life, apart
  // from the query views'. Both change at run time (PATCH).
  std::optional<double> hot_key_threshold;
  double hot_key_half_life = 10;  // seconds, in [kMinHotKeyHalfLife, kMaxHotKeyHalfLife]
  static constexpr double kMinHotKeyHalfLife = 1;
  static constexpr double kMaxHotKeyHalfLife = 86400;
  // The accuracy self-audit (engine/accuracy_audit.hpp): exact counts for
  // a hash sample of at most `audit_sample` items and each view's top
  // `audit_top`, compared with the views' estimates (both 0: no audit;
  // fixed at creation). `audit_sla`: the top items' largest error, as a
  // share of their count, past which the audit warns and says how wide a
  // sketch would meet it (nullopt: none; changes at run time).
  std::uint32_t audit_sample = 64;
  std::uint32_t audit_top = 10;
  std::optional<double> audit_sla = 0.01;
  // Opt-in: a missed SLA widens the view's sketch to the suggested width
  // (a configuration change in the log, so replays and replicas make it at
  // the same point; never past the server's memory limits). Needs an
  // audit and sketch counting without a memory budget.
  bool audit_resize = false;
  static constexpr std::uint32_t kMaxAuditSample = 10'000;
  static constexpr std::uint32_t kMaxAuditTop = 100;

  // Throws InvalidArgument naming the field ("k: must be in [1, 1000]").
  void validate() const;
  std::uint32_t resolved_candidates() const noexcept;
};

// A cluster partition's share of a namespace (docs/cluster.md, "Memory"):
// a partition counts about 1/parts of the items, so sketches 1/parts as
// wide keep, over all the partitions, a single node's absolute error bound
// (e / width x the total) in 1/parts of the memory each. Widths (the
// views', the window buckets') never drop below kMinShareWidth (small
// sketches stay as asked); the candidates stay (each partition must hold
// the k best of its own items), and so does a memory budget (a view keeps
// within it: the smaller sketch leaves its keys more room). An exact
// namespace, or parts <= 1: c as it is.
inline constexpr std::uint32_t kMinShareWidth = 1024;
NamespaceConfig partition_share(NamespaceConfig c, std::uint32_t parts);
// The narrowest width (a power of two, at most CountMinShape::kMaxWidth)
// whose partition share is at least `share`: what a namespace must be
// widened to for its partitions to count `share` wide (a resize asked by
// the partitions' audits; parts <= 1: `share` itself).
std::uint32_t width_for_share(std::uint32_t share, std::uint32_t parts);
// Whether `next` may follow `was` at run time as far as the sketches go: a
// width only grows, by a power of two (the counts are carried into the
// wider sketch), the depth is fixed, and a memory budget fixes the views'
// width. InvalidArgument naming the field otherwise; nothing for exact
// counting (no sketch).
void check_resize(const NamespaceConfig& was, const NamespaceConfig& next);

// Namespace names: any UTF-8 text of 1 to kMaxNamespaceName bytes without
// control characters (C0, DEL, C1), so a Redis key such as "topk:user:42"
// names a namespace as it is. What is wrong with a name, or nullopt; the
// reason never quotes the name (it may not be printable).
inline constexpr std::size_t kMaxNamespaceName = 256;
std::optional<std::string> namespace_name_problem(std::string_view name);
inline bool valid_namespace_name(std::string_view name) { return !namespace_name_problem(name); }

}  // namespace ebb::engine
