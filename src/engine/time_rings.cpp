#include "ebb/engine/time_rings.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"

namespace ebb::engine {
namespace {

// Each granularity divides the next, so a boundary of a coarse level is one
// of every finer level.
constexpr double kLadder[] = {1, 10, 60, 600, 3600, 86400};
// The window's start may be off by one bucket: at least 24 buckets keep
// that under ~4% of the window.
constexpr double kMinBucketsPerWindow = 24;
constexpr std::size_t kChunk = 256;
constexpr std::size_t kMaxPart = std::size_t{1} << 36;
// 2: the top level counts every event itself (1: it summed its children).
// 3: a bucket carries the error of what it counted before a resize
// (written only when one does, so a build before it reads the rest).
constexpr std::uint16_t kFormatVersion = 3;
constexpr std::uint16_t kUncarriedVersion = 2;

std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

std::int64_t slot_of(std::int64_t index, std::uint32_t slots) noexcept {
  const std::int64_t r = index % static_cast<std::int64_t>(slots);
  return r < 0 ? r + slots : r;
}

}  // namespace

double window_granularity(double window_seconds) {
  double g = kLadder[0];
  for (double step : kLadder) {
    if (window_seconds / step >= kMinBucketsPerWindow) g = step;
  }
  return g;
}

std::vector<RingLevel> plan_ring_levels(std::span<const double> windows) {
  double coarsest = kLadder[0];
  for (double w : windows) coarsest = std::max(coarsest, window_granularity(w));
  std::vector<RingLevel> levels;
  for (double g : kLadder) {
    if (g > coarsest) break;
    levels.push_back({g, 0});
  }
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const double g = levels[i].granularity;
    // A level below the top covers the stretch between a window's start and
    // the next coarser boundary, and its parent's current period: two
    // parents' worth. A window's own level holds the whole window.
    double needed = 2;
    if (i + 1 < levels.size()) needed = 2 * (levels[i + 1].granularity / g) + 2;
    for (double w : windows) {
      if (window_granularity(w) == g) needed = std::max(needed, std::ceil(w / g) + 2);
    }
    // A quarter more: "as it was at T" from memory while T is that recent.
    double slots = needed + std::ceil(needed / 4);
    // A bucket a level holds has its parent held too (late events climb).
    if (i > 0) slots = std::max(slots, std::ceil(levels[i - 1].slots * levels[i - 1].granularity / g) + 1);
    levels[i].slots = static_cast<std::uint32_t>(slots);
  }
  return levels;
}

CountMinShape TimeRings::top_shape(const CountMinShape& bucket_shape) {
  return CountMinShape::with_dimensions(std::min<std::uint64_t>(std::uint64_t{bucket_shape.width} * 2, CountMinShape::kMaxWidth), bucket_shape.depth);
}

TimeRings::TimeRings(std::vector<double> windows, CountMinShape bucket_shape, UpdatePolicy policy, std::uint32_t candidates)
    : windows_(std::move(windows)),
      shape_(bucket_shape),
      top_shape_(top_shape(bucket_shape)),
      policy_(policy),
      candidates_(candidates),
      levels_(plan_ring_levels(windows_)),
      dropped_(windows_.size(), 0),
      newest_(-std::numeric_limits<double>::infinity()) {
  for (std::size_t i = 0; i < levels_.size(); ++i) {
    Level level;
    level.plan = levels_[i];
    level.ratio = i + 1 < levels_.size() ? static_cast<std::int64_t>(levels_[i + 1].granularity / levels_[i].granularity) : 1;
    level.slots.resize(levels_[i].slots);
    rings_.push_back(std::move(level));
  }
  estimates_.resize(kChunk);
  offered_.resize(kChunk);
}

std::int64_t TimeRings::index_at(std::size_t level, double t) const noexcept {
  return static_cast<std::int64_t>(std::floor(t / rings_[level].plan.granularity));
}

bool TimeRings::holds(std::size_t level, std::int64_t index) const noexcept {
  const Level& l = rings_[level];
  return l.head == kNoHead || index > l.head - static_cast<std::int64_t>(l.plan.slots);
}

const TimeRings::Bucket* TimeRings::find(std::size_t level, std::int64_t index) const noexcept {
  const Level& l = rings_[level];
  const auto& b = l.slots[slot_of(index, l.plan.slots)];
  return b && b->index == index ? b.get() : nullptr;
}

TimeRings::Bucket& TimeRings::open_bucket(std::size_t level, std::int64_t index) {
  Level& l = rings_[level];
  auto& b = l.slots[slot_of(index, l.plan.slots)];
  // use_count() == 1: no frozen copy holds the bucket (one that let go of
  // it did so with a release; the fence orders its reads before our writes).
  const bool shared = b && b.use_count() > 1;
  if (b && !shared) std::atomic_thread_fence(std::memory_order_acquire);
  if (!b || (shared && b->index != index)) {
    b = std::make_shared<Bucket>(index, shape_of(level), policy_, candidates_);
  } else if (b->index != index) {
    // The slot's previous bucket is older than the level keeps; it was
    // added into its parent when it closed.
    b->index = index;
    // (Of the width before a resize: it opens at the rings' width now.)
    if (b->sketch.shape() == shape_of(level)) b->sketch.clear();
    else b->sketch = CountMin(shape_of(level), policy_);
    b->carried = {};
    b->heap.clear();
    b->late_events = 0;
  } else if (shared) {
    b = std::make_shared<Bucket>(*b);  // copy on write
  } else {
    return *b;  // the common case: this rings' own bucket, written again
  }
  b->serial = next_serial_++;
  return *b;
}

TimeRings::Widening TimeRings::prepare_widen(std::uint32_t width) const {
  Widening w;
  if (width == shape_.width) return w;
  if (!std::has_single_bit(width) || width < shape_.width || width > CountMinShape::kMaxWidth) {
    throw InvalidArgument("window_sketch_width: can only grow by a power of two (from " + std::to_string(shape_.width) + " to at most " +
                          std::to_string(CountMinShape::kMaxWidth) + "; got " + std::to_string(width) + ")");
  }
  w.shape = CountMinShape::with_dimensions(width, shape_.depth);
  // The heads count on at the new width from now on, carrying what they
  // hold (each counter copied to the columns that start with its index:
  // nothing under-counts, and that part keeps its narrower error). Closed
  // buckets keep their width until they leave the rings.
  for (std::size_t level = 0; level < rings_.size(); ++level) {
    const std::int64_t head = rings_[level].head;
    if (head == kNoHead || !find(level, head)) continue;
    const auto& slot = rings_[level].slots[slot_of(head, rings_[level].plan.slots)];
    const std::uint32_t target = level == top() && top() > 0 ? top_shape(*w.shape).width : width;
    if (slot->sketch.shape().width >= target) continue;
    // A bucket a frozen copy shares is copied (copy on write), here, where
    // an allocation failing changes nothing.
    w.heads.push_back({level, slot.use_count() > 1 ? std::make_shared<Bucket>(*slot) : slot, slot->sketch.widened(target)});
  }
  return w;
}

void TimeRings::commit_widen(Widening&& w) noexcept {
  if (!w.shape) return;
  shape_ = *w.shape;
  top_shape_ = top_shape(shape_);
  for (auto& h : w.heads) {
    Level& l = rings_[h.level];
    auto& slot = l.slots[slot_of(l.head, l.plan.slots)];
    if (slot == h.bucket) std::atomic_thread_fence(std::memory_order_acquire);  // (as open_bucket: a frozen copy let go of it)
    slot = std::move(h.bucket);
    slot->carried.carry_all(slot->sketch.shape().epsilon(), slot->sketch.total());
    slot->sketch = std::move(h.sketch);
    slot->serial = next_serial_++;  // (its content changed: sums over it are stale)
  }
}

void TimeRings::advance(std::size_t level, std::int64_t index) {
  Level& l = rings_[level];
  if (level + 1 < rings_.size()) {
    // The closing head moves up into its parent (the parent level's head)
    // before that level advances in turn; the top level counts its events
    // itself.
    if (l.head != kNoHead && level + 1 != top()) {
      const Bucket* closing = find(level, l.head);
      if (closing && !closing->sketch.empty()) {
        Bucket& parent = open_bucket(level + 1, floor_div(l.head, l.ratio));
        parent.heap.merge(closing->heap, parent.sketch, closing->sketch);
        // A bucket from before a resize is narrower: its error comes along.
        const bool narrower = closing->sketch.shape().width < parent.sketch.shape().width;
        parent.carried.add(narrower ? CarriedError{closing->sketch.total(), closing->error_bound()} : closing->carried);
        parent.sketch.merge_resized(closing->sketch);
      }
    }
    const std::int64_t parent = floor_div(index, l.ratio);
    const Level& up = rings_[level + 1];
    if (up.head == kNoHead || parent > up.head) advance(level + 1, parent);
  }
  l.head = index;
  (void)open_bucket(level, index);
}

void TimeRings::add_run(Bucket& head, const PreparedBatch& batch, std::size_t begin, std::size_t end) {
  for (std::size_t at = begin; at < end; at += kChunk) {
    const std::size_t n = std::min(kChunk, end - at);
    head.sketch.update_batch(std::span<const std::uint64_t>(batch.hashes.data() + at, n), std::span<const double>(batch.weights.data() + at, n),
                             std::span<double>(estimates_.data(), n));
    head.heap.offer_batch(batch.items.data() + at, batch.hashes.data() + at, batch.weights.data() + at, estimates_.data(), n, offered_.data());
  }
}

void TimeRings::add_late(std::string_view item, std::uint64_t hash, double weight, double t) {
  std::size_t level = 0;
  while (level < rings_.size() && !holds(level, index_at(level, t))) ++level;
  if (level == rings_.size()) {
    ++unplaced_;
    return;
  }
  auto add = [&](std::size_t at, std::int64_t index) {
    Bucket& b = open_bucket(at, index);
    b.heap.offer(item, hash, weight, b.sketch.update(hash, weight));
    if (index != rings_[at].head) ++b.late_events;
  };
  // Below the top: the bucket, and each parent it was already added into.
  for (; level < top(); ++level) {
    const std::int64_t index = index_at(level, t);
    add(level, index);
    if (index == rings_[level].head) break;  // a head: its events move up when it closes
  }
  // The top level counts every event itself.
  if (holds(top(), index_at(top(), t))) add(top(), index_at(top(), t));
}

void TimeRings::apply(const PreparedBatch& batch) {
  const std::size_t n = batch.size();
  if (n == 0) return;
  for (std::size_t w = 0; w < windows_.size(); ++w) {
    const double cutoff = batch.now - windows_[w];
    if (batch.min_time >= cutoff) continue;
    std::uint64_t late = 0;
    for (std::size_t i = 0; i < n; ++i) late += batch.times[i] < cutoff;
    dropped_[w] += late;
  }
  std::size_t i = 0;
  while (i < n) {
    if (!(batch.times[i] < kMaxTime)) {
      ++unplaced_;
      ++i;
      continue;
    }
    const std::int64_t index = index_at(0, batch.times[i]);
    if (rings_[0].head == kNoHead || index > rings_[0].head) advance(0, index);
    if (index == rings_[0].head) {
      std::size_t j = i + 1;
      while (j < n && batch.times[j] < kMaxTime && index_at(0, batch.times[j]) == index) ++j;
      add_run(open_bucket(0, index), batch, i, j);
      // The top level counts every event itself: conservative update over
      // its whole period, where a sum of merged children would add up each
      // child's over-count.
      if (top() > 0) add_run(open_bucket(top(), rings_[top()].head), batch, i, j);
      for (; i < j; ++i) newest_ = std::max(newest_, batch.times[i]);
    } else {
      add_late(batch.items[i], batch.hashes[i], batch.weights[i], batch.times[i]);
      ++i;
    }
  }
}

void TimeRings::advance_to(double t) {
  if (!(t >= 0 && t < kMaxTime) || t <= newest_) return;
  const std::int64_t index = index_at(0, t);
  if (rings_[0].head == kNoHead || index > rings_[0].head) advance(0, index);
  newest_ = t;
}

void TimeRings::collect(std::size_t level, std::int64_t index, Cover& cover) const {
  if (index == rings_[level].head && level == top()) {
    // The top level's head holds its period's every event.
    const Bucket* b = find(level, index);
    if (b && !b->sketch.empty()) cover.open.push_back(b);
    return;
  }
  if (index == rings_[level].head) {
    // A head holds its closed children; the heads below it hold the rest.
    for (std::size_t j = 0; j <= level; ++j) {
      const Bucket* b = find(j, rings_[j].head);
      if (b && !b->sketch.empty()) cover.open.push_back(b);
    }
    return;
  }
  const Bucket* b = find(level, index);
  if (b && !b->sketch.empty()) cover.closed.push_back(b);
}

bool TimeRings::walk_back(double cursor, double start, Cover& cover, double start_granularity) const {
  // The finest level that still holds the bucket of the start: finer levels
  // may bridge to its grid near the end, but stepping down to them near the
  // start would walk into buckets they no longer keep.
  std::size_t reach = 0;
  while (reach < rings_.size() && !holds(reach, index_at(reach, start))) ++reach;
  if (reach == rings_.size()) {
    cover.start = cursor;
    return false;
  }
  auto step = [&](std::size_t level, bool must_fit) {
    const double g = rings_[level].plan.granularity;
    if (std::fmod(cursor, g) != 0 || (must_fit && cursor - g < start)) return false;
    const std::int64_t index = static_cast<std::int64_t>(cursor / g) - 1;
    if (!holds(level, index)) return false;
    collect(level, index, cover);
    cursor -= g;
    start_granularity = g;
    return true;
  };
  while (cursor > start) {
    const std::size_t finest = std::fmod(cursor, rings_[reach].plan.granularity) == 0 ? reach : 0;
    bool took = false;
    for (std::size_t level = rings_.size(); level-- > finest && !took;) took = step(level, true);
    if (took) continue;
    // No whole bucket fits: the finest one ending here takes the start
    // back to its boundary.
    for (std::size_t level = finest; level < rings_.size() && !took; ++level) took = step(level, false);
    if (!took) {
      cover.start = cursor;
      return false;
    }
    break;
  }
  cover.start = cursor;
  cover.granularity = std::max(cover.granularity, start_granularity);
  return true;
}

TimeRings::Cover TimeRings::cover(double window, double as_of) const {
  if (!(as_of >= 0 && as_of < kMaxTime)) {
    Cover none;
    none.start = none.end = as_of;
    return none;
  }
  if (as_of >= newest_) {
    // Nothing after as_of is counted: the newest buckets end at as_of. The
    // first piece is the coarsest bucket holding as_of that starts inside
    // the window (its heads below it included).
    const double start = as_of - window;
    std::size_t level = rings_.size();
    while (level-- > 0) {
      if (index_at(level, as_of) * rings_[level].plan.granularity >= start || level == 0) break;
    }
    Cover c;
    c.end = as_of;
    const std::int64_t index = index_at(level, as_of);
    collect(level, index, c);
    const double g = rings_[level].plan.granularity;
    c.reached = walk_back(static_cast<double>(index) * g, start, c, g);
    return c;
  }
  // Before the newest event the end is a bucket boundary at or before as_of:
  // the finest level that still holds as_of's bucket, or a coarser one if the
  // finer cannot reach back to the start.
  // The window then ends there: W long, back from that boundary.
  for (std::size_t level = 0; level < rings_.size(); ++level) {
    const std::int64_t index = index_at(level, as_of);
    if (!holds(level, index)) continue;
    Cover c;
    const double g = rings_[level].plan.granularity;
    c.end = static_cast<double>(index) * g;
    c.granularity = g;  // the end moved back by up to this
    if (walk_back(c.end, c.end - window, c, g) && c.start < c.end) {
      c.reached = true;
      return c;
    }
  }
  Cover none;
  none.start = none.end = as_of;
  return none;
}

std::uint64_t TimeRings::dropped(double window) const noexcept {
  for (std::size_t w = 0; w < windows_.size(); ++w) {
    if (windows_[w] == window) return dropped_[w];
  }
  return 0;
}

std::size_t TimeRings::memory_bytes() const noexcept {
  std::size_t bytes = sizeof(*this) + windows_.capacity() * sizeof(double) + dropped_.capacity() * sizeof(std::uint64_t) +
                      estimates_.capacity() * sizeof(double) + offered_.capacity() * sizeof(std::uint32_t);
  for (const Level& l : rings_) {
    bytes += sizeof(Level) + l.slots.capacity() * sizeof(std::shared_ptr<Bucket>);
    for (const auto& b : l.slots) {
      if (b) bytes += sizeof(Bucket) + b->sketch.memory_bytes() - sizeof(CountMin) + b->heap.memory_bytes() - sizeof(CandidateHeap);
    }
  }
  return bytes;
}

std::string TimeRings::serialize() const {
  return written([this](BinaryWriter& w) { serialize_into(w); });
}

void TimeRings::serialize_into(BinaryWriter& w) const {
  // The buckets each level still holds (a slot may keep one older than
  // that until its index comes round again).
  auto kept = [&](std::size_t level, const std::shared_ptr<Bucket>& b) { return b && !b->sketch.empty() && holds(level, b->index); };
  // Version 3 once a resize shows (a bucket carries, or is narrower than
  // its level): a build before it would take such rings for damage.
  bool carries = false;
  for (std::size_t level = 0; level < rings_.size(); ++level) {
    for (const auto& b : rings_[level].slots) {
      carries = carries || (kept(level, b) && (b->carried.any() || b->sketch.shape().width < shape_of(level).width));
    }
  }
  const auto blob = w.begin_blob(BlobKind::time_rings, carries ? kFormatVersion : kUncarriedVersion);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(rings_.size()));
  for (const Level& l : rings_) {
    w.put<double>(l.plan.granularity);
    w.put<std::uint32_t>(l.plan.slots);
    w.put<std::int64_t>(l.head);
  }
  w.put<std::uint32_t>(static_cast<std::uint32_t>(windows_.size()));
  for (std::size_t i = 0; i < windows_.size(); ++i) {
    w.put<double>(windows_[i]);
    w.put<std::uint64_t>(dropped_[i]);
  }
  w.put<std::uint64_t>(unplaced_);
  w.put<double>(newest_);
  std::uint32_t buckets = 0;
  for (std::size_t level = 0; level < rings_.size(); ++level) {
    for (const auto& b : rings_[level].slots) buckets += kept(level, b);
  }
  w.put<std::uint32_t>(buckets);
  for (std::size_t level = 0; level < rings_.size(); ++level) {
    for (const auto& b : rings_[level].slots) {
      if (!kept(level, b)) continue;
      w.put<std::uint8_t>(static_cast<std::uint8_t>(level));
      w.put<std::int64_t>(b->index);
      w.put_part([&](BinaryWriter& part) { b->sketch.serialize_into(part); });
      w.put_part([&](BinaryWriter& part) { b->heap.serialize_into(part); });
      if (carries) b->carried.write(w);
    }
  }
  w.end_blob(blob);
}

void TimeRings::restore(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::time_rings, kFormatVersion);
  BinaryReader r(opened.payload, "time rings");
  const auto level_count = r.get<std::uint32_t>();
  if (level_count != rings_.size()) r.fail("holds " + std::to_string(level_count) + " levels, the windows need " + std::to_string(rings_.size()));
  std::vector<std::int64_t> heads(level_count);
  for (std::uint32_t i = 0; i < level_count; ++i) {
    const double g = r.get<double>();
    const auto slots = r.get<std::uint32_t>();
    if (!(RingLevel{g, slots} == rings_[i].plan)) r.fail("level " + std::to_string(i) + " differs from the windows' plan");
    heads[i] = r.get<std::int64_t>();
  }
  // Heads are the newest bucket's ancestors: each the parent of the one below.
  for (std::uint32_t i = 0; i + 1 < level_count; ++i) {
    const bool none = heads[i] == kNoHead;
    if (none != (heads[i + 1] == kNoHead) || (!none && floor_div(heads[i], rings_[i].ratio) != heads[i + 1])) r.fail("heads are not nested");
  }
  const auto window_count = r.get<std::uint32_t>();
  if (window_count != windows_.size()) r.fail("holds " + std::to_string(window_count) + " windows, the configuration has " + std::to_string(windows_.size()));
  std::vector<std::uint64_t> dropped(window_count);
  for (std::uint32_t i = 0; i < window_count; ++i) {
    if (r.get<double>() != windows_[i]) r.fail("window " + std::to_string(i) + " differs from the configuration");
    dropped[i] = r.get<std::uint64_t>();
  }
  const auto unplaced = r.get<std::uint64_t>();
  const double newest = r.get<double>();
  // The newest event is in the finest head; before any event there is none.
  if (heads[0] == kNoHead) {
    if (newest != -std::numeric_limits<double>::infinity()) r.fail("a newest event time without a head bucket");
  } else if (!(newest >= 0 && newest < kMaxTime) || heads[0] != index_at(0, newest)) {
    r.fail("newest event time and head bucket disagree");
  }
  std::vector<Level> rings(level_count);
  for (std::uint32_t i = 0; i < level_count; ++i) {
    rings[i].plan = rings_[i].plan;
    rings[i].ratio = rings_[i].ratio;
    rings[i].head = heads[i];
    rings[i].slots.resize(rings_[i].plan.slots);
  }
  const auto buckets = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < buckets; ++i) {
    const auto level = r.get<std::uint8_t>();
    const auto index = r.get<std::int64_t>();
    const std::string sketch_blob = r.get_string(kMaxPart);
    const std::string heap_blob = r.get_string(kMaxPart);
    const CarriedError carried = opened.version >= 3 ? CarriedError::read(r) : CarriedError{};
    if (level >= level_count) r.fail("bucket of level " + std::to_string(level) + " beyond the plan");
    Level& l = rings[level];
    if (l.head == kNoHead || index > l.head || index <= l.head - static_cast<std::int64_t>(l.plan.slots)) r.fail("bucket outside its level's ring");
    auto& slot = l.slots[slot_of(index, l.plan.slots)];
    if (slot) r.fail("two buckets in one slot");
    CountMin sketch = CountMin::deserialize(sketch_blob);
    // Version 1's top level was as wide as the rest: widened, it never
    // under-counts and keeps its narrower error.
    if (opened.version == 1 && level == level_count - 1 && level > 0 && sketch.shape() == shape_ && sketch.policy() == policy_) {
      sketch = sketch.widened(top_shape_.width);
    }
    // A bucket from before a resize (widen()) is narrower than the rest:
    // a power-of-two divisor of its level's width, of the same depth.
    const CountMinShape& expected = shape_of(level);
    if (sketch.shape().depth != expected.depth || sketch.shape().width > expected.width || expected.width % sketch.shape().width != 0 ||
        sketch.policy() != policy_) {
      r.fail("bucket sketch shape differs from the configuration");
    }
    slot = std::make_shared<Bucket>(index, shape_, policy_, 1);
    slot->serial = next_serial_++;
    slot->sketch = std::move(sketch);
    slot->heap = CandidateHeap::deserialize(heap_blob, candidates_);
    slot->carried = carried;
  }
  r.expect_end();
  if (opened.version == 1 && level_count > 1 && heads[0] != kNoHead) {
    // Version 1 merged every head into its parent, the top level's too, when
    // it closed: the top head lacks what the heads below it hold. Since
    // version 2 the top level counts every event itself.
    const std::size_t t = level_count - 1;
    auto& top_slot = rings[t].slots[slot_of(heads[t], rings[t].plan.slots)];
    if (!top_slot) {
      top_slot = std::make_shared<Bucket>(heads[t], top_shape_, policy_, candidates_);
      top_slot->serial = next_serial_++;
    }
    for (std::size_t level = 0; level < t; ++level) {
      const auto& below = rings[level].slots[slot_of(heads[level], rings[level].plan.slots)];
      if (!below || below->index != heads[level] || below->sketch.empty()) continue;
      top_slot->heap.merge(below->heap, top_slot->sketch, below->sketch);
      top_slot->sketch.merge(below->sketch.widened(top_shape_.width));
    }
  }
  rings_ = std::move(rings);
  dropped_ = std::move(dropped);
  unplaced_ = unplaced;
  newest_ = newest;
}

}  // namespace ebb::engine
