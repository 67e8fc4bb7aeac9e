#include "ebb/engine/decayed_view.hpp"

#include <algorithm>
#include <bit>
#include <optional>
#include <cmath>
#include <span>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/sketch/candidate_heap/candidate_heap.hpp"

namespace ebb::engine {
namespace {

// What a budgeted view leaves its keys: the budget less the rest (0 when
// a stored shape takes it all; no budget: unbounded).
std::uint64_t key_budget_of(std::uint64_t memory, const CountMinShape& sketch, std::uint32_t candidates) {
  if (memory == 0) return AugmentedHeap::kNoKeyBudget;
  const std::size_t reserved = DecayedView::reserved_bytes(sketch, candidates);
  return memory > reserved ? memory - reserved : 0;
}

std::variant<AugmentedHeap, SpaceSaving> make_summary(const NamespaceConfig& config) {
  if (config.summary == SummaryKind::space_saving) return SpaceSaving(config.resolved_candidates());
  return AugmentedHeap(config.resolved_candidates(), key_budget_of(config.memory, config.sketch, config.resolved_candidates()));
}

// Space-Saving's k best, and the bound on the rest: the next one down, or
// any item it does not monitor.
RankedList ranked(const SpaceSaving& s, std::size_t k) {
  RankedList list;
  list.items = s.top(k + 1);
  list.unlisted_upper = s.threshold();
  if (list.items.size() > k) {
    list.unlisted_upper = std::max(list.unlisted_upper, list.items.back().upper);
    list.items.pop_back();
  }
  return list;
}

RankedList ranked(const AugmentedHeap& h, std::size_t k) { return h.top(k); }

CountedItem scaled(CountedItem item, double f) {
  item.estimate *= f;
  item.lower *= f;
  item.upper *= f;
  return item;
}

// Format 2: the summary may be an augmented heap (kind 2). Format 1 state
// (a candidate heap, kind 0) is read and converted. Format 3 appends the
// error a resize carried (written only by a view that was resized, so a
// build before it reads every other view's state).
constexpr std::uint16_t kFormatVersion = 3;
constexpr std::uint16_t kUnresizedVersion = 2;
constexpr std::uint8_t kCandidateHeap = 0, kSpaceSaving = 1, kAugmentedHeap = 2;

// CMS work is done in chunks so the scratch columns stay in L1.
constexpr std::size_t kChunk = AugmentedHeap::kMaxBatch;

}  // namespace

std::size_t DecayedView::reserved_bytes(const CountMinShape& sketch, std::uint32_t candidates) noexcept {
  return sizeof(DecayedView) + sketch.counter_bytes() + (AugmentedHeap::reserved_bytes(candidates) - sizeof(AugmentedHeap)) +
         kChunk * sizeof(double);
}

namespace {

constexpr std::uint32_t kBudgetDepth = 3;

// The sketch a budget gets, and the most structure it leaves candidates
// (a fifth of the rest stays for key bytes); nullopt below the smallest sketch.
std::optional<std::pair<CountMinShape, std::uint64_t>> budget_split(std::uint64_t bytes) {
  const std::uint64_t width = std::bit_floor(bytes * 3 / 8 / (kBudgetDepth * sizeof(double)));
  if (width < CountMinShape::kMinWidth) return std::nullopt;
  const auto sketch = CountMinShape::with_dimensions(static_cast<std::uint32_t>(std::min<std::uint64_t>(width, CountMinShape::kMaxWidth)), kBudgetDepth);
  return std::pair{sketch, bytes - (bytes - sketch.counter_bytes()) / 5};
}

bool fits(std::uint64_t bytes, std::uint32_t k) {
  const auto split = budget_split(bytes);
  return split && DecayedView::reserved_bytes(split->first, k) <= split->second;
}

}  // namespace

ViewSizing DecayedView::fit_budget(std::uint64_t bytes, std::uint32_t k) {
  if (bytes > kMaxMemory) {
    throw InvalidArgument("memory: at most " + std::to_string(kMaxMemory >> 30) + " GiB a view (got " + std::to_string(bytes) + " bytes)");
  }
  if (!fits(bytes, k)) {
    // The least budget that fits: the first that does, doubling, then the
    // least between (what fits grows with the budget but for the sketch's
    // width steps, so the bisection's answer is checked).
    std::uint64_t hi = std::max<std::uint64_t>(bytes, 1024);
    while (!fits(hi, k)) hi *= 2;
    std::uint64_t lo = hi / 2;
    while (lo + 1 < hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      (fits(mid, k) ? hi : lo) = mid;
    }
    throw InvalidArgument("memory: " + std::to_string(bytes) + " bytes cannot hold a view of " + std::to_string(k) +
                          " candidates (k) and the smallest sketch: at least " + std::to_string(hi) + " bytes");
  }
  const auto [sketch, cap] = *budget_split(bytes);
  ViewSizing v{sketch, 0};
  std::uint64_t lo = k, hi = KeyedMinHeap::kMaxCapacity;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    if (reserved_bytes(v.sketch, static_cast<std::uint32_t>(mid)) <= cap) lo = mid;
    else hi = mid - 1;
  }
  v.candidates = static_cast<std::uint32_t>(lo);
  return v;
}

DecayedView::DecayedView(ViewSpec spec, const NamespaceConfig& config)
    : spec_(spec),
      memory_(config.memory),
      clock_(spec.kind == ViewSpec::Kind::decayed ? ForwardDecay::with_half_life(spec.half_life) : ForwardDecay::none()),
      sketch_(config.sketch, config.update),
      summary_(make_summary(config)) {
  scaled_.resize(kChunk);
}

void DecayedView::rebase(double t) {
  const double f = clock_.rebase(t);
  sketch_.scale(f);
  std::visit([f](auto& s) { s.scale(f); }, summary_);
  carried_.scale(f);
  scaler_.reset();
  ++rebases_;
}

std::optional<CountMin> DecayedView::prepare_widen(std::uint32_t width) const {
  const std::uint32_t now = sketch_.shape().width;
  if (width == now) return std::nullopt;
  if (!std::has_single_bit(width) || width < now || width > CountMinShape::kMaxWidth) {
    throw InvalidArgument("sketch_width: can only grow by a power of two (from " + std::to_string(now) + " to at most " +
                          std::to_string(CountMinShape::kMaxWidth) + "; got " + std::to_string(width) + ")");
  }
  if (memory_ != 0) throw InvalidArgument("sketch_width: this view is sized by its memory budget (fixed at creation)");
  return sketch_.widened(width);
}

void DecayedView::commit_widen(std::optional<CountMin>&& wider) noexcept {
  if (!wider) return;
  carried_.carry_all(sketch_.shape().epsilon(), total());
  sketch_ = std::move(*wider);
}

void DecayedView::apply(const PreparedBatch& batch) {
  if (batch.size() == 0) return;
  if (!clock_.anchored()) {
    clock_.anchor(batch.max_time);
    first_time_ = batch.min_time;
    scaler_.reset();
  }
  first_time_ = std::min(first_time_, batch.min_time);
  // Rebase up front so that no event of the batch needs a factor past the guard.
  if (clock_.needs_rebase(batch.max_time)) rebase(batch.max_time);

  for (std::size_t begin = 0; begin < batch.size(); begin += kChunk) {
    const std::size_t n = std::min(kChunk, batch.size() - begin);
    // Weights in landmark coordinates; without decay they are the batch's own.
    const double* weights = batch.weights.data() + begin;
    if (clock_.decays()) {
      scaler_.scale(clock_, batch.times.data() + begin, weights, scaled_.data(), n);
      weights = scaled_.data();
    }
    const std::uint64_t* hashes = batch.hashes.data() + begin;
    if (auto* heap = std::get_if<AugmentedHeap>(&summary_)) {
      heap->apply(sketch_, batch.items.data() + begin, hashes, weights, n);
    } else {
      sketch_.update_batch(std::span<const std::uint64_t>(hashes, n), std::span<const double>(weights, n));
      auto& ss = std::get<SpaceSaving>(summary_);
      for (std::size_t i = 0; i < n; ++i) ss.update(batch.items[begin + i], hashes[i], weights[i]);
    }
  }
}

std::uint64_t DecayedView::key_budget() const noexcept {
  return key_budget_of(memory_, sketch_.shape(), std::visit([](const auto& s) { return s.capacity(); }, summary_));
}

// The weight counted: the augmented heap's held keys count outside the sketch.
double DecayedView::total() const noexcept {
  const auto* heap = std::get_if<AugmentedHeap>(&summary_);
  return sketch_.total() + (heap ? heap->absorbed() : 0);
}

Accuracy DecayedView::accuracy(double read_factor) const {
  Accuracy a;
  a.epsilon = sketch_.shape().epsilon();
  a.confidence = sketch_.shape().confidence();
  // Since a resize: what was counted before it keeps its narrower bound.
  a.max_error = carried_.bound(a.epsilon, total()) * read_factor;
  a.guarantee_threshold = std::visit([](const auto& s) { return s.threshold(); }, summary_) * read_factor;
  const auto* heap = std::get_if<AugmentedHeap>(&summary_);
  a.candidates = heap ? heap->held_at_most() : std::get<SpaceSaving>(summary_).capacity();
  if (memory_ != 0) {
    a.memory_budget = memory_;
    a.memory_bytes = memory_bytes();
  }
  return a;
}

// The augmented heap lists its held keys by estimate (its top()); a
// Space-Saving summary cannot say cheaply.
bool DecayedView::held_scores(std::span<const std::string_view> items, std::span<const std::uint64_t> hashes,
                              std::span<std::optional<double>> scores) const noexcept {
  const auto* h = std::get_if<AugmentedHeap>(&summary_);
  if (!h) return false;
  h->held_estimates(items.data(), hashes.data(), std::min({items.size(), hashes.size(), scores.size()}), scores.data());
  return true;
}

bool DecayedView::held_at_least(double bound, std::size_t max_held, std::size_t max_found, std::vector<HeldScore>& out) const {
  const auto* h = std::get_if<AugmentedHeap>(&summary_);
  return h && h->size() <= max_held && h->held_at_least(bound, max_found, out);
}

std::optional<double> DecayedView::evicted_bound() const noexcept {
  if (const auto* h = std::get_if<AugmentedHeap>(&summary_)) return h->floor();
  return std::nullopt;
}

std::uint64_t DecayedView::evictions() const noexcept {
  if (const auto* h = std::get_if<AugmentedHeap>(&summary_)) return h->evictions();
  return 0;
}

TopKAnswer DecayedView::top(std::size_t k, double now) const {
  const double rf = clock_.read_factor(now);
  TopKAnswer answer;
  answer.view = spec_;
  answer.as_of = now;
  answer.window_start = clock_.anchored() ? std::min(first_time_, now) : now;
  answer.total = total() * rf;
  answer.accuracy = accuracy(rf);
  answer.accuracy.undersized = k > answer.accuracy.candidates;
  RankedList list = std::visit([k](const auto& s) { return ranked(s, k); }, summary_);
  answer.items = std::move(list.items);
  for (auto& item : answer.items) item = scaled(std::move(item), rf);
  answer.unlisted_upper = list.unlisted_upper * rf;
  answer.accuracy.tail_uncertain = tail_uncertain(answer.items, answer.unlisted_upper);
  // Scaling keeps the order of different values, but can make them equal
  // (rounding; underflow to 0 after a long idle spell): ties go by key.
  // (Checked first: sorting what is almost always in order already took a
  // tenth of a top-100's time, its keys' strings moved about.)
  if (!std::is_sorted(answer.items.begin(), answer.items.end(), ranks_before)) {
    std::stable_sort(answer.items.begin(), answer.items.end(), ranks_before);
  }
  return answer;
}

PointAnswer DecayedView::point(std::string_view item, std::uint64_t hash, double now) const {
  const double rf = clock_.read_factor(now);
  PointAnswer answer;
  answer.view = spec_;
  answer.as_of = now;
  answer.window_start = clock_.anchored() ? std::min(first_time_, now) : now;
  answer.accuracy = accuracy(rf);
  const double sketch_estimate = sketch_.estimate(hash);
  auto held = std::visit([&](const auto& s) { return s.find(item, hash); }, summary_);
  if (held) {
    answer.tracked = true;
    if (std::holds_alternative<SpaceSaving>(summary_)) {
      // Both Space-Saving and the sketch (which counts every event beside
      // it) bound the count from above: keep the tighter. (The augmented
      // heap's sketch lacks what a held key counted since it came in.)
      held->upper = std::min(held->upper, sketch_estimate);
      held->estimate = std::min(held->estimate, held->upper);
    }
    answer.item = scaled(std::move(*held), rf);
  } else {
    answer.item = scaled(CountedItem{std::string(item), sketch_estimate, 0, sketch_estimate}, rf);
  }
  if (clock_.decays()) {
    answer.rate = clock_.lambda() * answer.item.estimate;
  } else if (now > first_time_) {
    answer.rate = answer.item.estimate / (now - first_time_);
  }
  return answer;
}

std::size_t DecayedView::memory_bytes() const noexcept {
  // The object and what its parts allocate (each part's own object is in it).
  return sizeof(*this) + (sketch_.memory_bytes() - sizeof(sketch_)) +
         std::visit([](const auto& s) { return s.memory_bytes() - sizeof(s); }, summary_) + scaled_.capacity() * sizeof(double);
}

void DecayedView::serialize_state_into(BinaryWriter& w) const {
  const auto blob = w.begin_blob(BlobKind::decayed_view, carried_.any() ? kFormatVersion : kUnresizedVersion);
  w.put<std::uint8_t>(spec_.kind == ViewSpec::Kind::decayed ? 1 : 0);
  w.put<double>(spec_.half_life);
  w.put_string(clock_.serialize());
  w.put_part([&](BinaryWriter& part) { sketch_.serialize_into(part); });
  if (const auto* heap = std::get_if<AugmentedHeap>(&summary_)) {
    w.put<std::uint8_t>(kAugmentedHeap);
    w.put_part([&](BinaryWriter& part) { heap->serialize_into(part); });
  } else {
    w.put<std::uint8_t>(kSpaceSaving);
    w.put_string(std::get<SpaceSaving>(summary_).serialize());
  }
  w.put<double>(first_time_);
  w.put<std::uint64_t>(rebases_);
  if (carried_.any()) carried_.write(w);
  w.end_blob(blob);
}

void DecayedView::restore_state(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::decayed_view, kFormatVersion);
  BinaryReader r(opened.payload, "decayed view");
  const auto kind = r.get<std::uint8_t>();
  const double half_life = r.get<double>();
  if ((kind == 1) != (spec_.kind == ViewSpec::Kind::decayed) || half_life != spec_.half_life) {
    r.fail("state of another view (" + std::string(kind == 1 ? "half-life" : "all-time") + ") where " + spec_.label() + " was expected");
  }
  constexpr std::size_t kMaxPart = std::size_t{1} << 36;
  ForwardDecay clock = ForwardDecay::deserialize(r.get_string(kMaxPart));
  if (clock.lambda() != clock_.lambda()) r.fail("decay rate differs from the view's half-life");
  CountMin sketch = CountMin::deserialize(r.get_string(kMaxPart));
  if (!(sketch.shape() == sketch_.shape()) || sketch.policy() != sketch_.policy()) r.fail("sketch shape differs from the configuration");
  const auto summary_kind = r.get<std::uint8_t>();
  const std::string summary_blob = r.get_string(kMaxPart);
  // The configured capacity is checked before the summary's table is
  // allocated: a damaged capacity could otherwise cost ~1.3 GiB first.
  const std::uint32_t capacity = std::visit([](const auto& x) { return x.capacity(); }, summary_);
  std::variant<AugmentedHeap, SpaceSaving> summary = SpaceSaving(1);
  const bool augmented = std::holds_alternative<AugmentedHeap>(summary_);
  if (summary_kind == kAugmentedHeap && augmented) {
    summary = AugmentedHeap::deserialize(summary_blob, capacity, key_budget());
  } else if (summary_kind == kCandidateHeap && augmented) {
    // Written before augmentation: its sketch counted every event, which
    // only over-counts the held keys further (never under).
    summary = AugmentedHeap::from_candidate_heap(CandidateHeap::deserialize(summary_blob, capacity), key_budget());
  } else if (summary_kind == kSpaceSaving && std::holds_alternative<SpaceSaving>(summary_)) {
    summary = SpaceSaving::deserialize(summary_blob, capacity);
  } else {
    r.fail("summary kind differs from the configuration");
  }
  const double first_time = r.get<double>();
  const auto rebases = r.get<std::uint64_t>();
  const CarriedError carried = opened.version >= 3 ? CarriedError::read(r) : CarriedError{};
  r.expect_end();
  if (!std::isfinite(first_time) || first_time < 0) r.fail("bad first event time");
  clock_ = clock;
  sketch_ = std::move(sketch);
  summary_ = std::move(summary);
  first_time_ = first_time;
  rebases_ = rebases;
  carried_ = carried;
  scaler_.reset();
}

}  // namespace ebb::engine
