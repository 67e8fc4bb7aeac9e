#include "ebb/engine/window_view.hpp"

#include <algorithm>
#include <unordered_map>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/string_bytes.hpp"

namespace ebb::engine {
namespace {

using Bucket = TimeRings::Bucket;

// The candidates a sum keeps: plenty beyond any k (answers re-rank the best
// 2k exactly), few enough that a query stays cheap.
constexpr std::size_t kMinKept = 4096;

std::shared_ptr<WindowView::Sum> sum_of(const std::vector<const Bucket*>& buckets, const TimeRings& rings, std::size_t keep) {
  auto sum = std::make_shared<WindowView::Sum>(rings.bucket_shape(), buckets.empty() ? UpdatePolicy::conservative : buckets.front()->sketch.policy());
  struct Seen {
    std::uint64_t hash;
    double lower = 0;
    double held_upper = 0;     // sum of the values of the heaps that hold it
    double held_threshold = 0; // sum of those heaps' thresholds
  };
  std::unordered_map<std::string_view, Seen> seen;
  double thresholds = 0;
  for (const Bucket* b : buckets) {
    // The top level's wider buckets fold in; a bucket from before a
    // resize, narrower, spreads.
    sum->sketch.merge_resized(b->sketch);
    const double threshold = b->heap.threshold();
    thresholds += threshold;
    for (const auto& e : b->heap.entries()) {
      auto [it, fresh] = seen.try_emplace(e.key, Seen{e.hash});
      it->second.lower += std::min(e.aux, e.value);
      it->second.held_upper += e.value;
      it->second.held_threshold += threshold;
    }
  }
  sum->outside = thresholds;
  // Each candidate's bound: the summed sketch's estimate, or the heaps'
  // values where held plus the thresholds of the buckets that do not hold
  // it, whichever is tighter.
  std::vector<std::pair<double, decltype(seen)::const_iterator>> ranked;
  ranked.reserve(seen.size());
  for (auto it = seen.cbegin(); it != seen.cend(); ++it) {
    const Seen& x = it->second;
    ranked.emplace_back(std::min(sum->sketch.estimate(x.hash), x.held_upper + (thresholds - x.held_threshold)), it);
  }
  if (ranked.size() > keep) {
    std::nth_element(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    // A candidate left out has a true count at most its bound.
    sum->outside = std::max(sum->outside, ranked[keep].first);
    ranked.resize(keep);
  }
  sum->candidates.reserve(ranked.size());
  for (const auto& [upper, it] : ranked) sum->candidates.push_back({std::string(it->first), it->second.hash, it->second.lower, upper});
  return sum;
}

// An item's count over the cover's buckets: per bucket the tighter of its
// sketch's minimum and its heap's last estimate, summed; lower bounds from
// the heaps that hold it.
struct ItemCount {
  double upper = 0;
  double lower = 0;
  bool tracked = false;
};

ItemCount count_in(const TimeRings::Cover& cover, std::string_view item, std::uint64_t hash) {
  ItemCount c;
  auto add = [&](const Bucket* b) {
    double upper = b->sketch.estimate(hash);
    if (upper == 0) return;
    if (auto held = b->heap.find(item, hash)) {
      upper = std::min(upper, held->upper);
      c.lower += std::min(held->lower, upper);
      c.tracked = true;
    } else {
      upper = std::min(upper, b->heap.threshold());  // a heap holds every item above it
    }
    c.upper += upper;
  };
  for (const Bucket* b : cover.closed) add(b);
  for (const Bucket* b : cover.open) add(b);
  c.lower = std::min(c.lower, c.upper);
  return c;
}

double total_of(const TimeRings::Cover& cover) {
  double total = 0;
  for (const Bucket* b : cover.closed) total += b->sketch.total();
  for (const Bucket* b : cover.open) total += b->sketch.total();
  return total;
}

// The cover's error bound: each bucket's total times the epsilon of the
// narrower of its width and the sum's (`shape`), but what it counted at a
// narrower width before a resize, whose bound it carries. Without a resize
// every bucket is at least as wide as the sum: epsilon x total.
double error_bound(const TimeRings::Cover& cover, const CountMinShape& shape) {
  double narrower = 0;  // what the narrower buckets and carried parts add to epsilon x total
  auto add = [&](const Bucket* b) {
    const CountMinShape& own = b->sketch.shape();
    if (own.width < shape.width) narrower += (own.epsilon() - shape.epsilon()) * (b->sketch.total() - b->carried.total);
    if (b->carried.any()) narrower += b->carried.error - shape.epsilon() * b->carried.total;
  };
  for (const Bucket* b : cover.closed) add(b);
  for (const Bucket* b : cover.open) add(b);
  return shape.epsilon() * total_of(cover) + narrower;
}

}  // namespace

WindowView::WindowView(ViewSpec spec, std::shared_ptr<TimeRings> rings, bool feeds)
    : spec_(spec), rings_(std::move(rings)), feeds_(feeds) {
  if (spec_.kind != ViewSpec::Kind::window) throw InvalidArgument("WindowView: not a window spec");
}

void WindowView::apply(const PreparedBatch& batch) {
  if (feeds_) rings_->apply(batch);
}

void WindowView::advance_to(double t) {
  if (feeds_) rings_->advance_to(t);
}

template <typename Answer>
Answer WindowView::describe(const TimeRings::Cover& cover, double as_of) const {
  Answer a;
  a.view = spec_;
  a.as_of = as_of;
  a.window_start = cover.start;
  a.window_end = cover.end;
  a.granularity = cover.granularity;
  a.accuracy.epsilon = rings_->bucket_shape().epsilon();
  a.accuracy.confidence = rings_->bucket_shape().confidence();
  a.accuracy.max_error = error_bound(cover, rings_->bucket_shape());
  a.accuracy.candidates = rings_->candidates();
  return a;
}

std::shared_ptr<const WindowView::Sum> WindowView::closed_sum(const TimeRings::Cover& cover) const {
  const std::size_t keep = std::max<std::size_t>(kMinKept, rings_->candidates());
  std::vector<Cache::Key> key;
  key.reserve(cover.closed.size());
  for (const Bucket* b : cover.closed) key.push_back({b->serial, b->late_events});
  {
    std::lock_guard lock(cache_mutex_);
    // (A resize changes the sum's width, not its buckets.)
    if (cache_.sum && cache_.buckets == key && cache_.sum->sketch.shape() == rings_->bucket_shape()) return cache_.sum;
  }
  // Summed outside the lock: concurrent queries of this view do not wait
  // on one another (at worst two sum the same buckets).
  auto sum = sum_of(cover.closed, *rings_, keep);
  std::lock_guard lock(cache_mutex_);
  cache_.sum = sum;
  cache_.buckets = std::move(key);
  return sum;
}

TopKAnswer WindowView::answer(const TimeRings::Cover& cover, std::size_t k, double as_of, const Sum& closed) const {
  const auto open = sum_of(cover.open, *rings_, SIZE_MAX);
  TopKAnswer a = describe<TopKAnswer>(cover, as_of);
  a.total = total_of(cover);
  a.accuracy.guarantee_threshold = closed.outside + open->outside;
  a.accuracy.undersized = k > a.accuracy.candidates;

  // Rank the union by the two sums' bounds, then count the best 2k bucket
  // by bucket (tighter) and report the best k of those.
  struct Bounds {
    std::uint64_t hash;
    double closed = -1, open = -1;  // -1: not a candidate of that sum
  };
  std::unordered_map<std::string_view, Bounds> bounds;
  bounds.reserve(closed.candidates.size() + open->candidates.size());
  for (const auto& c : closed.candidates) bounds.try_emplace(c.key, Bounds{c.hash}).first->second.closed = c.upper;
  for (const auto& c : open->candidates) bounds.try_emplace(c.key, Bounds{c.hash}).first->second.open = c.upper;
  auto outside = [](const Sum& sum, std::uint64_t hash) { return std::min(sum.sketch.estimate(hash), sum.outside); };
  std::vector<std::pair<double, std::string_view>> ranked;
  ranked.reserve(bounds.size());
  for (const auto& [key, b] : bounds) {
    ranked.emplace_back((b.closed >= 0 ? b.closed : outside(closed, b.hash)) + (b.open >= 0 ? b.open : outside(*open, b.hash)), key);
  }
  const std::size_t shortlist = std::min(ranked.size(), 2 * k);
  // An item outside the shortlist is bounded only by its ranking bound, at
  // most the first one left out: the guarantee says so.
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(shortlist), ranked.end(),
                    [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
  for (std::size_t i = 0; i < shortlist; ++i) {
    const std::string_view key = ranked[i].second;
    const ItemCount c = count_in(cover, key, bounds.at(key).hash);
    a.items.push_back({std::string(key), c.upper, c.lower, c.upper});
  }
  if (ranked.size() > shortlist) {
    const auto cut = std::max_element(ranked.begin() + static_cast<std::ptrdiff_t>(shortlist), ranked.end(),
                                      [](const auto& x, const auto& y) { return x.first < y.first; });
    a.accuracy.guarantee_threshold = std::max(a.accuracy.guarantee_threshold, cut->first);
  }
  std::sort(a.items.begin(), a.items.end(), ranks_before);
  a.unlisted_upper = a.accuracy.guarantee_threshold;
  for (std::size_t i = k; i < a.items.size(); ++i) a.unlisted_upper = std::max(a.unlisted_upper, a.items[i].upper);
  if (a.items.size() > k) a.items.resize(k);
  a.accuracy.tail_uncertain = tail_uncertain(a.items, a.unlisted_upper);
  return a;
}

double WindowView::live(double now) const noexcept {
  // A wall clock stepped back behind the newest event still reads the
  // newest buckets whole.
  return std::max(now, rings_->newest());
}

TopKAnswer WindowView::top(std::size_t k, double now) const {
  const double as_of = live(now);
  const auto cover = rings_->cover(spec_.window, as_of);
  return answer(cover, k, as_of, *closed_sum(cover));
}

std::optional<TopKAnswer> WindowView::top_at(std::size_t k, double as_of) const {
  const auto cover = rings_->cover(spec_.window, as_of);
  if (!cover.reached) return std::nullopt;
  if (as_of >= rings_->newest()) return answer(cover, k, as_of, *closed_sum(cover));
  // The past: not worth displacing the live answer's cached sum.
  return answer(cover, k, as_of, *sum_of(cover.closed, *rings_, std::max<std::size_t>(kMinKept, rings_->candidates())));
}

PointAnswer WindowView::point_answer(const TimeRings::Cover& cover, std::string_view item, std::uint64_t hash, double as_of) const {
  PointAnswer a = describe<PointAnswer>(cover, as_of);
  const ItemCount c = count_in(cover, item, hash);
  a.item = {std::string(item), c.upper, c.lower, c.upper};
  a.tracked = c.tracked;
  if (cover.end > cover.start) a.rate = c.upper / (cover.end - cover.start);
  return a;
}

PointAnswer WindowView::point(std::string_view item, std::uint64_t hash, double now) const {
  const double as_of = live(now);
  return point_answer(rings_->cover(spec_.window, as_of), item, hash, as_of);
}

std::optional<PointAnswer> WindowView::point_at(std::string_view item, std::uint64_t hash, double as_of) const {
  const auto cover = rings_->cover(spec_.window, as_of);
  if (!cover.reached) return std::nullopt;
  return point_answer(cover, item, hash, as_of);
}

std::size_t WindowView::memory_bytes() const noexcept {
  std::size_t bytes = sizeof(*this) + (feeds_ ? rings_->memory_bytes() : 0);
  std::lock_guard lock(cache_mutex_);
  bytes += cache_.buckets.capacity() * sizeof(cache_.buckets[0]);
  if (cache_.sum) {
    bytes += sizeof(Sum) + cache_.sum->sketch.memory_bytes();
    for (const auto& c : cache_.sum->candidates) bytes += sizeof(c) + heap_bytes(c.key);
  }
  return bytes;
}

namespace {
// A window view's state: its length, and the rings if it is the view that
// feeds them (null otherwise).
void write_window_state(BinaryWriter& w, double window, const TimeRings* rings) {
  const auto blob = w.begin_blob(BlobKind::window_view, 1);
  w.put<double>(window);
  w.put<std::uint8_t>(rings ? 1 : 0);
  if (rings) w.put_part([&](BinaryWriter& part) { rings->serialize_into(part); });
  w.end_blob(blob);
}
}  // namespace

void WindowView::serialize_state_into(BinaryWriter& w) const { write_window_state(w, spec_.window, feeds_ ? rings_.get() : nullptr); }

View::FrozenState WindowView::freeze_state() const {
  // A copy of the rings shares their buckets (copy-on-write): a few hundred
  // pointers under the lock, not tens of MiB.
  std::shared_ptr<const TimeRings> rings = feeds_ ? std::make_shared<const TimeRings>(*rings_) : nullptr;
  return [window = spec_.window, rings](BinaryWriter& w) { write_window_state(w, window, rings.get()); };
}

void WindowView::restore_state(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::window_view, 1);
  BinaryReader r(opened.payload, "window view");
  const double window = r.get<double>();
  if (window != spec_.window) r.fail("state of another view where " + spec_.label() + " was expected");
  const auto feeds = r.get<std::uint8_t>();
  if (feeds != (feeds_ ? 1 : 0)) r.fail("feeding flag differs from the configuration");
  std::string rings;
  if (feeds_) rings = r.get_string(std::size_t{1} << 40);
  r.expect_end();
  if (feeds_) rings_->restore(rings);
  std::lock_guard lock(cache_mutex_);
  cache_ = Cache{};
}

}  // namespace ebb::engine
