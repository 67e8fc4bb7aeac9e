#include "ebb/engine/exact_table.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/core/indexed_heap.hpp"
#include "ebb/core/string_bytes.hpp"
#include "ebb/engine/time_rings.hpp"

namespace ebb::engine {
namespace {

constexpr std::int64_t kNoHead = std::numeric_limits<std::int64_t>::min();

// Saturated at +-2^52 buckets (every index exact in a double, and far from
// int64 overflow when slots are added or taken): a time read from a damaged
// checkpoint, or an event in the year 10^8, cannot overflow the index.
constexpr double kIndexLimit = 4503599627370496.0;  // 2^52
std::int64_t bucket_index(double t, double granularity) noexcept {
  const double q = std::floor(t / granularity);
  return static_cast<std::int64_t>(q < kIndexLimit ? (q > -kIndexLimit ? q : -kIndexLimit) : kIndexLimit);  // NaN saturates high
}

// The first of a ring's buckets (ascending) at or after bucket `index`.
template <typename Buckets>
auto first_from(Buckets& buckets, std::int64_t index) {
  return std::lower_bound(buckets.begin(), buckets.end(), index, [](const ExactTable::Bucket& b, std::int64_t i) { return b.index < i; });
}

// The buckets one granularity keeps: its longest window, one partial head
// bucket, and a quarter more for answers about the recent past.
std::int64_t ring_slots(double window, double granularity) {
  const double buckets = std::ceil(window / granularity);
  return static_cast<std::int64_t>(buckets + std::ceil(buckets / 4)) + 1;
}

std::vector<ExactTable::Ring> plan_rings(const std::vector<double>& windows, std::vector<std::size_t>& window_ring) {
  std::vector<ExactTable::Ring> rings;
  for (double w : windows) {
    const double g = window_granularity(w);
    auto it = std::find_if(rings.begin(), rings.end(), [g](const ExactTable::Ring& r) { return r.granularity == g; });
    if (it == rings.end()) it = rings.insert(rings.end(), ExactTable::Ring{g, 0});
    it->slots = std::max(it->slots, ring_slots(w, g));
    window_ring.push_back(static_cast<std::size_t>(it - rings.begin()));
  }
  return rings;
}

// Per record, whatever its rings hold: key, hash, all-time count, newest
// time, a score per half-life, a ring vector per granularity, heap
// position and heap entry.
std::size_t record_bytes(std::size_t half_lives, std::size_t rings) {
  return sizeof(std::string) + sizeof(std::uint64_t) + 2 * sizeof(double) + half_lives * sizeof(double) +
         rings * sizeof(std::vector<ExactTable::Bucket>) + 2 * sizeof(std::uint32_t);
}

constexpr std::size_t kMaxKey = std::size_t{1} << 20;

}  // namespace

ExactTable::ExactTable(const NamespaceConfig& config)
    : half_lives_(config.half_lives),
      windows_(config.windows),
      max_items_(config.max_items),
      first_time_(std::numeric_limits<double>::infinity()),
      newest_time_(-std::numeric_limits<double>::infinity()) {
  rings_ = plan_rings(windows_, window_ring_);
  evict_by_ = config.all_time ? kByAllTime : kByNewest;
  for (std::size_t h = 0; h < half_lives_.size(); ++h) {
    clocks_.push_back(ForwardDecay::with_half_life(half_lives_[h]));
    if (evict_by_ >= half_lives_.size() || half_lives_[h] > half_lives_[evict_by_]) evict_by_ = h;
  }
  scalers_.resize(half_lives_.size());
  heads_.assign(rings_.size(), kNoHead);
  dropped_.assign(windows_.size(), 0);
  for (Aggregate* a : {&total_, &evicted_}) {
    a->scores.assign(half_lives_.size(), 0.0);
    a->rings.resize(rings_.size());
  }
  index_.assign(16, 0);
}

std::uint64_t ExactTable::dropped(double window) const noexcept {
  for (std::size_t w = 0; w < windows_.size(); ++w) {
    if (windows_[w] == window) return dropped_[w];
  }
  return 0;
}

// ---- ingest ----

void ExactTable::rebase(std::size_t h, double t) {
  const double f = clocks_[h].rebase(t);
  const std::size_t n = half_lives_.size();
  for (std::size_t s = 0; s < keys_.size(); ++s) scores_[s * n + h] *= f;
  total_.scores[h] *= f;
  evicted_.scores[h] *= f;
  scalers_[h].reset();
  // Scaling keeps the order of different keys but may make two equal, and
  // ties are broken by hash: re-establish the heap on the scaled keys.
  if (h == evict_by_) {
    for (std::size_t pos = heap_.size() / 2; pos-- > 0;) sift_down(pos);
  }
}

void ExactTable::add_to_ring(std::vector<Bucket>& buckets, std::int64_t index, double weight, std::int64_t oldest) {
  // Events arrive mostly in time order: the newest bucket, or a new one after it.
  if (buckets.empty() || buckets.back().index < index) {
    buckets.push_back({index, weight});
  } else {
    auto it = first_from(buckets, index);
    if (it != buckets.end() && it->index == index) it->weight += weight;
    else buckets.insert(it, {index, weight});
  }
  drop_before(buckets, oldest);
}

void ExactTable::drop_before(std::vector<Bucket>& buckets, std::int64_t oldest) { buckets.erase(buckets.begin(), first_from(buckets, oldest)); }

void ExactTable::apply(const PreparedBatch& batch) {
  if (batch.size() == 0) return;
  const std::size_t nh = half_lives_.size(), nr = rings_.size();
  for (std::size_t h = 0; h < nh; ++h) {
    // Every batch starts its factors afresh (one exp() each), so the state
    // is a function of the batches alone: a table restored from a
    // checkpoint goes on exactly as the one that wrote it.
    scalers_[h].reset();
    clocks_[h].anchor(batch.max_time);
    // Up front, so no event of the batch needs a factor past the guard.
    if (clocks_[h].needs_rebase(batch.max_time)) rebase(h, batch.max_time);
  }
  for (std::size_t r = 0; r < nr; ++r) heads_[r] = std::max(heads_[r], bucket_index(batch.max_time, rings_[r].granularity));
  first_time_ = std::min(first_time_, batch.min_time);
  newest_time_ = std::max(newest_time_, batch.max_time);

  for (std::size_t i = 0; i < batch.size(); ++i) {
    const double t = batch.times[i], w = batch.weights[i];
    std::uint32_t rec = find(batch.items[i], batch.hashes[i]);
    if (rec == kNone) rec = admit(batch.items[i], batch.hashes[i]);
    all_time_[rec] += w;
    total_.all_time += w;
    newest_[rec] = std::max(newest_[rec], t);
    for (std::size_t h = 0; h < nh; ++h) {
      const double scaled = w * scalers_[h].factor(clocks_[h], t);
      scores_[rec * nh + h] += scaled;
      total_.scores[h] += scaled;
    }
    for (std::size_t r = 0; r < nr; ++r) {
      const std::int64_t index = bucket_index(t, rings_[r].granularity);
      if (index < oldest(r)) continue;  // older than any window this ring serves
      add_to_ring(ring_buckets_[rec * nr + r], index, w, oldest(r));
      add_to_ring(total_.rings[r], index, w, oldest(r));
    }
    for (std::size_t x = 0; x < windows_.size(); ++x) {
      if (t < batch.now - windows_[x]) ++dropped_[x];
    }
    sift_down(heap_pos_[rec]);  // its key only grew
  }
  // The evicted aggregate's old buckets go as the rings move on.
  for (std::size_t r = 0; r < nr; ++r) drop_before(evicted_.rings[r], oldest(r));
}

std::uint32_t ExactTable::admit(std::string_view key, std::uint64_t hash) {
  if (live_ >= max_items_) evict_lowest();
  std::uint32_t rec;
  const std::size_t nh = half_lives_.size(), nr = rings_.size();
  if (!free_.empty()) {
    rec = free_.back();
    free_.pop_back();
    for (std::size_t h = 0; h < nh; ++h) scores_[rec * nh + h] = 0;
    for (std::size_t r = 0; r < nr; ++r) ring_buckets_[rec * nr + r].clear();
    all_time_[rec] = 0;
    newest_[rec] = 0;
  } else {
    rec = static_cast<std::uint32_t>(keys_.size());
    keys_.emplace_back();
    hashes_.push_back(0);
    all_time_.push_back(0);
    newest_.push_back(0);
    scores_.resize(scores_.size() + nh, 0.0);
    ring_buckets_.resize(ring_buckets_.size() + nr);
    heap_pos_.push_back(0);
  }
  keys_[rec].assign(key);
  hashes_[rec] = hash;
  ++live_;
  index_insert(rec);
  heap_.push_back(rec);
  sift_up(heap_.size() - 1);  // places it, its position with it
  return rec;
}

void ExactTable::evict_lowest() {
  const std::uint32_t rec = heap_.front();
  const std::size_t nh = half_lives_.size(), nr = rings_.size();
  evicted_.all_time += all_time_[rec];
  for (std::size_t h = 0; h < nh; ++h) evicted_.scores[h] += scores_[rec * nh + h];
  for (std::size_t r = 0; r < nr; ++r) {
    for (const Bucket& b : ring_buckets_[rec * nr + r]) add_to_ring(evicted_.rings[r], b.index, b.weight, oldest(r));
  }
  ++evictions_;
  index_erase(rec);
  const std::uint32_t last = heap_.back();
  heap_.pop_back();
  if (last != rec) {
    heap_place(0, last);
    sift_down(0);
  }
  std::string().swap(keys_[rec]);  // a long key's bytes go now, not at the slot's reuse
  free_.push_back(rec);
  --live_;
}

// ---- the eviction heap ----

bool ExactTable::evicts_before(std::uint32_t a, std::uint32_t b) const noexcept {
  const double ka = evict_key(a), kb = evict_key(b);
  if (ka != kb) return ka < kb;
  if (hashes_[a] != hashes_[b]) return hashes_[a] < hashes_[b];
  return keys_[a] < keys_[b];
}

void ExactTable::sift_up(std::size_t pos) noexcept {
  heap_sift_up(heap_, pos, [this](std::uint32_t a, std::uint32_t b) { return evicts_before(a, b); },
               [this](std::size_t at, std::uint32_t record) { heap_place(at, record); });
}

void ExactTable::sift_down(std::size_t pos) noexcept {
  heap_sift_down(heap_, pos, [this](std::uint32_t a, std::uint32_t b) { return evicts_before(a, b); },
                 [this](std::size_t at, std::uint32_t record) { heap_place(at, record); });
}

// ---- the index ----

std::uint32_t ExactTable::find(std::string_view key, std::uint64_t hash) const noexcept {
  const std::size_t mask = index_.size() - 1;
  const std::uint64_t tag = tag_of(hash);
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const std::uint64_t cell = index_[i];
    if (cell == 0) return kNone;
    // The hash's high half in the cell: a probe past another key touches no record.
    if ((cell & ~std::uint64_t{UINT32_MAX}) != tag) continue;
    const auto rec = static_cast<std::uint32_t>(cell) - 1;
    if (keys_[rec] == key) return rec;
  }
}

void ExactTable::index_insert(std::uint32_t rec) {
  if ((live_ + 1) * 2 > index_.size()) index_grow();  // load at most 1/2: short probes
  const std::size_t mask = index_.size() - 1;
  std::size_t i = hashes_[rec] & mask;
  while (index_[i] != 0) i = (i + 1) & mask;
  index_[i] = tag_of(hashes_[rec]) | (rec + 1);
}

void ExactTable::index_grow() {
  std::vector<std::uint64_t> old(index_.size() * 2, 0);
  old.swap(index_);
  const std::size_t mask = index_.size() - 1;
  for (std::uint64_t cell : old) {
    if (cell == 0) continue;
    std::size_t i = hashes_[static_cast<std::uint32_t>(cell) - 1] & mask;
    while (index_[i] != 0) i = (i + 1) & mask;
    index_[i] = cell;
  }
}

void ExactTable::index_erase(std::uint32_t rec) {
  const std::size_t mask = index_.size() - 1;
  std::size_t hole = hashes_[rec] & mask;
  while (static_cast<std::uint32_t>(index_[hole]) != rec + 1) hole = (hole + 1) & mask;
  // Backward-shift deletion: later cells of the probe run move into the
  // hole unless their home lies cyclically in (hole, j].
  for (std::size_t j = (hole + 1) & mask; index_[j] != 0; j = (j + 1) & mask) {
    const std::size_t home = hashes_[static_cast<std::uint32_t>(index_[j]) - 1] & mask;
    const bool stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (stays) continue;
    index_[hole] = index_[j];
    hole = j;
  }
  index_[hole] = 0;
}

// ---- reads ----

std::optional<ExactTable::Reading> ExactTable::reading(const ViewSpec& view, double as_of, bool live) const {
  Reading r;
  r.kind = view.kind;
  r.end = as_of;
  r.start = std::isfinite(first_time_) ? std::min(first_time_, as_of) : as_of;
  // Every event counted is at or before as_of: the live answer at as_of.
  live = live || as_of >= newest_time_;
  switch (view.kind) {
    case ViewSpec::Kind::all_time:
      if (!live) return std::nullopt;
      return r;
    case ViewSpec::Kind::decayed: {
      if (!live) return std::nullopt;
      const auto it = std::find(half_lives_.begin(), half_lives_.end(), view.half_life);
      if (it == half_lives_.end()) throw InvalidArgument("exact table: no half-life " + view.name());
      r.index = static_cast<std::size_t>(it - half_lives_.begin());
      r.factor = clocks_[r.index].read_factor(as_of);
      return r;
    }
    case ViewSpec::Kind::window: break;
  }
  const auto it = std::find(windows_.begin(), windows_.end(), view.window);
  if (it == windows_.end()) throw InvalidArgument("exact table: no window " + view.name());
  r.index = window_ring_[static_cast<std::size_t>(it - windows_.begin())];
  const double g = rings_[r.index].granularity;
  r.granularity = g;
  if (live) {
    // Up to as_of itself.
    r.hi = bucket_index(as_of, g);
  } else {
    r.hi = bucket_index(as_of, g) - 1;
    r.end = static_cast<double>(r.hi + 1) * g;
  }
  // The first bucket holding end - window: the cover is the whole window
  // and less than a bucket more, as the sketch windows' covers.
  r.lo = bucket_index(r.end - view.window, g);
  r.start = static_cast<double>(r.lo) * g;
  if (!live && heads_[r.index] != kNoHead && r.lo < oldest(r.index)) return std::nullopt;
  return r;
}

double ExactTable::window_sum(const std::vector<Bucket>& buckets, const Reading& r) noexcept {
  double sum = 0;
  for (auto it = buckets.rbegin(); it != buckets.rend() && it->index >= r.lo; ++it) {
    if (it->index <= r.hi) sum += it->weight;
  }
  return sum;
}

double ExactTable::aggregate_value(const Aggregate& a, const Reading& r) const noexcept {
  switch (r.kind) {
    case ViewSpec::Kind::all_time: return a.all_time;
    case ViewSpec::Kind::decayed: return a.scores[r.index] * r.factor;
    case ViewSpec::Kind::window: break;
  }
  return window_sum(a.rings[r.index], r);
}

std::vector<std::uint32_t> ExactTable::top(const Reading& r, std::size_t k) const {
  std::vector<std::pair<double, std::uint32_t>> scored;
  scored.reserve(live_);
  for (std::uint32_t rec : heap_) {
    const double v = value(rec, r);
    if (v > 0) scored.emplace_back(v, rec);
  }
  auto before = [this](const std::pair<double, std::uint32_t>& a, const std::pair<double, std::uint32_t>& b) {
    return a.first != b.first ? a.first > b.first : keys_[a.second] < keys_[b.second];
  };
  const std::size_t n = std::min(k, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(n), scored.end(), before);
  std::vector<std::uint32_t> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(scored[i].second);
  return out;
}

// ---- memory ----

std::size_t ExactTable::bytes_max(const NamespaceConfig& config) {
  std::vector<std::size_t> window_ring;
  const auto rings = plan_rings(config.windows, window_ring);
  // A ring's vector holds at most slots + 1 buckets for a moment (one
  // added before the oldest goes): its capacity, a power of two, at most this.
  std::size_t ring_bytes = 0;
  for (const auto& r : rings) ring_bytes += std::bit_ceil(static_cast<std::size_t>(r.slots) + 1) * sizeof(Bucket);
  // Per record: its entries in the per-record arrays twice over (they grow
  // by doubling), up to four index cells (the index doubles past half
  // full), every ring at full capacity and a key of max_item_bytes. The
  // two aggregates' rings and the table itself once.
  const std::size_t per_record = 2 * record_bytes(config.half_lives.size(), rings.size()) + 4 * sizeof(std::uint64_t) + ring_bytes +
                                 heap_bytes_max(config.max_item_bytes);
  return static_cast<std::size_t>(config.max_items) * per_record + 2 * ring_bytes + sizeof(ExactTable);
}

std::size_t ExactTable::memory_bytes() const noexcept {
  std::size_t bytes = sizeof(*this) + keys_.capacity() * sizeof(std::string) + hashes_.capacity() * sizeof(std::uint64_t) +
                      (all_time_.capacity() + newest_.capacity() + scores_.capacity()) * sizeof(double) +
                      ring_buckets_.capacity() * sizeof(std::vector<Bucket>) +
                      (heap_pos_.capacity() + free_.capacity() + heap_.capacity()) * sizeof(std::uint32_t) +
                      index_.capacity() * sizeof(std::uint64_t);
  for (const auto& k : keys_) bytes += heap_bytes(k);
  for (const auto& b : ring_buckets_) bytes += b.capacity() * sizeof(Bucket);
  for (const Aggregate* a : {&total_, &evicted_}) {
    for (const auto& b : a->rings) bytes += b.capacity() * sizeof(Bucket);
  }
  return bytes;
}

// ---- serialisation ----

namespace {

// The buckets a ring still keeps (index >= oldest): a record idle since
// the ring moved on still holds older ones until its next event, and they
// are in no window any more.
void put_buckets(BinaryWriter& w, const std::vector<ExactTable::Bucket>& buckets, std::int64_t oldest) {
  auto kept = first_from(buckets, oldest);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(buckets.end() - kept));
  for (; kept != buckets.end(); ++kept) {
    w.put<std::int64_t>(kept->index);
    w.put<double>(kept->weight);
  }
}

double get_count(BinaryReader& r) {
  const double v = r.get<double>();
  if (!(std::isfinite(v) && v >= 0)) r.fail("bad count");
  return v;
}

std::vector<ExactTable::Bucket> get_buckets(BinaryReader& r, std::int64_t oldest, std::int64_t head, std::int64_t slots) {
  const auto n = r.get<std::uint32_t>();
  if (n > static_cast<std::uint64_t>(slots)) r.fail("a ring holds more buckets than it keeps");
  std::vector<ExactTable::Bucket> buckets(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    buckets[i].index = r.get<std::int64_t>();
    buckets[i].weight = get_count(r);
    if (buckets[i].index < oldest || buckets[i].index > head || (i > 0 && buckets[i].index <= buckets[i - 1].index)) {
      r.fail("ring buckets out of order or out of range");
    }
  }
  return buckets;
}

}  // namespace

void ExactTable::serialize_into(BinaryWriter& w) const {
  const auto blob = w.begin_blob(BlobKind::exact_table, 1);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(half_lives_.size()));
  for (std::size_t h = 0; h < half_lives_.size(); ++h) {
    w.put<double>(half_lives_[h]);
    w.put_string(clocks_[h].serialize());
  }
  w.put<std::uint32_t>(static_cast<std::uint32_t>(rings_.size()));
  for (std::size_t r = 0; r < rings_.size(); ++r) {
    w.put<double>(rings_[r].granularity);
    w.put<std::int64_t>(rings_[r].slots);
    w.put<std::int64_t>(heads_[r]);
  }
  w.put<std::uint32_t>(static_cast<std::uint32_t>(windows_.size()));
  for (std::size_t x = 0; x < windows_.size(); ++x) {
    w.put<double>(windows_[x]);
    w.put<std::uint64_t>(dropped_[x]);
  }
  w.put<std::uint64_t>(max_items_);
  w.put<std::uint64_t>(evictions_);
  w.put<double>(first_time_);
  w.put<double>(newest_time_);
  for (const Aggregate* a : {&total_, &evicted_}) {
    w.put<double>(a->all_time);
    for (double s : a->scores) w.put<double>(s);
    for (std::size_t r = 0; r < rings_.size(); ++r) put_buckets(w, a->rings[r], kept_from(r));
  }
  // Records in heap order: restored in that order, the heap is the same
  // array and later evictions choose as they would have.
  w.put<std::uint64_t>(heap_.size());
  const std::size_t nh = half_lives_.size(), nr = rings_.size();
  for (std::uint32_t rec : heap_) {
    w.put_string(keys_[rec]);
    w.put<double>(all_time_[rec]);
    w.put<double>(newest_[rec]);
    for (std::size_t h = 0; h < nh; ++h) w.put<double>(scores_[rec * nh + h]);
    for (std::size_t r = 0; r < nr; ++r) put_buckets(w, ring_buckets_[rec * nr + r], kept_from(r));
  }
  w.end_blob(blob);
}

void ExactTable::restore(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::exact_table, 1);
  BinaryReader r(opened.payload, "exact table");
  NamespaceConfig same;  // what the constructor reads: a fresh table of this configuration
  same.half_lives = half_lives_;
  same.windows = windows_;
  same.max_items = max_items_;
  same.all_time = evict_by_ == kByAllTime;  // (with half-lives, whichever: they decide)
  ExactTable t(same);
  if (r.get<std::uint32_t>() != half_lives_.size()) r.fail("half-lives differ from the configuration");
  for (std::size_t h = 0; h < half_lives_.size(); ++h) {
    if (r.get<double>() != half_lives_[h]) r.fail("half-lives differ from the configuration");
    t.clocks_[h] = ForwardDecay::deserialize(r.get_string(4096));
    if (t.clocks_[h].lambda() != clocks_[h].lambda()) r.fail("decay rate differs from the half-life");
  }
  if (r.get<std::uint32_t>() != rings_.size()) r.fail("rings differ from the configuration");
  for (std::size_t i = 0; i < rings_.size(); ++i) {
    const double g = r.get<double>();
    const auto slots = r.get<std::int64_t>();
    if (!(Ring{g, slots} == rings_[i])) r.fail("rings differ from the configuration");
    t.heads_[i] = r.get<std::int64_t>();
  }
  if (r.get<std::uint32_t>() != windows_.size()) r.fail("windows differ from the configuration");
  for (std::size_t x = 0; x < windows_.size(); ++x) {
    if (r.get<double>() != windows_[x]) r.fail("windows differ from the configuration");
    t.dropped_[x] = r.get<std::uint64_t>();
  }
  if (r.get<std::uint64_t>() != max_items_) r.fail("max_items differs from the configuration");
  t.evictions_ = r.get<std::uint64_t>();
  t.first_time_ = r.get<double>();
  t.newest_time_ = r.get<double>();
  // Before any event: +inf, -inf and no ring placed; after: finite times in
  // order, each ring's head the bucket of the newest time.
  const bool counted = std::isfinite(t.newest_time_);
  if (counted ? !(std::isfinite(t.first_time_) && t.first_time_ <= t.newest_time_)
              : !(t.first_time_ == INFINITY && t.newest_time_ == -INFINITY)) {
    r.fail("bad event times");
  }
  for (std::size_t i = 0; i < rings_.size(); ++i) {
    if (t.heads_[i] != (counted ? bucket_index(t.newest_time_, rings_[i].granularity) : kNoHead)) r.fail("a ring head is not the newest event's bucket");
  }
  const std::size_t nh = half_lives_.size(), nr = rings_.size();
  auto ring_range = [&](std::size_t i) {
    // An unplaced ring holds nothing.
    return t.heads_[i] == kNoHead ? std::pair{std::int64_t{1}, std::int64_t{0}} : std::pair{t.oldest(i), t.heads_[i]};
  };
  for (Aggregate* a : {&t.total_, &t.evicted_}) {
    a->all_time = get_count(r);
    for (auto& s : a->scores) s = get_count(r);
    for (std::size_t i = 0; i < nr; ++i) {
      const auto [lo, hi] = ring_range(i);
      a->rings[i] = get_buckets(r, lo, hi, rings_[i].slots);
    }
  }
  const auto n = r.get<std::uint64_t>();
  if (n > max_items_ || n > r.remaining()) r.fail("holds more records than max_items");
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto rec = static_cast<std::uint32_t>(i);
    std::string key = r.get_string(kMaxKey);
    if (key.empty()) r.fail("an empty key");
    const std::uint64_t hash = hash_key(key);
    if (t.find(key, hash) != kNone) r.fail("a key held twice");
    t.keys_.push_back(std::move(key));
    t.hashes_.push_back(hash);
    t.all_time_.push_back(get_count(r));
    t.newest_.push_back(r.get<double>());
    if (!(t.newest_.back() >= 0 && t.newest_.back() <= t.newest_time_)) r.fail("bad newest time");
    for (std::size_t h = 0; h < nh; ++h) t.scores_.push_back(get_count(r));
    for (std::size_t x = 0; x < nr; ++x) {
      const auto [lo, hi] = ring_range(x);
      t.ring_buckets_.push_back(get_buckets(r, lo, hi, rings_[x].slots));
    }
    t.heap_pos_.push_back(rec);
    t.heap_.push_back(rec);
    ++t.live_;
    t.index_insert(rec);
  }
  r.expect_end();
  for (std::size_t pos = 1; pos < t.heap_.size(); ++pos) {
    if (t.evicts_before(t.heap_[pos], t.heap_[(pos - 1) / 2])) r.fail("records out of eviction order");
  }
  *this = std::move(t);
}

}  // namespace ebb::engine
