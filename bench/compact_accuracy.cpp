// compact_accuracy: issue 11's starting point, measured before anything is
// built for it: how accurate is ebb's top-100 when a view must fit a small
// memory budget (128 KiB all in: the size RedisBloom users pick)?
//
//   compact_accuracy [--budget 131072] [FILE...]
//   compact_accuracy --dump DIR [FILE...]   writes each stream to DIR/<name>, one item a line
//   compact_accuracy --score LABEL STREAM_FILE RESULT_FILE
//                                           scores a peer's all-time top 100: RESULT_FILE holds
//                                           "item<TAB>estimate[<TAB>lower<TAB>upper]" lines, best first
//
// Streams: Zipf 1.1 over 200k keys, 2M events, the heavy keys drifting
// (the rank -> key map shifts every tenth of the stream); Zipf 0.8 over 1M
// keys, 2M events (flat); and each FILE, one item a line (a real stream,
// e.g. bench/compact_accuracy.sh's words of a book and a git log's paths).
// Events are 1000 a second of stream time. Views: all-time, and decayed
// with a half-life of a tenth of the stream's span.
//
// For every shape (sketch width x depth, candidates) of a grid, one
// namespace holding just that view is fed the stream in 256-event batches;
// the view's bytes (memory_bytes(): sketch, candidates, their keys,
// scratch; tests/memory checks it equals what a counting allocator sees)
// must fit the budget, and the namespace's whole heap (malloc_usable_size,
// with its ~10 KiB batch scratch and slack) is shown beside. The first row
// is the shape "memory" picks (DecayedView::fit_budget, keys held to the
// budget), the others the best of the grid. Of those that fit,
// the three best by precision@100 (then mean relative error) are printed:
// precision@100 against the exact counts, the mean and worst relative
// error of the 100 reported counts, and how many reported items' true
// counts lie outside [lower, upper] (must be 0).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/common/counting_allocator.hpp"
#include "bench/common/zipf_stream.hpp"
#include "ebb/decay/exact_decayed_counter.hpp"
#include "ebb/engine/decayed_view.hpp"
#include "ebb/engine/namespace.hpp"

namespace {

using ebb::engine::Event;

struct Stream {
  std::string name;
  std::string bytes;  // the keys, back to back
  std::vector<Event> events;
};

constexpr double kEventsPerSecond = 1000;
constexpr double kT0 = 1.7e9;

// Events point into the stream's own buffer (filled first: no reallocation after).
Stream make_stream(std::string name, const std::vector<std::string>& keys) {
  Stream s;
  s.name = std::move(name);
  std::size_t size = 0;
  for (const auto& k : keys) size += k.size();
  s.bytes.reserve(size);
  for (const auto& k : keys) s.bytes += k;
  s.events.reserve(keys.size());
  std::size_t pos = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    s.events.push_back({std::string_view(s.bytes.data() + pos, keys[i].size()), kT0 + static_cast<double>(i) / kEventsPerSecond, 1.0});
    pos += keys[i].size();
  }
  return s;
}

Stream zipf(const char* name, std::size_t distinct, std::size_t events, double skew, bool drift) {
  const auto z = ebb::bench::make_zipf_stream(distinct, events, skew, kEventsPerSecond);
  std::vector<std::string> keys(events);
  for (std::size_t i = 0; i < events; ++i) {
    const std::size_t phase = drift ? i * 10 / events : 0;  // the heavy keys move ten times
    keys[i] = z.keys[(z.ranks[i] + phase * 1009) % distinct];
  }
  return make_stream(name, keys);
}

std::optional<Stream> from_file(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::vector<std::string> keys;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) keys.push_back(line);
  }
  const char* base = std::strrchr(path, '/');
  return make_stream(base ? base + 1 : path, keys);
}

struct Shape {
  std::uint32_t width, depth, candidates;
  std::uint64_t memory = 0;  // a "memory" budget (the view holds its keys to it)
};

struct Result {
  Shape shape;
  std::size_t bytes = 0;     // the view's own bytes (memory_bytes(), what tests/memory checks against a counting allocator)
  std::size_t ns_bytes = 0;  // the whole namespace, by malloc_usable_size (adds its batch scratch and allocator slack)
  double precision = 0, mean_rel_err = 0, max_rel_err = 0;
  std::size_t outside = 0;
};

Result measure(const Stream& s, std::optional<double> half_life, const Shape& shape,
               const std::function<double(const std::string&)>& truth, const std::set<std::string>& true_top) {
  ebb::engine::NamespaceConfig c;
  c.name = "compact";
  c.k = 100;
  c.all_time = !half_life;
  if (half_life) c.half_lives = {*half_life};
  c.sketch = ebb::CountMinShape::with_dimensions(shape.width, shape.depth);
  c.candidates = shape.candidates;
  c.memory = shape.memory;
  c.clock = ebb::engine::ClockMode::event;
  Result r{shape};
  const std::size_t before = ebb::bench::live_bytes();
  {
    ebb::engine::Namespace ns(c);
    constexpr std::size_t kBatch = 256;  // the scratch grows with the batch: 4096 events hold ~160 KiB
    for (std::size_t i = 0; i < s.events.size(); i += kBatch) {
      ns.apply(std::span<const Event>(s.events.data() + i, std::min(kBatch, s.events.size() - i)));
    }
    r.ns_bytes = ebb::bench::live_bytes() - before;
    r.bytes = ns.views().front()->memory_bytes();
    const auto answer = ns.top(std::nullopt, 100);
    std::size_t hits = 0;
    double sum = 0;
    for (const auto& item : answer.items) {
      hits += true_top.contains(item.key);
      const double t = truth(item.key);
      const double rel = t > 0 ? std::fabs(item.estimate - t) / t : 1;
      sum += rel;
      r.max_rel_err = std::max(r.max_rel_err, rel);
      // Relative slack for the floating point of decayed sums.
      const double slack = 1e-9 * std::max(1.0, t);
      if (t < item.lower - slack || t > item.upper + slack) ++r.outside;
    }
    r.precision = static_cast<double>(hits) / 100.0;
    r.mean_rel_err = answer.items.empty() ? 1 : sum / static_cast<double>(answer.items.size());
  }
  return r;
}

void run(const Stream& s, std::optional<double> half_life, std::size_t budget) {
  // The exact counts: all-time in a map, decayed by the exact forward-decay counter.
  std::unordered_map<std::string, double> counts;
  ebb::ExactDecayedCounter exact({half_life.value_or(1.0)});
  for (const auto& e : s.events) {
    if (half_life) {
      exact.add(e.item, e.weight, e.time);
    } else {
      counts[std::string(e.item)] += e.weight;
    }
  }
  const double now = s.events.back().time;
  std::vector<std::pair<std::string, double>> ranked;
  if (half_life) {
    ranked = exact.top(0, 100, now);
  } else {
    ranked.assign(counts.begin(), counts.end());
    std::partial_sort(ranked.begin(), ranked.begin() + std::min<std::size_t>(100, ranked.size()), ranked.end(),
                      [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    ranked.resize(std::min<std::size_t>(100, ranked.size()));
  }
  std::set<std::string> true_top;
  for (const auto& [k, _] : ranked) true_top.insert(k);
  auto truth = [&](const std::string& key) {
    if (half_life) return exact.score(key, 0, now);
    auto it = counts.find(key);
    return it == counts.end() ? 0.0 : it->second;
  };
  // The shape a user gets from "memory" (DecayedView::fit_budget), then the grid.
  const auto sizing = ebb::engine::DecayedView::fit_budget(budget, 100);
  const Result chosen = measure(s, half_life, {sizing.sketch.width, sizing.sketch.depth, sizing.candidates, budget}, truth, true_top);
  std::vector<Result> fits;
  for (std::uint32_t depth : {2u, 3u, 4u, 5u}) {
    for (std::uint32_t width : {512u, 1024u, 2048u, 4096u, 8192u}) {
      if (static_cast<std::size_t>(width) * depth * 8 > budget) continue;
      for (std::uint32_t candidates : {128u, 256u, 512u, 1024u}) {
        const Result r = measure(s, half_life, {width, depth, candidates}, truth, true_top);
        if (r.bytes <= budget) fits.push_back(r);
      }
    }
  }
  std::sort(fits.begin(), fits.end(), [](const Result& a, const Result& b) {
    return a.precision != b.precision ? a.precision > b.precision : a.mean_rel_err < b.mean_rel_err;
  });
  char view[64] = "all-time";
  if (half_life) std::snprintf(view, sizeof view, "decayed, half-life %.3g s", *half_life);
  std::printf("%s (%zu events, %zu distinct), %s: %zu shapes fit\n", s.name.c_str(), s.events.size(), counts.empty() ? exact.size() : counts.size(),
              view, fits.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(3, fits.size()) + 1; ++i) {
    const auto& r = i == 0 ? chosen : fits[i - 1];
    std::printf("%s", i == 0 ? "  memory (auto): " : "  grid:          ");
    std::printf("%5u x %u, %4u candidates: view %6.1f KiB (namespace %6.1f)  precision@100 %.2f  mean rel err %7.3f%%  worst %8.2f%%  "
                "outside bounds %zu\n",
                r.shape.width, r.shape.depth, r.shape.candidates, r.bytes / 1024.0, r.ns_bytes / 1024.0, r.precision, r.mean_rel_err * 100,
                r.max_rel_err * 100, r.outside);
  }
  std::fflush(stdout);
}

}  // namespace

// A peer's answer against the exact all-time counts of the stream it read.
int score(const char* label, const char* stream_file, const char* result_file) {
  const auto s = from_file(stream_file);
  std::ifstream in(result_file);
  if (!s || !in) {
    std::fprintf(stderr, "compact_accuracy: cannot read %s or %s\n", stream_file, result_file);
    return 1;
  }
  std::unordered_map<std::string, double> counts;
  for (const auto& e : s->events) counts[std::string(e.item)] += e.weight;
  std::vector<std::pair<std::string, double>> ranked(counts.begin(), counts.end());
  const std::size_t k = std::min<std::size_t>(100, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k), ranked.end(),
                    [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  std::set<std::string> true_top;
  for (std::size_t i = 0; i < k; ++i) true_top.insert(ranked[i].first);
  std::size_t n = 0, hits = 0, outside = 0, bounded = 0;
  double sum = 0, worst = 0;
  for (std::string line; n < 100 && std::getline(in, line);) {
    std::vector<std::string> f;
    for (std::size_t at = 0;;) {
      const auto tab = line.find('\t', at);
      f.push_back(line.substr(at, tab == std::string::npos ? std::string::npos : tab - at));
      if (tab == std::string::npos) break;
      at = tab + 1;
    }
    if (f.size() < 2) continue;
    ++n;
    hits += true_top.contains(f[0]);
    const auto it = counts.find(f[0]);
    const double t = it == counts.end() ? 0 : it->second, est = std::strtod(f[1].c_str(), nullptr);
    const double rel = t > 0 ? std::fabs(est - t) / t : 1;
    sum += rel;
    worst = std::max(worst, rel);
    if (f.size() >= 4) {
      ++bounded;
      outside += t < std::strtod(f[2].c_str(), nullptr) || t > std::strtod(f[3].c_str(), nullptr);
    }
  }
  std::printf("  %-40s precision@100 %.2f  mean rel err %7.3f%%  worst %8.2f%%  %s\n", label, hits / 100.0, n ? sum / n * 100 : 100.0,
              worst * 100, bounded ? ("outside bounds " + std::to_string(outside)).c_str() : "(no bounds)");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--score") == 0) return score(argv[2], argv[3], argv[4]);
  std::size_t budget = 128 * 1024;
  const char* dump = nullptr;
  std::vector<Stream> streams;
  streams.push_back(zipf("zipf-1.1-drifting", 200'000, 2'000'000, 1.1, true));
  streams.push_back(zipf("zipf-0.8-flat", 1'000'000, 2'000'000, 0.8, false));
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
      budget = std::strtoull(argv[++i], nullptr, 10);
      continue;
    }
    if (std::strcmp(argv[i], "--dump") == 0 && i + 1 < argc) {
      dump = argv[++i];
      continue;
    }
    auto s = from_file(argv[i]);
    if (!s || s->events.empty()) {
      std::fprintf(stderr, "compact_accuracy: cannot read items from %s\n", argv[i]);
      return 1;
    }
    streams.push_back(std::move(*s));
  }
  if (dump) {
    for (const auto& s : streams) {
      std::ofstream out(std::string(dump) + "/" + s.name);
      for (const auto& e : s.events) out << e.item << '\n';
      if (!out) {
        std::fprintf(stderr, "compact_accuracy: cannot write %s/%s\n", dump, s.name.c_str());
        return 1;
      }
    }
    return 0;
  }
  std::printf("budget: %zu bytes a view, all in (counting allocator)\n", budget);
  for (const auto& s : streams) {
    const double span = static_cast<double>(s.events.size()) / kEventsPerSecond;
    run(s, std::nullopt, budget);
    run(s, span / 10, budget);
  }
  return 0;
}
