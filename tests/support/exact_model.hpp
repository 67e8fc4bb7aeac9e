#pragma once
// The brute-force reference every property test compares against: it keeps
// every event and sums w * exp(-lambda (now - t)) directly, no landmarks,
// no renormalisation, no sketches.
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace ebb::testing {

struct ModelEvent {
  std::string key;
  double time;
  double weight;
};

class ExactModel {
 public:
  void add(const std::string& key, double t, double w) { events_.push_back({key, t, w}); }
  const std::vector<ModelEvent>& events() const { return events_; }

  // lambda = 0: plain sums.
  std::map<std::string, double> counts(double lambda, double now) const {
    std::map<std::string, double> out;
    for (const auto& e : events_) out[e.key] += e.weight * std::exp(-lambda * (now - e.time));
    return out;
  }
  double total(double lambda, double now) const {
    double s = 0;
    for (const auto& e : events_) s += e.weight * std::exp(-lambda * (now - e.time));
    return s;
  }

 private:
  std::vector<ModelEvent> events_;
};

// A random stream: Zipf-like keys over a universe, random weights, times
// that drift forward with out-of-order jitter.
struct StreamSpec {
  std::size_t events = 5000;
  std::size_t universe = 500;
  double skew = 1.1;
  double start_time = 1.7e9;
  double duration = 3600;     // seconds of stream time
  double jitter = 30;         // seconds an event may arrive out of order
  bool integer_weights = false;
  double max_weight = 10;
};

inline std::vector<ModelEvent> random_stream(const StreamSpec& spec, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> cdf(spec.universe);
  double acc = 0;
  for (std::size_t i = 0; i < spec.universe; ++i) cdf[i] = acc += 1.0 / std::pow(i + 1.0, spec.skew);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<ModelEvent> out;
  out.reserve(spec.events);
  for (std::size_t i = 0; i < spec.events; ++i) {
    const double r = u(rng) * acc;
    const std::size_t k = std::lower_bound(cdf.begin(), cdf.end(), r) - cdf.begin();
    const double base = spec.start_time + spec.duration * static_cast<double>(i) / spec.events;
    double t = base - spec.jitter * u(rng);
    if (t < 0) t = 0;
    double w = spec.integer_weights ? std::floor(1 + u(rng) * spec.max_weight) : 0.01 + u(rng) * spec.max_weight;
    out.push_back({"key-" + std::to_string(k), t, w});
  }
  return out;
}

// Relative difference, safe at zero.
inline double rel_diff(double a, double b) {
  const double scale = std::max(std::fabs(a), std::fabs(b));
  return scale == 0 ? 0 : std::fabs(a - b) / scale;
}

}  // namespace ebb::testing
