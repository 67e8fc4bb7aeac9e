// Issue 9's window figures, each against a baseline run in this process:
//
//   ingest   one Zipf(1.1) stream over 1M keys through a namespace with the
//            all-time view and a 5m half-life (decayed-only), then the same
//            plus windows 1m/1h/1d; ratio of the medians; at a live rate and
//            as a fast replay;
//   query    top-100 of the 1h and 1d windows from a second thread while the
//            first ingests as fast as it can (the server's discipline: an
//            exclusive lock per batch, shared for queries); p50/p99;
//   memory   a namespace with windows 1m/1h/1d/7d after its rings have
//            filled (8 days of stream time), measured by the allocator
//            (glibc mallinfo2: bytes in use, all arenas, mmapped included);
//   accuracy a drifting Zipf stream (every key moves up a rank every 10 min): window
//            top-100 precision and mean relative error against exact counts
//            over the answer's own stated boundaries, now and 5 minutes back.
//
// Usage: window_bench [reps [ingest|query|memory|accuracy]]   (default 5, all; medians are printed)
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "bench/common/timing.hpp"
#include "bench/common/zipf_stream.hpp"
#include "ebb/engine/namespace.hpp"

namespace {

using ebb::engine::Event;
using ebb::engine::Namespace;
using ebb::engine::NamespaceConfig;
using ebb::engine::ViewSpec;
using ebb::bench::Clock;

constexpr std::size_t kBatch = 4096;

using ebb::bench::median;
using ebb::bench::seconds_since;

using ebb::bench::percentile;

NamespaceConfig config(std::vector<double> windows) {
  NamespaceConfig c;
  c.name = "bench";
  c.k = 100;
  c.all_time = true;
  c.half_lives = {300};
  c.windows = std::move(windows);
  if (const char* w = std::getenv("EBB_WINDOW_WIDTH")) c.window_sketch_width = static_cast<std::uint32_t>(std::atoi(w));
  if (const char* k = std::getenv("EBB_CANDIDATES")) c.candidates = static_cast<std::uint32_t>(std::atoi(k));
  c.clock = ebb::engine::ClockMode::event;
  c.max_event_age = 30 * 86400.0;
  c.max_time_jump = 30 * 86400.0;
  return c;
}

// A stream as events pointing into one buffer of key bytes (as a request body would).
struct Stream {
  std::string bytes;
  std::vector<Event> events;
  std::vector<std::uint32_t> keys;  // key id per event (for the exact model)
  std::vector<std::string> names;
};

// Zipf(1.1) ranks; with `drift`, rank r maps to key (r + t / 600) mod n: every
// 10 minutes of stream time each key moves one rank up the list (and the
// top one drops to the bottom), so the window's top list keeps changing.
Stream make_stream(std::size_t distinct, std::size_t n, double per_second, bool drift, std::uint64_t seed) {
  const auto z = ebb::bench::make_zipf_stream(distinct, n, 1.1, per_second, seed);
  Stream s;
  s.names = z.keys;
  s.keys.resize(n);
  std::size_t size = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t shift = drift ? static_cast<std::uint64_t>((z.times[i] - z.times[0]) / 600) : 0;
    s.keys[i] = static_cast<std::uint32_t>((z.ranks[i] + shift) % distinct);
    size += s.names[s.keys[i]].size();
  }
  s.bytes.reserve(size);
  for (std::size_t i = 0; i < n; ++i) s.bytes += s.names[s.keys[i]];
  s.events.resize(n);
  std::size_t pos = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t len = s.names[s.keys[i]].size();
    s.events[i] = {std::string_view(s.bytes.data() + pos, len), z.times[i], 1.0};
    pos += len;
  }
  return s;
}

void feed(Namespace& ns, const Stream& s, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; i += kBatch) {
    ns.apply(std::span<const Event>(s.events.data() + i, std::min(kBatch, end - i)));
  }
}

// The windows' extra cost per event falls as a bucket period gets more
// events: a live server's second holds as many events as it ingests in a
// second. So two streams: live (1M events per second of stream time), and a
// replay of 10k events/s of stream time at full speed, where every bucket
// period is short and its opening and merge cost shows.
//
// Warmed up, as a server runs: the first half of the stream goes in
// untimed (a bucket's first opening allocates and faults in its sketch,
// which a server does once per slot in its life; in the replay the 1 s ring
// fills and reuses its buckets; at the live rate the half is one second of
// stream time, so fewer slots are warm), the second half is timed.
// The cold figure (a fresh namespace, the whole stream) is printed too.
void ingest(int reps) {
  for (const double rate : {1'000'000.0, 10'000.0}) {
    const std::size_t half = 1'000'000;
    const Stream s = make_stream(1'000'000, 2 * half, rate, false, 42);
    std::vector<double> base, windows, cold_base, cold_windows;
    for (int r = 0; r < reps; ++r) {
      for (int which = 0; which < 2; ++which) {
        const std::vector<double> w = which == 0 ? std::vector<double>{} : std::vector<double>{60, 3600, 86400};
        {
          Namespace ns(config(w));
          feed(ns, s, 0, half);
          const auto t = Clock::now();
          feed(ns, s, half, 2 * half);
          (which == 0 ? base : windows).push_back(half / seconds_since(t) / 1e6);
        }
        Namespace ns(config(w));
        const auto t = Clock::now();
        feed(ns, s, 0, 2 * half);
        (which == 0 ? cold_base : cold_windows).push_back(2 * half / seconds_since(t) / 1e6);
      }
    }
    std::printf("ingest at %.0f events per stream second (M events/s, median of %d): all+5m %.2f, all+5m+windows 1m/1h/1d %.2f; cost ratio %.2fx (goal <= 2x)"
                "; cold start %.2f vs %.2f: %.2fx\n",
                rate, reps, median(base), median(windows), median(base) / median(windows), median(cold_base), median(cold_windows),
                median(cold_base) / median(cold_windows));
  }
}

void query_under_ingest(int reps) {
  // An hour at 2000 events/s first (so the 1h window is full), then ingest
  // on at 1M events per stream second (about the speed it is replayed at,
  // so stream time passes about as fast as wall time) while queries run.
  const std::size_t warm = 3600 * 2'000;
  Stream s = make_stream(1'000'000, warm + 6'000'000, 2'000, false, 7);
  const double t_warm = s.events[warm - 1].time;
  for (std::size_t i = warm; i < s.events.size(); ++i) s.events[i].time = t_warm + static_cast<double>(i - warm) / 1e6;
  Namespace ns(config({60, 3600, 86400}));
  feed(ns, s, 0, warm);
  std::shared_mutex mu;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::size_t i = warm; i < s.events.size(); i += kBatch) {
      std::unique_lock lock(mu);
      ns.apply(std::span<const Event>(s.events.data() + i, std::min(kBatch, s.events.size() - i)));
    }
    done = true;
  });
  std::map<double, std::vector<double>> ms;
  std::size_t q = 0;
  while (!done) {
    const double w = (q++ % 2 == 0) ? 3600 : 86400;
    const auto t = Clock::now();
    {
      std::shared_lock lock(mu);
      const auto a = ns.top(ViewSpec::sliding(w), 100);
      if (a.items.size() != 100) std::abort();
    }
    ms[w].push_back(seconds_since(t) * 1e3);
  }
  writer.join();
  (void)reps;
  for (const auto& [w, v] : ms) {
    std::printf("query top-100 under ingest, window %s: %zu queries, p50 %.3f ms, p99 %.3f ms (goal p99 < %s)\n", w == 3600 ? "1h" : "1d",
                v.size(), percentile(v, 0.5), percentile(v, 0.99), w == 3600 ? "5 ms" : "20 ms");
  }
}

void memory() {
  // 8 days at 20 events/s: every ring fills and wraps.
  const Stream s = make_stream(200'000, 8 * 86400 * 20, 20, true, 11);
  const std::size_t before = mallinfo2().uordblks + mallinfo2().hblkhd;
  {
    Namespace ns(config({60, 3600, 86400, 7 * 86400}));
    feed(ns, s, 0, s.events.size());
    const std::size_t after = mallinfo2().uordblks + mallinfo2().hblkhd;
    const auto stats = ns.stats();
    const auto answer = ns.top(ViewSpec::sliding(7 * 86400), 100);
    std::printf("memory, windows 1m/1h/1d/7d + all + 5m (8 days of stream): %.1f MiB allocated (the namespace reports %.1f MiB); "
                "window bound epsilon %.3g (max_error %.0f of a 7d total of %.0f)\n",
                (after - before) / 1048576.0, stats.memory_bytes / 1048576.0, answer.accuracy.epsilon, answer.accuracy.max_error, answer.total);
  }
}

struct Quality {
  double precision = 0;
  double mre = 0;
};

Quality quality(const ebb::engine::TopKAnswer& a, const Stream& s, std::size_t seen, bool closed_end) {
  std::unordered_map<std::uint32_t, double> exact;
  for (std::size_t i = 0; i < seen; ++i) {
    const double t = s.events[i].time;
    if (t < a.window_start || t > a.window_end || (!closed_end && t == a.window_end)) continue;
    exact[s.keys[i]] += 1;
  }
  std::unordered_map<std::string_view, double> by_name;
  for (const auto& [k, c] : exact) by_name[s.names[k]] = c;
  std::vector<double> counts;
  for (const auto& [k, c] : exact) counts.push_back(c);
  std::sort(counts.rbegin(), counts.rend());
  const double kth = counts[std::min<std::size_t>(99, counts.size() - 1)];
  Quality q;
  double hits = 0, err = 0;
  for (const auto& item : a.items) {
    const auto it = by_name.find(item.key);
    const double truth = it == by_name.end() ? 0 : it->second;
    hits += truth >= kth;  // ties at the 100th count are all correct answers
    err += truth > 0 ? std::fabs(item.estimate - truth) / truth : 1;
  }
  if (std::getenv("EBB_DEBUG")) {
    for (const auto& item : a.items) {
      const auto it = by_name.find(item.key);
      const double truth = it == by_name.end() ? 0 : it->second;
      if (std::fabs(item.estimate - truth) > 0.001 * truth) std::printf("  %s est %.0f lower %.0f truth %.0f\n", item.key.c_str(), item.estimate, item.lower, truth);
    }
  }
  q.precision = hits / a.items.size();
  q.mre = err / a.items.size();
  return q;
}

void accuracy() {
  struct Case {
    double window;
    const char* name;
    std::size_t events;
    double per_second;
  };
  // Each stream is longer than its window by 25 minutes.
  const Case cases[] = {{60, "1m", 3'000'000, 2'000}, {3600, "1h", 8'500'000, 2'000}, {86400, "1d", 8'800'000, 100}};
  for (const auto& c : cases) {
    const Stream s = make_stream(1'000'000, c.events, c.per_second, true, 5);
    Namespace ns(config({60, 3600, 86400}));
    feed(ns, s, 0, s.events.size());
    const auto spec = ViewSpec::sliding(c.window);
    const auto now = ns.top(spec, 100);
    const auto past = ns.top_at(spec, 100, ns.now() - 300);
    const Quality qn = quality(now, s, s.events.size(), true);
    std::printf("accuracy, window %s, drifting Zipf: now precision %.3f, MRE %.5f%%", c.name, qn.precision, qn.mre * 100);
    if (past) {
      const Quality qp = quality(*past, s, s.events.size(), false);
      std::printf("; 5 min back (from %s, exact to %.0f s) precision %.3f, MRE %.5f%%", past->source.empty() ? "memory" : past->source.c_str(),
                  past->granularity, qp.precision, qp.mre * 100);
    } else {
      std::printf("; 5 min back: beyond memory");
    }
    std::printf(" (goal >= 0.99, <= 0.1%%)\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::string only = argc > 2 ? argv[2] : "";
  if (!only.empty() && only != "ingest" && only != "query" && only != "memory" && only != "accuracy") {
    std::fprintf(stderr, "window_bench: unknown section '%s' (ingest, query, memory or accuracy)\n", only.c_str());
    return 2;
  }
  if (only.empty() || only == "ingest") ingest(reps);
  if (only.empty() || only == "query") query_under_ingest(reps);
  if (only.empty() || only == "memory") memory();
  if (only.empty() || only == "accuracy") accuracy();
  return 0;
}
