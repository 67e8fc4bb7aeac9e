#include "ebb/engine/namespace.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/decayed_view.hpp"
#include "ebb/engine/view_factory.hpp"
#include "ebb/engine/window_view.hpp"
#include "number_text.hpp"

namespace ebb::engine {
namespace {

std::unique_ptr<HotKeyDetector> make_hot_keys(const NamespaceConfig& c) {
  return std::make_unique<HotKeyDetector>(c, HotKeyOptions{.threshold = *c.hot_key_threshold, .half_life = c.hot_key_half_life});
}

}  // namespace

std::optional<EventProblem> describe_event_problem(const Event& e, const NamespaceConfig& config) {
  if (e.item.empty()) return EventProblem{"item_id", "must not be empty"};
  if (e.item.size() > config.max_item_bytes) {
    return EventProblem{"item_id", "is " + std::to_string(e.item.size()) + " bytes, longer than the limit of " +
                                       std::to_string(config.max_item_bytes)};
  }
  if (!std::isfinite(e.weight) || e.weight <= 0) return EventProblem{"weight", "must be finite and > 0 (got " + number_text(e.weight) + ")"};
  if (e.weight > NamespaceConfig::kMaxWeight) {
    return EventProblem{"weight", "exceeds the limit of " + number_text(NamespaceConfig::kMaxWeight) + " (got " + number_text(e.weight) + ")"};
  }
  if (!std::isfinite(e.time) || e.time < 0) {
    return EventProblem{"timestamp", "must be a finite number of Unix seconds >= 0 (got " + number_text(e.time) + ")"};
  }
  return std::nullopt;  // (check_event's fast path says valid; here only as a safe fallback)
}

std::uint64_t Namespace::next_instance_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Namespace::Namespace(NamespaceConfig config, Clock wall_clock) : config_(std::move(config)), wall_clock_(std::move(wall_clock)) {
  config_.validate();
  // The summary capacity is fixed at creation: a later set_k() must not
  // change what a checkpoint of this namespace holds.
  config_.candidates = config_.resolved_candidates();
  views_ = make_views(config_);
  if (config_.hot_key_threshold) hot_keys_ = make_hot_keys(config_);
  if (AccuracyAudit::enabled(config_)) audit_ = std::make_unique<AccuracyAudit>(config_, views_, true);
  rebuild_exclude();
}

double Namespace::now() const {
  if (config_.clock == ClockMode::event && seen_event_) return stats_.newest_time;
  return wall_clock_();
}

void Namespace::reject(const Event& e, std::size_t index) const {
  const auto problem = describe_event_problem(e, config_);
  throw BatchError(index, problem ? problem->field : "event", problem ? problem->message : "is invalid");
}

void Namespace::reject_old(const Event& e, std::size_t index, double now, const char* what_now) const {
  throw BatchError(index, "timestamp", "is " + number_text(now - e.time) + " s older than " + what_now + " (" + number_text(now) +
                                           "), more than the namespace's max_event_age of " + format_duration(config_.max_event_age));
}

void Namespace::reject_jump(const Event& e, std::size_t index, double reference, const char* what_reference) const {
  throw BatchError(index, "timestamp", "is " + number_text(e.time - reference) + " s ahead of " + what_reference + " (" + number_text(reference) +
                                           "), more than the namespace's max_time_jump of " + format_duration(config_.max_time_jump));
}

void NamespaceStats::add(const NamespaceStats& part) {
  events += part.events;
  excluded += part.excluded;
  batches += part.batches;
  weight += part.weight;
  newest_time = std::max(newest_time, part.newest_time);
  memory_bytes += part.memory_bytes;
  for (const auto& v : part.views) {
    auto same = std::find_if(views.begin(), views.end(), [&](const ViewStats& s) { return s.view == v.view; });
    if (same == views.end()) {
      views.push_back(v);
    } else {
      same->memory_bytes += v.memory_bytes;
      same->dropped += v.dropped;
      same->audit.add(v.audit);
    }
  }
  audit.add(part.audit);
}

void NamespaceStats::add_audit(const NamespaceStats& part) {
  audit.add(part.audit);
  for (const auto& v : part.views) {
    auto same = std::find_if(views.begin(), views.end(), [&](const ViewStats& s) { return s.view == v.view; });
    if (same != views.end()) same->audit.add(v.audit);
  }
}

double Namespace::newest_before_batch() const noexcept {
  if (clock_override_) return *clock_override_;
  return seen_event_ ? stats_.newest_time : NAN;
}

void Namespace::stage_logged(std::span<const Event> events, double wall_now, std::optional<double> clock_before) {
  struct Restore {
    Namespace& ns;
    ~Restore() {
      ns.clock_override_.reset();
      ns.logged_ = false;
    }
  } restore{*this};
  if (config_.clock == ClockMode::event && clock_before) clock_override_ = *clock_before;
  logged_ = true;
  stage(events, wall_now);
}

double Namespace::newest_after_staged() const noexcept {
  const double before = seen_event_ ? stats_.newest_time : NAN;
  if (batch_.count == 0) return before;
  return std::isnan(before) ? batch_.max_time : std::max(before, batch_.max_time);
}

void Namespace::advance_newest(double t) {
  if (!std::isfinite(t) || t < 0) return;
  stats_.newest_time = seen_event_ ? std::max(stats_.newest_time, t) : t;
  seen_event_ = true;
  for (auto& v : views_) v->advance_to(t);
}

double Namespace::clamp_future(const Event& e, std::size_t index, double wall_now) const {
  // Within the skew tolerance a clock a little ahead is clamped to now;
  // beyond it the event would be over-weighted forever: refuse it.
  if (e.time - wall_now > config_.max_future_skew) {
    throw BatchError(index, "timestamp", "is " + number_text(e.time - wall_now) + " s in the future (tolerance " +
                                             number_text(config_.max_future_skew) + " s)");
  }
  return wall_now;
}

void Namespace::validate(std::span<const Event> events, double wall_now) const {
  double newest = newest_before_batch();
  for (std::size_t i = 0; i < events.size(); ++i) (void)kept_time(events[i], i, wall_now, newest);
}

template <typename EventAt, typename Keep>
void Namespace::check_into(PreparedBatch& out, std::size_t n, double wall_now, EventAt event_at, Keep keep) const {
  std::size_t kept = 0;
  double min_t = INFINITY, max_t = -INFINITY;
  double newest = newest_before_batch();
  for (std::size_t i = 0; i < n; ++i) {
    const Event e = event_at(i);
    const std::optional<double> time = kept_time(e, i, wall_now, newest);
    if (!time) continue;
    const double t = *time;
    keep(i, kept, e);
    out.times[kept] = t;
    ++kept;
    min_t = std::min(min_t, t);
    max_t = std::max(max_t, t);
  }
  out.count = kept;
  out.min_time = min_t;
  out.max_time = max_t;
  // "Now" once this batch is counted: what windows measure lateness against.
  out.now = config_.clock == ClockMode::wall ? wall_now : (std::isnan(newest) ? max_t : newest);
}

void Namespace::prepare(std::span<const Event> events, std::span<const std::uint64_t> hashes, double wall_now) {
  const bool prehashed = !hashes.empty();
  // Filled by index into columns that only grow: this loop runs for every event.
  batch_.reserve(events.size());
  // Validate everything before anything is counted.
  check_into(batch_, events.size(), wall_now, [&](std::size_t i) -> const Event& { return events[i]; },
             [&](std::size_t i, std::size_t kept, const Event& e) {
               batch_.items[kept] = e.item;
               batch_.weights[kept] = e.weight;
               if (prehashed) batch_.hashes[kept] = hashes[i];
             });
  if (!prehashed) {
    for (std::size_t i = 0; i < batch_.count; ++i) batch_.hashes[i] = hash_key(batch_.items[i]);
  }
}

void Namespace::apply(std::span<const Event> events) { apply(events, {}); }

void Namespace::apply(std::span<const Event> events, std::span<const std::uint64_t> hashes) {
  if (!hashes.empty() && hashes.size() != events.size()) {
    throw InvalidArgument("apply: " + std::to_string(hashes.size()) + " hashes for " + std::to_string(events.size()) + " events");
  }
  prepare(events, hashes, wall_clock_());  // the event clock checks a first event against it
  apply_prepared(events.size());
}

void Namespace::apply_at(std::span<const Event> events, double wall_now) {
  prepare(events, {}, wall_now);
  apply_prepared(events.size());
}

void Namespace::stage(std::span<const Event> events, double wall_now) { stage(events, {}, wall_now); }

void Namespace::stage(std::span<const Event> events, std::span<const std::uint64_t> hashes, double wall_now) {
  if (!hashes.empty() && hashes.size() != events.size()) {
    throw InvalidArgument("stage: " + std::to_string(hashes.size()) + " hashes for " + std::to_string(events.size()) + " events");
  }
  staged_ = 0;
  prepare(events, hashes, wall_now);
  staged_ = events.size();
}

void Namespace::apply_staged() {
  apply_prepared(staged_);
  staged_ = 0;
}

void Namespace::apply(PreparedBatch& batch) {
  const std::size_t n = batch.count;
  if (batch.items.size() < n || batch.hashes.size() < n || batch.times.size() < n || batch.weights.size() < n) {
    throw InvalidArgument("apply: a prepared batch of " + std::to_string(n) + " events has shorter columns");
  }
  // Checked in place: an event moves down only after an excluded one.
  check_into(batch, n, wall_clock_() /* the event clock checks a first event against it */,
             [&](std::size_t i) { return Event{batch.items[i], batch.times[i], batch.weights[i]}; },
             [&](std::size_t i, std::size_t kept, const Event&) {
               if (kept == i) return;
               batch.items[kept] = batch.items[i];
               batch.hashes[kept] = batch.hashes[i];
               batch.weights[kept] = batch.weights[i];
             });
  count_prepared(batch, n);
}

void Namespace::count_prepared(const PreparedBatch& batch, std::size_t submitted) {
  ++stats_.batches;
  stats_.excluded += submitted - batch.size();
  if (batch.size() == 0) return;
  // Before the views: an item the audit takes in now reads their estimates
  // without this batch.
  if (audit_) audit_->observe(batch, views_, batch.now, seen_event_ ? stats_.newest_time : NAN);
  for (auto& view : views_) view->apply(batch);
  if (hot_keys_) hot_keys_->apply(batch);
  stats_.events += batch.size();
  for (std::size_t i = 0; i < batch.size(); ++i) stats_.weight += batch.weights[i];
  stats_.newest_time = seen_event_ ? std::max(stats_.newest_time, batch.max_time) : batch.max_time;
  seen_event_ = true;
}

void Namespace::set_k(std::uint32_t k) {
  if (k > config_.candidates) {
    throw InvalidArgument("k: must be at most the namespace's " + std::to_string(config_.candidates) +
                          " candidates (fixed at creation; got " + std::to_string(k) + ")");
  }
  NamespaceConfig next = config_;
  next.k = k;
  next.validate();
  config_.k = k;
}

void Namespace::set_exclude(std::vector<std::string> exclude) {
  NamespaceConfig next = config_;
  next.exclude = std::move(exclude);
  next.validate();
  config_.exclude = std::move(next.exclude);
  rebuild_exclude();
}

void Namespace::set_time_guards(double max_event_age, double max_time_jump) {
  NamespaceConfig next = config_;
  next.max_event_age = max_event_age;
  next.max_time_jump = max_time_jump;
  next.validate();
  config_.max_event_age = max_event_age;
  config_.max_time_jump = max_time_jump;
}

void Namespace::resize(const NamespaceConfig& next) {
  if (config_.counting != Counting::sketch) return;
  const bool views = next.sketch.width != config_.sketch.width;
  const bool windows = next.window_sketch_width != config_.window_sketch_width;
  if (!views && !windows) return;
  // Every allocation first (a failure changes nothing), then the swap.
  std::vector<std::optional<CountMin>> wider_views(views_.size());
  std::vector<TimeRings::Widening> wider_windows(views_.size());
  for (std::size_t i = 0; i < views_.size(); ++i) {
    if (auto* d = dynamic_cast<DecayedView*>(views_[i].get()); d && views) wider_views[i] = d->prepare_widen(next.sketch.width);
    if (auto* w = dynamic_cast<WindowView*>(views_[i].get()); w && windows) wider_windows[i] = w->prepare_widen(next.window_sketch_width);
  }
  for (std::size_t i = 0; i < views_.size(); ++i) {
    if (auto* d = dynamic_cast<DecayedView*>(views_[i].get())) d->commit_widen(std::move(wider_views[i]));
    if (auto* w = dynamic_cast<WindowView*>(views_[i].get())) w->commit_widen(std::move(wider_windows[i]));
  }
  config_.sketch = next.sketch;
  config_.window_sketch_width = next.window_sketch_width;
  // The audit compares from here on: what it finds is the new width's.
  if (audit_) audit_->restart(config_, views_, now(), seen_event_ ? stats_.newest_time : NAN);
}

std::vector<HotKeyEvent> Namespace::reconfigure(const NamespaceConfig& next) {
  next.validate();
  check_resize(config_, next);
  if (next.k > config_.candidates) {
    throw InvalidArgument("k: must be at most the namespace's " + std::to_string(config_.candidates) + " candidates (fixed at creation; got " +
                          std::to_string(next.k) + ")");
  }
  // The resize first: what may still fail (an allocation) fails before
  // anything changed. Checked above: none of the rest can fail now.
  resize(next);
  set_k(next.k);
  set_exclude(next.exclude);
  set_time_guards(next.max_event_age, next.max_time_jump);
  config_.audit_sla = next.audit_sla;
  config_.audit_resize = next.audit_resize;
  if (audit_) audit_->set_sla(next.audit_sla);
  return set_hot_keys(next.hot_key_threshold, next.hot_key_half_life);
}

std::vector<HotKeyEvent> Namespace::set_hot_keys(std::optional<double> threshold, double half_life) {
  NamespaceConfig next = config_;
  next.hot_key_threshold = threshold;
  next.hot_key_half_life = half_life;
  next.validate();
  std::vector<HotKeyEvent> cooled;
  if (hot_keys_ && (!threshold || half_life != config_.hot_key_half_life)) {
    for (auto& k : hot_keys_->hot()) cooled.push_back({false, std::move(k)});
  }
  if (!threshold) {
    hot_keys_.reset();
  } else if (!hot_keys_ || half_life != config_.hot_key_half_life) {
    hot_keys_ = make_hot_keys(next);
  } else {
    hot_keys_->set_threshold(*threshold);
  }
  config_.hot_key_threshold = threshold;
  config_.hot_key_half_life = half_life;
  return cooled;
}

std::vector<HotKeyEvent> Namespace::evaluate_hot_keys() {
  if (!hot_keys_) return {};
  // An event-clock namespace has no "now" before its first event (now()
  // would be the wall clock, and a judgement never goes back in time).
  if (config_.clock == ClockMode::event && !seen_event_) return {};
  return hot_keys_->evaluate(now());
}

void Namespace::rebuild_exclude() {
  exclude_.clear();
  for (const auto& item : config_.exclude) exclude_.insert(item);
}

std::string Namespace::serialize_state() const { return freeze_state()(); }

std::function<std::string()> Namespace::freeze_state() const {
  // One buffer, sized once: the views' memory is about what they write.
  std::size_t bytes = 4096;
  std::vector<View::FrozenState> views;
  for (const auto& v : views_) {
    bytes += v->memory_bytes();
    views.push_back(v->freeze_state());
  }
  // The detector is one decayed view's size: serialised now, like those.
  std::shared_ptr<const std::string> detector;
  if (hot_keys_) detector = std::make_shared<const std::string>(written([&](BinaryWriter& w) { hot_keys_->serialize_state_into(w); }));
  // The audit holds a few items: likewise.
  std::shared_ptr<const std::string> audit;
  if (audit_) audit = std::make_shared<const std::string>(written([&](BinaryWriter& w) { audit_->serialize_state_into(w); }));
  return [stats = stats_, seen = seen_event_, views = std::move(views), detector, audit, bytes] {
    BinaryWriter w;
    w.reserve(bytes + (detector ? detector->size() : 0) + (audit ? audit->size() : 0));
    // Version 2 added the hot-key detector after the views, version 3 the
    // accuracy audit after that.
    const auto blob = w.begin_blob(BlobKind::namespace_state, 3);
    w.put<std::uint64_t>(stats.events);
    w.put<std::uint64_t>(stats.excluded);
    w.put<std::uint64_t>(stats.batches);
    w.put<double>(stats.weight);
    w.put<double>(stats.newest_time);
    w.put<std::uint8_t>(seen ? 1 : 0);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(views.size()));
    for (const auto& v : views) w.put_part(v);
    w.put<std::uint8_t>(detector ? 1 : 0);
    if (detector) w.put_string(*detector);
    w.put<std::uint8_t>(audit ? 1 : 0);
    if (audit) w.put_string(*audit);
    w.end_blob(blob);
    return std::move(w.buffer());
  };
}

void Namespace::restore_state(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::namespace_state, 3);
  BinaryReader r(opened.payload, "namespace state");
  NamespaceStats stats;
  stats.events = r.get<std::uint64_t>();
  stats.excluded = r.get<std::uint64_t>();
  stats.batches = r.get<std::uint64_t>();
  stats.weight = r.get<double>();
  stats.newest_time = r.get<double>();
  const auto seen_flag = r.get<std::uint8_t>();
  if (seen_flag > 1) r.fail("bad seen-event flag");
  if (!std::isfinite(stats.weight) || stats.weight < 0) r.fail("bad total weight");
  if (!std::isfinite(stats.newest_time) || stats.newest_time < 0) r.fail("bad newest event time");
  const bool seen = seen_flag == 1;
  const auto n = r.get<std::uint32_t>();
  if (n != views_.size()) r.fail("holds " + std::to_string(n) + " views, the configuration has " + std::to_string(views_.size()));
  std::vector<std::string> parts;
  for (std::uint32_t i = 0; i < n; ++i) parts.push_back(r.get_string(std::size_t{1} << 36));
  // Version 1 predates hot-key detection: a detector the configuration
  // asks for starts empty.
  std::optional<std::string> detector_part;
  if (opened.version >= 2) {
    const auto has_detector = r.get<std::uint8_t>();
    if (has_detector > 1) r.fail("bad hot-key detector flag");
    if (has_detector == 1) detector_part = r.get_string(std::size_t{1} << 36);
  }
  // Version 3 added the audit; before it, an audit the configuration asks
  // for starts now (from the first event only if nothing was counted).
  std::optional<std::string> audit_part;
  if (opened.version >= 3) {
    const auto has_audit = r.get<std::uint8_t>();
    if (has_audit > 1) r.fail("bad accuracy audit flag");
    if (has_audit == 1) audit_part = r.get_string(std::size_t{1} << 32);
  }
  r.expect_end();
  if (opened.version >= 3 && audit_part.has_value() != AccuracyAudit::enabled(config_)) {
    r.fail(audit_part ? "holds an accuracy audit the configuration does not have" : "lacks the configuration's accuracy audit");
  }
  if (opened.version >= 2 && detector_part.has_value() != config_.hot_key_threshold.has_value()) {
    r.fail(detector_part ? "holds a hot-key detector the configuration does not have" : "lacks the configuration's hot-key detector");
  }
  // Restore into fresh views first so a bad part leaves this namespace as it was.
  std::vector<std::unique_ptr<View>> fresh = make_views(config_);
  for (std::uint32_t i = 0; i < n; ++i) fresh[i]->restore_state(parts[i]);
  std::unique_ptr<HotKeyDetector> detector = config_.hot_key_threshold ? make_hot_keys(config_) : nullptr;
  if (detector_part) detector->restore_state(*detector_part);
  std::unique_ptr<AccuracyAudit> audit = AccuracyAudit::enabled(config_) ? std::make_unique<AccuracyAudit>(config_, fresh, stats.events == 0) : nullptr;
  if (audit_part) audit->restore_state(*audit_part);
  views_ = std::move(fresh);
  hot_keys_ = std::move(detector);
  audit_ = std::move(audit);
  stats_ = stats;
  seen_event_ = seen;
}

const View* Namespace::find_view(const ViewSpec& spec) const noexcept {
  for (const auto& v : views_) {
    if (v->spec() == spec) return v.get();
  }
  return nullptr;
}

const View& Namespace::view(const std::optional<ViewSpec>& spec) const {
  if (!spec) return *views_.front();
  if (const View* v = find_view(*spec)) return *v;
  std::string kept;
  for (const auto& v : views_) kept += (kept.empty() ? "" : ", ") + v->spec().label();
  if (spec->kind == ViewSpec::Kind::all_time) throw InvalidArgument("window: namespace '" + config_.name + "' keeps no all-time view (it keeps: " + kept + ")");
  const bool window = spec->kind == ViewSpec::Kind::window;
  throw InvalidArgument(std::string(window ? "window" : "half_life") + ": namespace '" + config_.name + "' keeps no " + spec->label() +
                        " view (it keeps: " + kept + ")");
}

std::size_t Namespace::checked_k(std::optional<std::size_t> k) const {
  const std::size_t want = k.value_or(config_.k);
  if (want < 1 || want > NamespaceConfig::kMaxK) {
    throw InvalidArgument("k: must be in [1, " + std::to_string(NamespaceConfig::kMaxK) + "] (got " + std::to_string(want) + ")");
  }
  return want;
}

void Namespace::check_item(std::string_view item) const {
  if (item.empty() || item.size() > config_.max_item_bytes) {
    throw InvalidArgument("item_id: must be 1 to " + std::to_string(config_.max_item_bytes) + " bytes");
  }
}

TopKAnswer Namespace::top(const std::optional<ViewSpec>& spec, std::optional<std::size_t> k) const {
  const std::size_t want = checked_k(k);
  return view(spec).top(want, now());
}

PointAnswer Namespace::count(std::string_view item, const std::optional<ViewSpec>& spec) const {
  check_item(item);
  return view(spec).point(item, hash_key(item), now());
}

std::vector<PointAnswer> Namespace::counts(std::span<const std::string> items, const std::optional<ViewSpec>& spec) const {
  std::vector<std::uint64_t> hashes;
  hashes.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].empty() || items[i].size() > config_.max_item_bytes) {
      throw InvalidArgument("item_ids[" + std::to_string(i) + "]: must be 1 to " + std::to_string(config_.max_item_bytes) + " bytes");
    }
    hashes.push_back(hash_key(items[i]));
  }
  return view(spec).points(items, hashes, now());
}

TrendingAnswer Namespace::trending(std::optional<double> short_half_life, std::optional<double> long_half_life, std::optional<std::size_t> k,
                                  double min_count, std::optional<double> since) const {
  const std::size_t want = checked_k(k);
  if (!(std::isfinite(min_count) && min_count >= 0)) throw InvalidArgument("min_count: must be a finite number >= 0");
  if (config_.half_lives.size() < 2) {
    throw InvalidArgument("short: trending compares two half-lives; namespace '" + config_.name + "' keeps " +
                          std::to_string(config_.half_lives.size()) + " (add half_lives to a namespace, e.g. [\"5m\", \"1h\"])");
  }
  const auto [shortest, longest] = std::minmax_element(config_.half_lives.begin(), config_.half_lives.end());
  const double s = short_half_life.value_or(*shortest), l = long_half_life.value_or(*longest);
  if (!(s < l)) {
    throw InvalidArgument("short: must be a shorter half-life than long (got " + format_duration(s) + " and " + format_duration(l) + ")");
  }
  auto decayed = [&](double h, const char* field) -> const View& {
    if (const View* v = find_view(ViewSpec::decayed(h))) return *v;
    std::string kept;
    for (double x : config_.half_lives) kept += (kept.empty() ? "" : ", ") + format_duration(x);
    throw InvalidArgument(std::string(field) + ": namespace '" + config_.name + "' keeps no half-life " + format_duration(h) +
                          " (it keeps: " + kept + ")");
  };
  return find_trending(decayed(s, "short"), decayed(l, "long"), config_.candidates, want, min_count, now(), since);
}

double Namespace::checked_as_of(double as_of) const {
  const double t = now();
  if (!std::isfinite(as_of) || as_of < 0) throw InvalidArgument("timestamp: must be a finite time in seconds since the epoch");
  if (as_of > t) throw InvalidArgument("timestamp: " + number_text(as_of) + " is after now (" + number_text(t) + ")");
  return as_of;
}

std::optional<TopKAnswer> Namespace::top_at(const std::optional<ViewSpec>& spec, std::optional<std::size_t> k, double as_of) const {
  const std::size_t want = checked_k(k);
  const View& v = view(spec);
  return v.top_at(want, checked_as_of(as_of));
}

std::optional<PointAnswer> Namespace::count_at(std::string_view item, const std::optional<ViewSpec>& spec, double as_of) const {
  check_item(item);
  const View& v = view(spec);
  return v.point_at(item, hash_key(item), checked_as_of(as_of));
}

NamespaceStats Namespace::stats() const {
  NamespaceStats s = stats_;
  s.memory_bytes = sizeof(*this);
  for (const auto& v : views_) {
    const std::size_t bytes = v->memory_bytes();
    s.memory_bytes += bytes;
    s.views.push_back({v->spec(), bytes, v->dropped(), {}});
  }
  if (hot_keys_) s.memory_bytes += hot_keys_->memory_bytes();
  if (audit_) {
    s.memory_bytes += audit_->memory_bytes();
    s.audit = audit_->summary();
    for (std::size_t i = 0; i < s.views.size(); ++i) s.views[i].audit = audit_->report()[i];
  }
  return s;
}

std::vector<AccuracyAudit::SlaChange> Namespace::audit_pass() {
  // An event-clock namespace has no "now" before its first event.
  if (!audit_ || (config_.clock == ClockMode::event && !seen_event_)) return {};
  return audit_->pass(views_, now(), seen_event_ ? stats_.newest_time : NAN);
}

}  // namespace ebb::engine
