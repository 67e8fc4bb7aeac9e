// What the accuracy self-audit costs ingest (issue 15): events per second
// into a namespace with the default audit (a sample of 64, each view's top
// 10) against the same namespace without one (audit_sample and audit_top
// 0), in this process, interleaved, median of `reps` runs each. Two
// streams: many items (a Zipf stream over 1M keys: most events stop at the
// audit's filter) and few (50 keys: every event is of a sampled item, the
// worst case). Views: all-time, half-life 5m, windows 1m and 1h (what
// `ebb serve` users create). Also the time of one audit pass.
//
// Usage: audit_bench [events (default 2000000)] [reps (default 7)]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/common/timing.hpp"
#include "ebb/engine/namespace.hpp"

namespace {

using ebb::bench::Clock;
using ebb::bench::median;
using ebb::bench::seconds_since;
using ebb::engine::Event;
using ebb::engine::Namespace;
using ebb::engine::NamespaceConfig;

struct Audit {
  std::uint32_t sample, top;
};

NamespaceConfig config(Audit audit) {
  NamespaceConfig c;
  c.name = "bench";
  c.k = 10;
  c.all_time = true;
  c.half_lives = {300};
  c.windows = {60, 3600};
  c.clock = ebb::engine::ClockMode::event;
  c.max_event_age = 1e9;
  c.audit_sample = audit.sample;
  c.audit_top = audit.top;
  return c;
}

std::vector<std::string> stream(std::size_t events, std::size_t universe) {
  std::mt19937_64 rng(42);
  std::vector<double> cdf(universe);
  double acc = 0;
  for (std::size_t i = 0; i < universe; ++i) cdf[i] = acc += 1.0 / std::pow(i + 1.0, 1.1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::string> out;
  out.reserve(events);
  for (std::size_t i = 0; i < events; ++i) out.push_back("item:" + std::to_string(std::lower_bound(cdf.begin(), cdf.end(), u(rng) * acc) - cdf.begin()));
  return out;
}

// Events per second for one run; a pass every 100k events (as a 10 s
// interval at 10k events/s would), timed apart. Without an audit each
// view's top 10 is read as often instead (as a dashboard would): a window
// view keeps a cache of the sums it answered from, which ingest then keeps
// up, so reads cost ingest something whether the audit or a user makes them.
double run(Audit audit, const std::vector<std::string>& keys, std::vector<double>& pass_seconds) {
  const bool audited = audit.sample > 0 || audit.top > 0;
  Namespace ns(config(audit));
  std::vector<Event> batch;
  batch.reserve(1000);
  double seconds = 0;
  for (std::size_t at = 0; at < keys.size(); at += 1000) {
    batch.clear();
    for (std::size_t i = at; i < std::min(keys.size(), at + 1000); ++i) batch.push_back({keys[i], 1.7e9 + static_cast<double>(i) / 10000, 1});
    const auto t = Clock::now();
    ns.apply(batch);
    seconds += seconds_since(t);
    if ((at + 1000) % 100000 == 0) {
      const auto p = Clock::now();
      if (audited) {
        ns.audit_pass();
        pass_seconds.push_back(seconds_since(p));
      } else {
        for (const auto& v : ns.views()) (void)ns.top(v->spec(), 10);
      }
    }
  }
  return static_cast<double>(keys.size()) / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2'000'000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  for (const auto& [name, universe] : {std::pair{"many items (1M keys)", std::size_t{1'000'000}}, std::pair{"few items (50 keys)", std::size_t{50}}}) {
    const auto keys = stream(events, universe);
    std::vector<double> with, without, sample_only, top_only, passes, unused;
    for (int r = 0; r < reps; ++r) {
      without.push_back(run({0, 0}, keys, unused));
      with.push_back(run({64, 10}, keys, passes));
      sample_only.push_back(run({64, 0}, keys, unused));
      top_only.push_back(run({0, 10}, keys, unused));
    }
    std::printf("%-22s without audit %10.0f ev/s   default audit %10.0f ev/s (ratio %.3f)   sample only %.3f   top only %.3f   "
                "pass median %.3f ms (max %.3f ms)\n",
                name, median(without), median(with), median(with) / median(without), median(sample_only) / median(without),
                median(top_only) / median(without), median(passes) * 1e3, *std::max_element(passes.begin(), passes.end()) * 1e3);
  }
}
