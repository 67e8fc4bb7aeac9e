#pragma once
// Synthetic streams for benchmarks and the generator: Zipf(s) ranks over n
// distinct keys, drawn by inverse CDF (binary search over the cumulative
// weights). Deterministic for a seed, so runs compare like with like.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ebb::bench {

class ZipfSampler {
 public:
  ZipfSampler(std::size_t n, double s) : cdf_(n) {
    double acc = 0;
    for (std::size_t i = 0; i < n; ++i) cdf_[i] = acc += 1.0 / std::pow(static_cast<double>(i + 1), s);
    total_ = acc;
  }
  template <typename Rng>
  std::uint32_t operator()(Rng& rng) const {
    const double r = std::uniform_real_distribution<double>(0, total_)(rng);
    return static_cast<std::uint32_t>(std::lower_bound(cdf_.begin(), cdf_.end(), r) - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
  double total_;
};

// Key names of varied length, like hashtags or URL paths. Rank order is
// scrambled against name order so no key's name reveals its rank.
inline std::string key_name(std::uint32_t rank) {
  const std::uint64_t x = (static_cast<std::uint64_t>(rank) * 0x9E3779B97F4A7C15ULL) >> 40;
  std::string name = "tag_";
  name += std::to_string(rank);
  name += '_';
  name.append(x % 13, static_cast<char>('a' + x % 26));
  return name;
}

struct ZipfStream {
  std::vector<std::string> keys;      // by rank
  std::vector<std::uint32_t> ranks;   // the stream
  std::vector<double> times;          // event times, increasing
};

inline ZipfStream make_zipf_stream(std::size_t distinct, std::size_t events, double s, double events_per_second,
                                   std::uint64_t seed = 42) {
  ZipfStream z;
  z.keys.reserve(distinct);
  for (std::uint32_t i = 0; i < distinct; ++i) z.keys.push_back(key_name(i));
  ZipfSampler sampler(distinct, s);
  std::mt19937_64 rng(seed);
  z.ranks.resize(events);
  z.times.resize(events);
  const double t0 = 1.7e9;
  for (std::size_t i = 0; i < events; ++i) {
    z.ranks[i] = sampler(rng);
    z.times[i] = t0 + static_cast<double>(i) / events_per_second;
  }
  return z;
}

}  // namespace ebb::bench
