#include "ebb/decay/exact_decayed_counter.hpp"

#include <algorithm>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/core/string_bytes.hpp"

namespace ebb {
namespace {
constexpr std::uint16_t kFormatVersion = 1;
}

std::size_t ExactDecayedCounter::StringHash::operator()(std::string_view s) const noexcept { return hash_key(s); }

ExactDecayedCounter::ExactDecayedCounter(std::vector<double> half_lives) {
  if (half_lives.empty()) throw InvalidArgument("an exact decayed counter needs at least one half-life");
  for (double h : half_lives) clocks_.push_back(ForwardDecay::with_half_life(h));
  scalers_.resize(clocks_.size());
  totals_.assign(clocks_.size(), 0.0);
}

void ExactDecayedCounter::rebase_view(std::size_t view, double t) {
  const double f = clocks_[view].rebase(t);
  const std::size_t n = clocks_.size();
  for (std::size_t i = view; i < scores_.size(); i += n) scores_[i] *= f;
  totals_[view] *= f;
  scalers_[view].reset();
}

void ExactDecayedCounter::add(std::string_view key, double weight, double t) {
  const std::size_t n = clocks_.size();
  auto it = index_.find(key);
  if (it == index_.end()) {
    it = index_.emplace(std::string(key), static_cast<std::uint32_t>(keys_.size())).first;
    keys_.emplace_back(key);
    scores_.resize(scores_.size() + n, 0.0);
  }
  double* row = scores_.data() + std::size_t{it->second} * n;
  for (std::size_t v = 0; v < n; ++v) {
    ForwardDecay& clock = clocks_[v];
    if (!clock.anchored()) {
      clock.anchor(t);
      scalers_[v].reset();
    } else if (clock.needs_rebase(t)) {
      rebase_view(v, t);
    }
    const double w = weight * scalers_[v].factor(clock, t);
    row[v] += w;
    totals_[v] += w;
  }
}

double ExactDecayedCounter::score(std::string_view key, std::size_t view, double now) const {
  const auto it = index_.find(key);
  if (it == index_.end()) return 0;
  return scores_[std::size_t{it->second} * clocks_.size() + view] * clocks_.at(view).read_factor(now);
}

double ExactDecayedCounter::total(std::size_t view, double now) const {
  return totals_.at(view) * clocks_.at(view).read_factor(now);
}

std::vector<std::pair<std::string, double>> ExactDecayedCounter::top(std::size_t view, std::size_t k, double now) const {
  const std::size_t n = clocks_.size();
  const double rf = clocks_.at(view).read_factor(now);
  std::vector<std::uint32_t> order(keys_.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  auto better = [&](std::uint32_t a, std::uint32_t b) {
    const double sa = scores_[std::size_t{a} * n + view], sb = scores_[std::size_t{b} * n + view];
    return sa != sb ? sa > sb : keys_[a] < keys_[b];
  };
  const std::size_t m = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + m, order.end(), better);
  std::vector<std::pair<std::string, double>> out;
  out.reserve(m);
  for (std::size_t i = 0; i < m; ++i) out.emplace_back(keys_[order[i]], scores_[std::size_t{order[i]} * n + view] * rf);
  return out;
}

std::size_t ExactDecayedCounter::memory_bytes() const noexcept {
  std::size_t bytes = sizeof(*this) + scores_.capacity() * sizeof(double) + keys_.capacity() * sizeof(std::string);
  // unordered_map node: the key string, the index, the next pointer and the cached hash.
  bytes += index_.size() * (sizeof(std::string) + 3 * sizeof(void*)) + index_.bucket_count() * sizeof(void*);
  for (const auto& k : keys_) bytes += 2 * heap_bytes(k);  // the key is held twice
  return bytes;
}

std::string ExactDecayedCounter::serialize() const {
  BinaryWriter w;
  w.put<std::uint32_t>(static_cast<std::uint32_t>(clocks_.size()));
  for (std::size_t v = 0; v < clocks_.size(); ++v) {
    w.put_string(clocks_[v].serialize());
    w.put<double>(totals_[v]);
  }
  w.put<std::uint64_t>(keys_.size());
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    w.put_string(keys_[i]);
    w.put_array(scores_.data() + i * clocks_.size(), clocks_.size());
  }
  return seal_blob(BlobKind::exact_decayed_counter, kFormatVersion, w.buffer());
}

ExactDecayedCounter ExactDecayedCounter::deserialize(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::exact_decayed_counter, kFormatVersion);
  BinaryReader r(opened.payload, "exact decayed counter");
  const auto views = r.get<std::uint32_t>();
  if (views < 1 || views > 64) r.fail("bad number of views " + std::to_string(views));
  std::vector<ForwardDecay> clocks;
  std::vector<double> totals;
  for (std::uint32_t v = 0; v < views; ++v) {
    clocks.push_back(ForwardDecay::deserialize(r.get_string(1024)));
    totals.push_back(r.get<double>());
  }
  ExactDecayedCounter c(std::vector<double>(views, 1.0));
  c.clocks_ = std::move(clocks);
  c.totals_ = std::move(totals);
  const auto keys = r.get<std::uint64_t>();
  if (keys > r.remaining()) r.fail("key count larger than the blob");
  for (std::uint64_t i = 0; i < keys; ++i) {
    std::string key = r.get_string(std::uint32_t{1} << 24);
    if (!c.index_.emplace(key, static_cast<std::uint32_t>(i)).second) r.fail("duplicate key");
    c.keys_.push_back(std::move(key));
    c.scores_.resize(c.scores_.size() + views);
    r.get_array(c.scores_.data() + i * views, views);
  }
  r.expect_end();
  return c;
}

}  // namespace ebb
