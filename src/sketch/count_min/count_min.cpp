#include "ebb/sketch/count_min/count_min.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"

namespace ebb {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::uint16_t kFormatVersion = 1;
// How many events ahead update_batch() prefetches: enough to keep ~depth *
// kLookahead misses in flight, few enough that the lines are still in L1/L2
// when their event is processed.
constexpr std::size_t kLookahead = 32;

inline std::uint64_t second_hash(std::uint64_t hash) noexcept { return mix64(hash) | 1; }

// A prefetch the compiler must keep. GCC 12's dead-code elimination removes
// __builtin_prefetch from the batch loop below (the address depends on
// mix64 of a later event; seen with -O1..-O3, kept with -fno-tree-dce),
// which silently turned the batched update back into the naive one.
inline void prefetch_line(const double* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*p));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace

void CountMin::FreeDeleter::operator()(double* p) const noexcept { ::operator delete(p, std::align_val_t(align)); }

CountMin::CountMin(CountMinShape shape, UpdatePolicy policy)
    : shape_(CountMinShape::with_dimensions(shape.width, shape.depth)),  // re-validate
      policy_(policy),
      shift_(64u - static_cast<unsigned>(std::countr_zero(shape.width))) {
  allocate();
}

CountMin::CountMin(const CountMin& other)
    : shape_(other.shape_), policy_(other.policy_), shift_(other.shift_), total_(other.total_) {
  allocate();
  std::memcpy(counters_.get(), other.counters_.get(), shape_.counter_bytes());
}

CountMin& CountMin::operator=(const CountMin& other) {
  if (this != &other) {
    CountMin copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void CountMin::allocate() {
  const std::size_t bytes = shape_.counter_bytes();
  // Large sketches are aligned to 2 MiB and advised onto huge pages: a 32 MiB
  // sketch on 4 KiB pages misses the TLB on nearly every row access.
  const std::size_t align = bytes >= kHugePage ? kHugePage : 64;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  // Aligned operator new (not aligned_alloc): memory benchmarks count the
  // program's allocations by replacing operator new, and the sketch is
  // most of a namespace's bytes.
  void* p = ::operator new(rounded, std::align_val_t(align));
  if (align == kHugePage) ::madvise(p, rounded, MADV_HUGEPAGE);  // advisory: ignore failure
  std::memset(p, 0, rounded);
  counters_ = std::unique_ptr<double[], FreeDeleter>(static_cast<double*>(p), FreeDeleter{align});
}

namespace {

// One event's update over the cells it hashes to (one per row); returns the
// key's estimate after it. Depth 0 = any depth (depth_any), otherwise a
// compile-time depth so the rows unroll.
template <std::uint32_t Depth>
double update_cells(double* const* cells, std::uint32_t depth_any, UpdatePolicy policy, double weight) noexcept {
  const std::uint32_t depth = Depth != 0 ? Depth : depth_any;
  if (policy == UpdatePolicy::conservative) {
    double current = std::numeric_limits<double>::infinity();
    for (std::uint32_t row = 0; row < depth; ++row) current = std::min(current, *cells[row]);
    const double next = current + weight;
    // Branch-free on purpose: whether a row holds the minimum is a coin
    // toss, and a mispredicted branch per row cost ~10x the whole update
    // on L2-resident sketches. The line is in cache already (just read).
    for (std::uint32_t row = 0; row < depth; ++row) *cells[row] = std::max(*cells[row], next);
    return next;
  }
  double est = std::numeric_limits<double>::infinity();
  for (std::uint32_t row = 0; row < depth; ++row) {
    *cells[row] += weight;
    est = std::min(est, *cells[row]);
  }
  return est;
}

}  // namespace

double CountMin::update(std::uint64_t hash, double weight) noexcept {
  const std::uint64_t h2 = second_hash(hash);
  double* cells[CountMinShape::kMaxDepth];
  for (std::uint32_t row = 0; row < shape_.depth; ++row) {
    cells[row] = counters_.get() + std::size_t{row} * shape_.width + column(hash, h2, row);
  }
  total_ += weight;
  return update_cells<0>(cells, shape_.depth, policy_, weight);
}

namespace {

// The batched update loop, specialised for common depths so rows unroll and
// cell addresses stay in registers (Depth 0 = any depth, up to kMaxDepth).
// Each event's rows are prefetched kLookahead events ahead, so the misses
// of consecutive events overlap instead of queueing one after another.
template <std::uint32_t Depth>
void batch_loop(double* base, std::uint32_t width, std::uint32_t depth_any, unsigned shift, UpdatePolicy policy,
                const std::uint64_t* hashes, const double* weights, double* estimates, std::size_t n, double& total) noexcept {
  const std::uint32_t depth = Depth != 0 ? Depth : depth_any;
  constexpr std::uint32_t kRows = Depth != 0 ? Depth : CountMinShape::kMaxDepth;
  // The cells an event touches are computed once, when it is prefetched,
  // and kept in a ring of kLookahead events until its update.
  double* ring[kLookahead][kRows];
  auto locate = [&](std::size_t i) {
    const std::uint64_t h1 = hashes[i];
    const std::uint64_t h2 = second_hash(h1);
    double** cells = ring[i % kLookahead];
    for (std::uint32_t row = 0; row < depth; ++row) {
      cells[row] = base + std::size_t{row} * width + CountMin::row_column(h1, h2, row, shift);
      prefetch_line(cells[row]);
    }
  };
  for (std::size_t i = 0; i < std::min(n, kLookahead); ++i) locate(i);
  // The total is summed in event order (the same bits as a loop of its own
  // after this one), here where its chain of adds overlaps the updates.
  double sum = total;
  for (std::size_t i = 0; i < n; ++i) {
    sum += weights[i];
    const double est = update_cells<Depth>(ring[i % kLookahead], depth, policy, weights[i]);
    if (estimates != nullptr) estimates[i] = est;
    // Reuse this event's ring slot for the event kLookahead ahead.
    if (i + kLookahead < n) locate(i + kLookahead);
  }
  total = sum;
}

}  // namespace

void CountMin::update_batch(std::span<const std::uint64_t> hashes, std::span<const double> weights,
                            std::span<double> estimates) noexcept {
  const std::size_t n = hashes.size();
  double* out = estimates.empty() ? nullptr : estimates.data();
  double* base = counters_.get();
  const auto w = shape_.width;
  switch (shape_.depth) {
    case 2: batch_loop<2>(base, w, 2, shift_, policy_, hashes.data(), weights.data(), out, n, total_); break;
    case 3: batch_loop<3>(base, w, 3, shift_, policy_, hashes.data(), weights.data(), out, n, total_); break;
    case 4: batch_loop<4>(base, w, 4, shift_, policy_, hashes.data(), weights.data(), out, n, total_); break;
    case 5: batch_loop<5>(base, w, 5, shift_, policy_, hashes.data(), weights.data(), out, n, total_); break;
    default: batch_loop<0>(base, w, shape_.depth, shift_, policy_, hashes.data(), weights.data(), out, n, total_); break;
  }
}

double CountMin::estimate(std::uint64_t hash) const noexcept {
  const std::uint64_t h2 = second_hash(hash);
  const double* base = counters_.get();
  double est = std::numeric_limits<double>::infinity();
  for (std::uint32_t row = 0; row < shape_.depth; ++row) {
    est = std::min(est, base[std::size_t{row} * shape_.width + column(hash, h2, row)]);
  }
  return est;
}

void CountMin::raise_to(std::uint64_t hash, double value) noexcept {
  const std::uint64_t h2 = second_hash(hash);
  double* base = counters_.get();
  for (std::uint32_t row = 0; row < shape_.depth; ++row) {
    double& cell = base[std::size_t{row} * shape_.width + column(hash, h2, row)];
    cell = std::max(cell, value);
  }
}

void CountMin::scale(double factor) noexcept {
  double* c = counters_.get();
  const std::size_t n = std::size_t{shape_.width} * shape_.depth;
  for (std::size_t i = 0; i < n; ++i) c[i] *= factor;
  total_ *= factor;
}

void CountMin::merge(const CountMin& other) {
  if (other.shape_ != shape_) {
    throw InvalidArgument("cannot merge count-min sketches of different shapes (" + std::to_string(shape_.depth) + "x" +
                          std::to_string(shape_.width) + " vs " + std::to_string(other.shape_.depth) + "x" +
                          std::to_string(other.shape_.width) + ")");
  }
  if (other.policy_ != policy_) throw InvalidArgument("cannot merge count-min sketches with different update policies");
  double* c = counters_.get();
  const double* o = other.counters_.get();
  const std::size_t n = std::size_t{shape_.width} * shape_.depth;
  for (std::size_t i = 0; i < n; ++i) c[i] += o[i];
  total_ += other.total_;
}

void CountMin::merge_folded(const CountMin& wider) {
  if (wider.shape_.depth != shape_.depth || wider.shape_.width < shape_.width || wider.shape_.width % shape_.width != 0 ||
      wider.policy_ != policy_) {
    throw InvalidArgument("cannot fold a " + std::to_string(wider.shape_.depth) + "x" + std::to_string(wider.shape_.width) + " count-min sketch into a " +
                          std::to_string(shape_.depth) + "x" + std::to_string(shape_.width) + " one");
  }
  const unsigned fold = std::countr_zero(wider.shape_.width / shape_.width);
  for (std::uint32_t r = 0; r < shape_.depth; ++r) {
    double* c = counters_.get() + std::size_t{r} * shape_.width;
    const double* o = wider.counters_.get() + std::size_t{r} * wider.shape_.width;
    for (std::uint32_t i = 0; i < wider.shape_.width; ++i) c[i >> fold] += o[i];
  }
  total_ += wider.total_;
}

CountMin CountMin::widened(std::uint32_t width) const {
  CountMin out(CountMinShape::with_dimensions(width, shape_.depth), policy_);
  if (width < shape_.width || width % shape_.width != 0) throw InvalidArgument("widened: not a multiple of the width");
  const unsigned fold = std::countr_zero(width / shape_.width);
  for (std::uint32_t r = 0; r < shape_.depth; ++r) {
    const double* c = counters_.get() + std::size_t{r} * shape_.width;
    double* o = out.counters_.get() + std::size_t{r} * width;
    for (std::uint32_t i = 0; i < width; ++i) o[i] = c[i >> fold];
  }
  out.total_ = total_;
  return out;
}

void CountMin::merge_resized(const CountMin& other) {
  if (other.shape_.width >= shape_.width) {
    if (other.shape_.width == shape_.width) merge(other);
    else merge_folded(other);
    return;
  }
  if (other.shape_.depth != shape_.depth || shape_.width % other.shape_.width != 0 || other.policy_ != policy_) {
    throw InvalidArgument("cannot add a " + std::to_string(other.shape_.depth) + "x" + std::to_string(other.shape_.width) +
                          " count-min sketch into a " + std::to_string(shape_.depth) + "x" + std::to_string(shape_.width) + " one");
  }
  const unsigned fold = std::countr_zero(shape_.width / other.shape_.width);
  for (std::uint32_t r = 0; r < shape_.depth; ++r) {
    double* c = counters_.get() + std::size_t{r} * shape_.width;
    const double* o = other.counters_.get() + std::size_t{r} * other.shape_.width;
    for (std::uint32_t i = 0; i < shape_.width; ++i) c[i] += o[i >> fold];
  }
  total_ += other.total_;
}

void CountMin::clear() noexcept {
  std::memset(counters_.get(), 0, shape_.counter_bytes());
  total_ = 0;
}

std::string CountMin::serialize() const {
  return written([this](BinaryWriter& w) { serialize_into(w); });
}

void CountMin::serialize_into(BinaryWriter& w) const {
  const auto blob = w.begin_blob(BlobKind::count_min, kFormatVersion);
  w.put<std::uint32_t>(shape_.width);
  w.put<std::uint32_t>(shape_.depth);
  w.put<std::uint8_t>(static_cast<std::uint8_t>(policy_));
  w.put<std::uint64_t>(kHashSeed);  // a sketch hashed with another seed is foreign
  w.put<double>(total_);
  w.put_array(counters_.get(), std::size_t{shape_.width} * shape_.depth);
  w.end_blob(blob);
}

CountMin CountMin::deserialize(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::count_min, kFormatVersion);
  BinaryReader r(opened.payload, "count-min sketch");
  const auto width = r.get<std::uint32_t>();
  const auto depth = r.get<std::uint32_t>();
  const auto policy = r.get<std::uint8_t>();
  const auto seed = r.get<std::uint64_t>();
  const auto total = r.get<double>();
  CountMinShape shape;
  try {
    shape = CountMinShape::with_dimensions(width, depth);
  } catch (const InvalidArgument& e) {
    r.fail(e.what());
  }
  if (policy > 1) r.fail("unknown update policy " + std::to_string(policy));
  if (seed != kHashSeed) r.fail("hashed with a foreign seed");
  if (!std::isfinite(total) || total < 0) r.fail("bad total weight");
  if (r.remaining() != shape.counter_bytes()) r.fail("counter array has the wrong size for " + std::to_string(depth) + "x" + std::to_string(width));
  CountMin sketch(shape, static_cast<UpdatePolicy>(policy));
  r.get_array(sketch.counters_.get(), std::size_t{width} * depth);
  r.expect_end();
  sketch.total_ = total;
  return sketch;
}

}  // namespace ebb
