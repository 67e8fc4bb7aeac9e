#pragma once
// Count-Min sketch with double counters and conservative update.
//
// - Counters are double: float stops counting at 2^24 and u32 wraps
//   (RedisBloom #295); a double counts 1e15 unit events exactly.
// - Row indices come from one 64-bit key hash (ebb::hash_key): h1 = hash,
//   h2 = mix64(hash) | 1, index_j = top bits of (h1 + j * h2)
//   (Kirsch-Mitzenmacher), so a key is hashed once for every row and view.
// - Conservative update (default) raises each row only as far as the new
//   estimate: never under-counts, often 5-10x less over-count than plain.
//   It is not linear: merging CU sketches by summing is valid (never
//   under-counts) but its bound is looser, and nothing can be subtracted.
// - The sketch knows nothing of time. Decayed views feed it weights already
//   in forward-decay coordinates and call scale() when they rebase.
// - Memory-bound: update_batch() prefetches the rows of events ahead so the
//   cache misses of consecutive events overlap.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ebb/sketch/count_min/count_min_shape.hpp"
#include "ebb/core/binary_io.hpp"

namespace ebb {

enum class UpdatePolicy : std::uint8_t { conservative = 0, plain = 1 };

class CountMin {
 public:
  explicit CountMin(CountMinShape shape, UpdatePolicy policy = UpdatePolicy::conservative);
  CountMin(const CountMin& other);
  CountMin& operator=(const CountMin& other);
  CountMin(CountMin&&) noexcept = default;
  CountMin& operator=(CountMin&&) noexcept = default;
  ~CountMin() = default;

  const CountMinShape& shape() const noexcept { return shape_; }
  UpdatePolicy policy() const noexcept { return policy_; }

  // Adds weight (> 0, finite: callers validate at their boundary) to the key
  // with this hash; returns the key's estimate after the update.
  double update(std::uint64_t hash, double weight) noexcept;
  // The same for n events in order, with prefetching. estimates may be
  // empty; otherwise it receives each event's estimate after its update.
  void update_batch(std::span<const std::uint64_t> hashes, std::span<const double> weights,
                    std::span<double> estimates = {}) noexcept;

  // Never below the key's true total (deterministic); above it by at most
  // epsilon * total() with probability >= confidence.
  double estimate(std::uint64_t hash) const noexcept;
  // Raises each of the key's cells to at least `value`, leaving total()
  // alone: a summary that counted the key's weight outside the sketch
  // writes it back when it lets the key go (AugmentedHeap), so that the
  // estimate again never under-counts. Each cell grows by at most what the
  // key's estimate lacked.
  void raise_to(std::uint64_t hash, double value) noexcept;

  // Sum of all weights added (in the caller's coordinates).
  double total() const noexcept { return total_; }
  // "Empty" means zero total weight, never "no counters set".
  bool empty() const noexcept { return total_ == 0; }
  double max_error() const noexcept { return shape_.epsilon() * total_; }

  // Multiplies every counter and the total (forward-decay rebase).
  void scale(double factor) noexcept;
  // Adds another sketch of the same shape and policy, counter by counter.
  void merge(const CountMin& other);
  // Adds a sketch of the same depth and policy whose width is this width
  // times a power of two, folding it: a column here is the prefix of the
  // wider one's (top bits of the same hash), so each of its counters goes
  // to the column its index starts with. The sum still never under-counts;
  // its error is this width's.
  void merge_folded(const CountMin& wider);
  // A sketch of `width` (a power-of-two multiple of this width) that never
  // under-counts what this one counted: each counter copied to every wider
  // column that starts with its index. Its error stays this width's.
  CountMin widened(std::uint32_t width) const;
  // Adds a sketch of the same depth and policy whatever its width (both
  // powers of two): counter by counter when alike, folded when wider,
  // spread as widened() would when narrower. Never under-counts; each
  // part's error is that of the narrower of the two widths.
  void merge_resized(const CountMin& other);
  void clear() noexcept;

  std::size_t memory_bytes() const noexcept { return shape_.counter_bytes() + sizeof(*this); }

  std::string serialize() const;
  void serialize_into(BinaryWriter& w) const;  // the same bytes, appended in place
  static CountMin deserialize(std::string_view blob);

  // The column of a key in a row (Kirsch-Mitzenmacher): the top bits of
  // h1 + row * h2, with shift = 64 - log2(width). The one definition every
  // update and read path uses.
  static std::uint32_t row_column(std::uint64_t h1, std::uint64_t h2, std::uint32_t row, unsigned shift) noexcept {
    return static_cast<std::uint32_t>((h1 + row * h2) >> shift);
  }

 private:
  struct FreeDeleter {
    FreeDeleter() noexcept : align(64) {}
    explicit FreeDeleter(std::size_t a) noexcept : align(a) {}
    std::size_t align;  // what the counters were allocated with
    void operator()(double* p) const noexcept;
  };
  void allocate();
  std::uint32_t column(std::uint64_t h1, std::uint64_t h2, std::uint32_t row) const noexcept { return row_column(h1, h2, row, shift_); }

  CountMinShape shape_;
  UpdatePolicy policy_;
  unsigned shift_;  // 64 - log2(width)
  double total_ = 0;
  std::unique_ptr<double[], FreeDeleter> counters_;  // depth rows of width, row-major
};

}  // namespace ebb
