#include "ebb/engine/accuracy_audit.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/core/string_bytes.hpp"
#include "ebb/engine/time_rings.hpp"
#include "ebb/sketch/count_min/count_min_shape.hpp"

namespace ebb::engine {
namespace {
constexpr double kNoTime = -std::numeric_limits<double>::infinity();
// A time as a namespace takes them (finite, not before 1970).
bool valid_time(double t) { return t >= 0 && t < std::numeric_limits<double>::infinity(); }

// A window item's buckets never need more periods than its window spans,
// plus the bucket at each end and one for lateness.
std::size_t bucket_cap(double window, double granularity) { return static_cast<std::size_t>(std::ceil(window / granularity)) + 3; }

// Differences this small are rounding (decayed sums read back through
// exp()), not sketch error.
double rounded_off(double error, double scale) { return error <= 1e-9 * std::max(1.0, scale) ? 0 : error; }
}  // namespace

void AuditHistogram::observe(double relative) noexcept {
  std::size_t i = 0;
  while (i < kBounds.size() && !(relative <= kBounds[i])) ++i;
  ++counts[i];
  ++count;
  if (std::isfinite(relative)) sum += relative;
}

void AuditHistogram::add(const AuditHistogram& other) noexcept {
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += other.counts[i];
  count += other.count;
  sum += other.sum;
}

void ViewAudit::add(const ViewAudit& part) {
  if (part.passed() && (!passed() || part.as_of > as_of)) as_of = part.as_of;
  compared += part.compared;
  outside_bound += part.outside_bound;
  max_error = std::max(max_error, part.max_error);
  max_relative_error = std::max(max_relative_error, part.max_relative_error);
  error_bound = std::max(error_bound, part.error_bound);
  top_compared += part.top_compared;
  top_max_error_share = std::max(top_max_error_share, part.top_max_error_share);
  suggested_growth = std::max(suggested_growth, part.suggested_growth);
  histogram.add(part.histogram);
}

std::uint32_t audited_width(const NamespaceConfig& c, const ViewSpec& view) noexcept {
  if (c.counting != Counting::sketch) return 0;
  return view.kind == ViewSpec::Kind::window ? c.window_sketch_width : c.sketch.width;
}

std::uint64_t suggested_width(const NamespaceConfig& c, const ViewSpec& view, const ViewAudit& a) noexcept {
  const std::uint64_t width = audited_width(c, view);
  const std::uint64_t grown = std::min<std::uint64_t>(CountMinShape::kMaxWidth, width * a.suggested_growth);
  return grown > width ? grown : 0;
}

void AuditSummary::add(const AuditSummary& part) {
  enabled = enabled || part.enabled;
  sampled_items += part.sampled_items;
  top_items += part.top_items;
  sample_share = std::min(sample_share, part.sample_share);
  from_start = from_start && part.from_start;
}

AccuracyAudit::AccuracyAudit(const NamespaceConfig& config, std::span<const std::unique_ptr<View>> views, bool from_start)
    : sample_size_(config.audit_sample),
      top_size_(config.audit_top),
      max_item_bytes_(config.max_item_bytes),
      sla_(config.audit_sla),
      threshold_(config.audit_sample > 0 ? ~std::uint64_t{0} : 0),
      from_start_(from_start) {
  for (const auto& v : views) {
    ViewRule r;
    r.kind = v->spec().kind;
    r.width = audited_width(config, v->spec());
    if (r.kind == ViewSpec::Kind::decayed) {
      r.half_life = v->spec().half_life;
      r.clock = ForwardDecay::with_half_life(r.half_life);
    }
    if (r.kind == ViewSpec::Kind::window) {
      r.window = v->spec().window;
      r.granularity = window_granularity(r.window);
      r.periods = static_cast<std::int64_t>(bucket_cap(r.window, r.granularity));
      r.inverse = 1 / r.granularity;
    }
    rules_.push_back(r);
  }
  report_.resize(rules_.size());
  breached_.resize(rules_.size(), false);
}

std::size_t AccuracyAudit::planned_bytes(const NamespaceConfig& c, std::size_t key_bytes) {
  if (!enabled(c)) return 0;
  const std::size_t views = (c.all_time ? 1 : 0) + c.half_lives.size() + c.windows.size();
  std::size_t per_item = sizeof(Tracked) + 64 + heap_bytes_max(std::min<std::size_t>(key_bytes, c.max_item_bytes)) + views * sizeof(PerView);
  for (double w : c.windows) per_item += bucket_cap(w, window_granularity(w)) * sizeof(std::pair<std::int64_t, double>);
  // The sample may pass its size by one item before it halves; each view
  // may list audit_top items the sample does not hold.
  const std::size_t items = c.audit_sample + 1 + std::size_t{c.audit_top} * views;
  return sizeof(AccuracyAudit) + items * per_item + views * (sizeof(ViewRule) + sizeof(ViewAudit));
}

void AccuracyAudit::index(Tracked& t) noexcept {
  const std::size_t bit = t.hash & (kFilterBits - 1);
  filter_[bit / 64] |= std::uint64_t{1} << (bit % 64);
  const std::size_t s = t.hash & (kSlots - 1);
  if (slots_[s] == nullptr && !((crowded_[s / 64] >> (s % 64)) & 1)) {
    slots_[s] = &t;
  } else {
    slots_[s] = nullptr;
    crowded_[s / 64] |= std::uint64_t{1} << (s % 64);
  }
}

void AccuracyAudit::rebuild_index() noexcept {
  filter_.fill(0);
  slots_.fill(nullptr);
  crowded_.fill(0);
  for (auto& [h, t] : tracked_) index(t);
}

AccuracyAudit::Tracked& AccuracyAudit::admit(std::string_view key, std::uint64_t hash, bool complete, std::span<const std::unique_ptr<View>> views,
                                             double now, double newest) {
  Tracked t;
  t.hash = hash;
  t.key = std::string(key);
  t.complete = complete;
  t.since = std::isnan(newest) ? kNoTime : newest;
  t.views.resize(rules_.size());
  if (!complete) {
    for (std::size_t v = 0; v < rules_.size(); ++v) {
      if (rules_[v].kind == ViewSpec::Kind::window) continue;  // a window waits until it starts after `since`
      t.views[v].base = views[v]->point(key, hash, now).item.estimate;
      t.views[v].base_time = now;
    }
  }
  auto& slot = tracked_.emplace(hash, std::move(t)).first->second;
  // Indexed in place (a rebuild per admission would make a large sample's
  // first batch quadratic); node addresses survive the map's rehashing.
  index(slot);
  return slot;
}

void AccuracyAudit::restart(const NamespaceConfig& config, std::span<const std::unique_ptr<View>> views, double now, double newest) {
  for (std::size_t v = 0; v < rules_.size(); ++v) {
    rules_[v].width = audited_width(config, views[v]->spec());
    ViewAudit fresh;
    fresh.histogram = report_[v].histogram;
    report_[v] = fresh;
    breached_[v] = false;
  }
  from_start_ = false;
  for (auto& [hash, t] : tracked_) {
    t.complete = false;
    t.since = std::isnan(newest) ? kNoTime : newest;
    for (std::size_t v = 0; v < rules_.size(); ++v) {
      PerView& p = t.views[v];
      p.exact = 0;
      p.buckets.clear();
      p.base = rules_[v].kind == ViewSpec::Kind::window ? 0 : views[v]->point(t.key, hash, now).item.estimate;
      p.base_time = now;
    }
  }
}

void AccuracyAudit::observe_event(const PreparedBatch& batch, std::size_t i, std::span<const std::unique_ptr<View>> views, double now,
                                  double newest) {
  const std::uint64_t h = batch.hashes[i];
  const bool in_sample = sample_key(h) < threshold_;
  // By hash alone, as the views count: another key of the same 64-bit hash
  // (which the sketch cannot tell apart either) counts as the same item.
  Tracked* t = find(h);
  if (t) {
    if (in_sample && !t->sampled) {
      // A top item the sample holds too: possible only when the audit began
      // after the item's first event (else the sample took it then).
      t->sampled = true;
      ++sampled_;
    }
  } else {
    if (!in_sample) return;  // the filter's false positive
    t = &admit(batch.items[i], h, from_start_, views, now, newest);
    t->sampled = true;
    ++sampled_;
  }
  for (std::size_t v = 0; v < rules_.size(); ++v) count(*t, v, batch.times[i], batch.weights[i]);
  if (sampled_ > sample_size_) shrink_sample();
}

void AccuracyAudit::shrink_sample() {
  // Halving the threshold keeps exactly the items whose mix falls under the
  // new one: the sample stays a function of the set of items seen.
  while (sampled_ > sample_size_) {
    threshold_ >>= 1;
    ++halvings_;
    for (auto it = tracked_.begin(); it != tracked_.end();) {
      Tracked& t = it->second;
      if (t.sampled && sample_key(it->first) >= threshold_) {
        t.sampled = false;
        --sampled_;
        const bool top = std::any_of(t.views.begin(), t.views.end(), [](const PerView& p) { return p.top; });
        if (!top) {
          it = tracked_.erase(it);
          continue;
        }
      }
      ++it;
    }
  }
  rebuild_index();
}

void AccuracyAudit::count(Tracked& t, std::size_t v, double time, double weight) {
  ViewRule& r = rules_[v];
  PerView& p = t.views[v];
  switch (r.kind) {
    case ViewSpec::Kind::all_time:
      p.exact += weight;
      return;
    case ViewSpec::Kind::decayed:
      if (time != r.factor_time) {
        r.clock.anchor(time);
        if (r.clock.needs_rebase(time)) {
          const double factor = r.clock.rebase(time);
          for (auto& [h, other] : tracked_) other.views[v].exact *= factor;
        }
        r.factor_time = time;
        r.factor = r.clock.weight_factor(time);
      }
      p.exact += weight * r.factor;
      return;
    case ViewSpec::Kind::window: {
      // floor(time / granularity) without a division (periods are whole
      // seconds, so the products are exact and the correction decides).
      auto index = static_cast<std::int64_t>(std::floor(time * r.inverse));
      if (static_cast<double>(index) * r.granularity > time) --index;
      if (static_cast<double>(index + 1) * r.granularity <= time) ++index;
      auto& b = p.buckets;
      const auto before_period = [](const auto& e, std::int64_t i) { return e.first < i; };
      if (b.empty() || b.back().first < index) {
        b.emplace_back(index, weight);
      } else {
        auto at = std::lower_bound(b.begin(), b.end(), index, before_period);
        if (at != b.end() && at->first == index) {
          at->second += weight;
        } else {
          b.insert(at, {index, weight});
        }
      }
      // Older than the newest bucket by more than the window: no cover reaches it.
      const auto oldest = b.back().first - r.periods + 1;
      if (b.front().first < oldest) {
        b.erase(b.begin(), std::lower_bound(b.begin(), b.end(), oldest, before_period));
      }
      return;
    }
  }
}

std::optional<std::pair<double, double>> AccuracyAudit::reading(const Tracked& t, std::size_t v, double now, double window_start,
                                                                double window_end, double newest) const {
  const ViewRule& r = rules_[v];
  const PerView& p = t.views[v];
  switch (r.kind) {
    case ViewSpec::Kind::all_time:
      return std::pair{p.exact, p.base};
    case ViewSpec::Kind::decayed: {
      const double exact = r.clock.anchored() ? p.exact * r.clock.read_factor(now) : 0;
      return std::pair{exact, p.base * std::exp(-r.clock.lambda() * (now - p.base_time))};
    }
    case ViewSpec::Kind::window: {
      // Tracked part of the time: only a window that starts after tracking
      // began holds nothing the audit missed.
      if (!t.complete && !(window_start > t.since)) return std::nullopt;
      const double g = r.granularity;
      if (std::fmod(window_start, g) != 0) return std::nullopt;  // the cover starts inside an item bucket
      const auto first = static_cast<std::int64_t>(window_start / g);
      std::int64_t last = std::numeric_limits<std::int64_t>::max();  // past the last period summed
      if (!(window_end >= newest)) {  // the cover ends before some counted event
        if (std::fmod(window_end, g) != 0) return std::nullopt;
        last = static_cast<std::int64_t>(window_end / g);
      }
      double exact = 0;
      for (const auto& [index, weight] : p.buckets) {
        if (index >= first && index < last) exact += weight;
      }
      return std::pair{exact, 0.0};
    }
  }
  return std::nullopt;
}

std::vector<AccuracyAudit::SlaChange> AccuracyAudit::pass(std::span<const std::unique_ptr<View>> views, double now, double newest) {
  std::vector<SlaChange> changes;
  const std::size_t n_views = rules_.size();
  std::vector<std::uint64_t> taken_in;  // at this pass: nothing to compare yet
  if (top_size_ > 0) {
    for (auto& [h, t] : tracked_) {
      for (auto& p : t.views) p.top = false;
    }
    for (std::size_t v = 0; v < n_views; ++v) {
      const TopKAnswer listed = views[v]->top(top_size_, now);
      for (const auto& item : listed.items) {
        const std::uint64_t h = hash_key(item.key);
        auto it = tracked_.find(h);
        Tracked* t = nullptr;
        if (it == tracked_.end()) {
          t = &admit(item.key, h, false, views, now, newest);
          taken_in.push_back(h);
        } else if (it->second.key == item.key) {
          t = &it->second;
        }
        if (t) t->views[v].top = true;
      }
    }
    std::erase_if(tracked_, [](const auto& entry) {
      const Tracked& t = entry.second;
      return !t.sampled && std::none_of(t.views.begin(), t.views.end(), [](const PerView& p) { return p.top; });
    });
    rebuild_index();
  }

  std::vector<std::string> keys;
  std::vector<std::uint64_t> hashes;
  std::vector<const Tracked*> items;
  keys.reserve(tracked_.size());
  std::sort(taken_in.begin(), taken_in.end());
  for (const auto& [h, t] : tracked_) {
    if (std::binary_search(taken_in.begin(), taken_in.end(), h)) continue;
    keys.push_back(t.key);
    hashes.push_back(h);
    items.push_back(&t);
  }
  for (std::size_t v = 0; v < n_views; ++v) {
    ViewAudit r;
    r.histogram = report_[v].histogram;
    r.as_of = now;
    const auto points = views[v]->points(keys, hashes, now);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const PointAnswer& a = points[i];
      const auto read = reading(*items[i], v, now, a.window_start, a.window_end, newest);
      if (!read) continue;
      const auto [exact, base] = *read;
      const double estimate = a.item.estimate;
      const double error = rounded_off(std::abs(estimate - base - exact), std::max(estimate, base + exact));
      const double bound = a.accuracy.max_error;
      const double relative = bound > 0 ? error / bound : (error > 0 ? std::numeric_limits<double>::infinity() : 0);
      ++r.compared;
      if (error > bound) ++r.outside_bound;
      r.max_error = std::max(r.max_error, error);
      r.max_relative_error = std::max(r.max_relative_error, relative);
      r.error_bound = std::max(r.error_bound, bound);
      r.histogram.observe(relative);
      if (items[i]->views[v].top) {
        ++r.top_compared;
        const double count = base + exact;  // the item's count as far as the audit knows it (an upper bound)
        if (count > 0) r.top_max_error_share = std::max(r.top_max_error_share, error / count);
      }
    }
    const bool breached = sla_ && r.top_compared > 0 && r.top_max_error_share > *sla_;
    if (breached && rules_[v].width > 0) {
      const double need = std::ceil(r.top_max_error_share / *sla_);
      const double widest = static_cast<double>(std::bit_floor(CountMinShape::kMaxWidth / rules_[v].width));
      r.suggested_growth = static_cast<std::uint32_t>(std::min(widest, std::max(2.0, std::exp2(std::ceil(std::log2(need))))));
      if (r.suggested_growth < 2) r.suggested_growth = 0;  // already the widest sketch there is
    }
    if (breached != breached_[v]) changes.push_back({v, breached});
    breached_[v] = breached;
    report_[v] = std::move(r);
  }
  return changes;
}

AuditSummary AccuracyAudit::summary() const {
  AuditSummary s;
  s.enabled = true;
  s.sampled_items = sampled_;
  s.top_items = tracked_.size() - sampled_;
  s.sample_share = sample_size_ > 0 ? std::exp2(-static_cast<double>(halvings_)) : 0;
  s.from_start = from_start_;
  return s;
}

std::size_t AccuracyAudit::memory_bytes() const noexcept {
  std::size_t bytes = sizeof(*this) + rules_.capacity() * sizeof(ViewRule) + report_.capacity() * sizeof(ViewAudit);
  bytes += (breached_.capacity() + 63) / 64 * sizeof(std::uint64_t);
  // The map's bucket array (one inline bucket allocates nothing) and its
  // nodes: a next pointer and the entry (the hash of an integer key is not cached).
  if (tracked_.bucket_count() > 1) bytes += tracked_.bucket_count() * sizeof(void*);
  for (const auto& [h, t] : tracked_) {
    bytes += sizeof(void*) + sizeof(std::pair<const std::uint64_t, Tracked>) + heap_bytes(t.key) + t.views.capacity() * sizeof(PerView);
    for (const auto& p : t.views) bytes += p.buckets.capacity() * sizeof(p.buckets[0]);
  }
  return bytes;
}

std::optional<double> AccuracyAudit::exact(std::string_view item, std::size_t view, double now) const {
  const auto it = tracked_.find(hash_key(item));
  if (it == tracked_.end() || it->second.key != item || view >= rules_.size()) return std::nullopt;
  const Tracked& t = it->second;
  const ViewRule& r = rules_[view];
  if (r.kind != ViewSpec::Kind::window) return reading(t, view, now, 0, 0, 0)->first;
  // The window ending now, whole buckets.
  const double start = std::floor((now - r.window) / r.granularity) * r.granularity;
  double sum = 0;
  for (const auto& [index, weight] : t.views[view].buckets) {
    if (index * r.granularity >= start) sum += weight;
  }
  return sum;
}

void AccuracyAudit::serialize_state_into(BinaryWriter& w) const {
  const auto blob = w.begin_blob(BlobKind::accuracy_audit, 1);
  w.put<std::uint8_t>(from_start_ ? 1 : 0);
  w.put<std::uint32_t>(halvings_);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(rules_.size()));
  for (const auto& r : rules_) {
    w.put<std::uint8_t>(r.clock.anchored() ? 1 : 0);
    w.put<double>(r.clock.landmark());
  }
  // Keys in hash order: the same state writes the same bytes.
  std::vector<std::uint64_t> order;
  for (const auto& [h, t] : tracked_) order.push_back(h);
  std::sort(order.begin(), order.end());
  w.put<std::uint32_t>(static_cast<std::uint32_t>(order.size()));
  for (std::uint64_t h : order) {
    const Tracked& t = tracked_.at(h);
    w.put_string(t.key);
    w.put<std::uint8_t>(static_cast<std::uint8_t>((t.sampled ? 1 : 0) | (t.complete ? 2 : 0)));
    w.put<double>(t.since);
    for (const auto& p : t.views) {
      w.put<double>(p.base);
      w.put<double>(p.base_time);
      w.put<double>(p.exact);
      w.put<std::uint8_t>(p.top ? 1 : 0);
      w.put<std::uint32_t>(static_cast<std::uint32_t>(p.buckets.size()));
      for (const auto& [index, weight] : p.buckets) {
        w.put<std::int64_t>(index);
        w.put<double>(weight);
      }
    }
  }
  w.end_blob(blob);
}

void AccuracyAudit::restore_state(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::accuracy_audit, 1);
  BinaryReader r(opened.payload, "accuracy audit");
  const auto from_start = r.get<std::uint8_t>();
  if (from_start > 1) r.fail("bad from-start flag");
  const auto halvings = r.get<std::uint32_t>();
  if (halvings > 64 || (sample_size_ == 0 && halvings > 0)) r.fail("bad sample threshold");
  const std::uint64_t threshold = sample_size_ == 0 ? 0 : halvings == 64 ? 0 : ~std::uint64_t{0} >> halvings;
  const auto n_views = r.get<std::uint32_t>();
  if (n_views != rules_.size()) r.fail("holds " + std::to_string(n_views) + " views, the configuration has " + std::to_string(rules_.size()));
  std::vector<ViewRule> rules = rules_;
  for (auto& rule : rules) {
    const auto anchored = r.get<std::uint8_t>();
    const double landmark = r.get<double>();
    if (anchored > 1 || !valid_time(landmark)) r.fail("bad decay landmark");
    if (rule.kind != ViewSpec::Kind::decayed && anchored != 0) r.fail("a decay landmark for a view that does not decay");
    rule.clock = rule.kind == ViewSpec::Kind::decayed ? ForwardDecay::with_half_life(rule.half_life) : ForwardDecay::none();
    if (anchored == 1) rule.clock.anchor(landmark);
    rule.factor_time = std::numeric_limits<double>::quiet_NaN();
  }
  const auto n = r.get<std::uint32_t>();
  if (n > sample_size_ + 1 + std::uint64_t{top_size_} * rules.size()) r.fail("holds more items than the audit tracks");
  std::unordered_map<std::uint64_t, Tracked> tracked;
  std::uint64_t sampled = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    Tracked t;
    t.key = r.get_string(max_item_bytes_);
    t.hash = hash_key(t.key);
    if (t.key.empty()) r.fail("an empty item");
    const auto flags = r.get<std::uint8_t>();
    if (flags > 3) r.fail("bad item flags");
    t.sampled = flags & 1;
    t.complete = flags & 2;
    t.since = r.get<double>();
    if (!(t.since == kNoTime || valid_time(t.since))) r.fail("bad tracking start");
    t.views.resize(rules.size());
    for (std::size_t v = 0; v < rules.size(); ++v) {
      PerView& p = t.views[v];
      p.base = r.get<double>();
      p.base_time = r.get<double>();
      p.exact = r.get<double>();
      if (!std::isfinite(p.base) || !std::isfinite(p.exact) || p.base < 0 || p.exact < 0) r.fail("bad counts");
      if (!valid_time(p.base_time)) r.fail("bad tracking time");
      const auto top = r.get<std::uint8_t>();
      if (top > 1) r.fail("bad top flag");
      p.top = top == 1;
      const auto buckets = r.get<std::uint32_t>();
      if (rules[v].kind != ViewSpec::Kind::window ? buckets != 0 : buckets > bucket_cap(rules[v].window, rules[v].granularity)) r.fail("bad buckets");
      for (std::uint32_t b = 0; b < buckets; ++b) {
        const auto index = r.get<std::int64_t>();
        const double weight = r.get<double>();
        if (!p.buckets.empty() && index <= p.buckets.back().first) r.fail("buckets out of order");
        if (!std::isfinite(weight) || weight < 0) r.fail("bad bucket weight");
        p.buckets.emplace_back(index, weight);
      }
    }
    const std::uint64_t h = t.hash;
    if (t.sampled && sample_key(h) >= threshold) r.fail("a sampled item the threshold leaves out");
    sampled += t.sampled ? 1 : 0;
    if (!tracked.emplace(h, std::move(t)).second) r.fail("an item twice");
  }
  r.expect_end();
  if (sampled > sample_size_) r.fail("a sample larger than audit_sample");
  rules_ = std::move(rules);
  tracked_ = std::move(tracked);
  threshold_ = threshold;
  halvings_ = halvings;
  sampled_ = sampled;
  from_start_ = from_start == 1;
  rebuild_index();
}

}  // namespace ebb::engine
