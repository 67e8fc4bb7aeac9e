#pragma once
// Exact per-key decayed scores for several half-lives at once (tidalDB's
// running scores, seed 003), for where the number of keys is small enough to
// hold one record each. No estimation error; out-of-order events are exact.
// Each half-life has its own forward-decay clock; a key's scores for all
// half-lives sit side by side so one event touches one cache line.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ebb/decay/forward_decay.hpp"
#include "ebb/decay/weight_scaler.hpp"

namespace ebb {

class ExactDecayedCounter {
 public:
  // One entry per view; +infinity means no decay (all-time count).
  explicit ExactDecayedCounter(std::vector<double> half_lives);

  std::size_t views() const noexcept { return clocks_.size(); }
  std::size_t size() const noexcept { return keys_.size(); }
  double half_life(std::size_t view) const { return clocks_.at(view).half_life(); }

  // weight > 0 and finite, t finite: callers validate at their boundary.
  void add(std::string_view key, double weight, double t);

  // Score of the key at `now` in one view (0 for an unknown key).
  double score(std::string_view key, std::size_t view, double now) const;
  double total(std::size_t view, double now) const;
  // The k highest scores at `now`, descending (ties by key).
  std::vector<std::pair<std::string, double>> top(std::size_t view, std::size_t k, double now) const;

  std::size_t memory_bytes() const noexcept;
  std::string serialize() const;
  static ExactDecayedCounter deserialize(std::string_view blob);

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept;
  };
  void rebase_view(std::size_t view, double t);

  std::vector<ForwardDecay> clocks_;
  std::vector<WeightScaler> scalers_;
  std::vector<double> totals_;
  std::vector<std::string> keys_;
  std::vector<double> scores_;  // keys_.size() x views(), row-major
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> index_;
};

}  // namespace ebb
