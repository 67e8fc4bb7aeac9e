#pragma once
// The in-process benchmarks' clock and summaries: machines here are noisy,
// so figures are medians (and percentiles) of repeated runs.
#include <algorithm>
#include <chrono>
#include <vector>

namespace ebb::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace ebb::bench
