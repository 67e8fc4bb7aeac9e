// The full decayed pipeline (validate, hash, forward-decay weights, CMS
// conservative update, candidate heap) through engine::Namespace, against
// an exact std::unordered_map<std::string, double> decayed counter on the
// same Zipf(1.1) stream over 1M distinct keys; and the accuracy of ebb's
// top-100 at <= 4 MiB of state against the exact decayed counts.
#include <benchmark/benchmark.h>

#include <set>
#include <unordered_map>

#include "bench/common/zipf_stream.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/decay/exact_decayed_counter.hpp"
#include "ebb/decay/weight_scaler.hpp"
#include "ebb/engine/namespace.hpp"

namespace {

constexpr std::size_t kDistinct = 1'000'000;
constexpr std::size_t kEvents = 8'000'000;
constexpr std::size_t kBatch = 4096;
constexpr double kHalfLife = 300;

const ebb::bench::ZipfStream& stream() {
  static const auto z = ebb::bench::make_zipf_stream(kDistinct, kEvents, 1.1, 50'000.0);  // 160 s of stream time
  return z;
}

// Events point into one contiguous buffer of key bytes in stream order, as
// they do in a real ingest path (a request body, a file chunk); both
// contenders read the same bytes.
const std::vector<ebb::engine::Event>& events() {
  static std::string bytes;
  static const auto ev = [] {
    const auto& z = stream();
    std::size_t size = 0;
    for (std::size_t i = 0; i < kEvents; ++i) size += z.keys[z.ranks[i]].size();
    bytes.reserve(size);
    for (std::size_t i = 0; i < kEvents; ++i) bytes += z.keys[z.ranks[i]];
    std::vector<ebb::engine::Event> out(kEvents);
    std::size_t pos = 0;
    for (std::size_t i = 0; i < kEvents; ++i) {
      const std::size_t len = z.keys[z.ranks[i]].size();
      out[i] = {std::string_view(bytes.data() + pos, len), z.times[i], 1.0};
      pos += len;
    }
    return out;
  }();
  return ev;
}

// The configuration measured: 4 MiB of state in total (sketch + summary).
ebb::engine::NamespaceConfig config(std::uint32_t width, std::uint32_t depth, std::uint32_t candidates = 1024) {
  ebb::engine::NamespaceConfig c;
  c.name = "bench";
  c.k = 100;
  c.all_time = false;
  c.half_lives = {kHalfLife};
  c.sketch = ebb::CountMinShape::with_dimensions(width, depth);
  c.candidates = candidates;
  c.clock = ebb::engine::ClockMode::event;
  return c;
}

void BM_PipelineEbb(benchmark::State& state) {
  const auto& ev = events();
  ebb::engine::Namespace ns(config(static_cast<std::uint32_t>(state.range(0)), static_cast<std::uint32_t>(state.range(1)),
                                   static_cast<std::uint32_t>(state.range(2))));
  std::size_t i = 0;
  for (auto _ : state) {
    if (i + kBatch > ev.size()) i = 0;
    ns.apply(std::span<const ebb::engine::Event>(ev.data() + i, kBatch));
    i += kBatch;
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["state_MiB"] = ns.stats().memory_bytes / 1048576.0;
}

// The hand-rolled alternative, tuned: one exact decayed score per key in a
// hash map, heterogeneous lookup (no string built per event), the same
// forward-decay arithmetic and exp cache as ebb.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

void BM_ExactUnorderedMap(benchmark::State& state) {
  const auto& ev = events();
  std::unordered_map<std::string, double, StringHash, std::equal_to<>> scores;
  auto clock = ebb::ForwardDecay::with_half_life(kHalfLife);
  clock.anchor(ev[0].time);
  ebb::WeightScaler scaler;
  std::size_t i = 0;
  for (auto _ : state) {
    if (i + kBatch > ev.size()) i = 0;
    for (std::size_t j = i; j < i + kBatch; ++j) {
      const double w = ev[j].weight * scaler.factor(clock, ev[j].time);
      auto it = scores.find(ev[j].item);
      if (it == scores.end()) it = scores.emplace(std::string(ev[j].item), 0.0).first;
      it->second += w;
    }
    i += kBatch;
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["keys"] = static_cast<double>(scores.size());
}

// The same counter as most would first write it: operator[] with a
// std::string built per event, one exp() per event.
void BM_ExactUnorderedMapPlain(benchmark::State& state) {
  const auto& ev = events();
  std::unordered_map<std::string, double> scores;
  const double lambda = std::log(2.0) / kHalfLife;
  const double landmark = ev[0].time;
  std::size_t i = 0;
  for (auto _ : state) {
    if (i + kBatch > ev.size()) i = 0;
    for (std::size_t j = i; j < i + kBatch; ++j) scores[std::string(ev[j].item)] += ev[j].weight * std::exp(lambda * (ev[j].time - landmark));
    i += kBatch;
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["keys"] = static_cast<double>(scores.size());
}

// One pass over the whole stream; precision@100 and the mean relative error
// of the reported top-100 counts against the exact decayed counts.
void BM_AccuracyTop100(benchmark::State& state) {
  const auto& ev = events();
  ebb::ExactDecayedCounter exact({kHalfLife});
  for (const auto& e : ev) exact.add(e.item, e.weight, e.time);
  const double now = ev.back().time;
  const auto truth = exact.top(0, 100, now);
  std::set<std::string> true_top;
  for (const auto& [k, _] : truth) true_top.insert(k);
  double precision = 0, mean_rel_err = 0, max_rel_err = 0, state_mib = 0;
  for (auto _ : state) {
    ebb::engine::Namespace ns(config(static_cast<std::uint32_t>(state.range(0)), static_cast<std::uint32_t>(state.range(1))));
    for (std::size_t i = 0; i < ev.size(); i += kBatch) {
      ns.apply(std::span<const ebb::engine::Event>(ev.data() + i, std::min(kBatch, ev.size() - i)));
    }
    const auto answer = ns.top(std::nullopt, 100);
    std::size_t hits = 0;
    double err_sum = 0;
    max_rel_err = 0;
    for (const auto& item : answer.items) {
      hits += true_top.contains(item.key);
      const double t = exact.score(item.key, 0, now);
      const double rel = std::fabs(item.estimate - t) / t;
      err_sum += rel;
      max_rel_err = std::max(max_rel_err, rel);
    }
    precision = static_cast<double>(hits) / 100.0;
    mean_rel_err = err_sum / static_cast<double>(answer.items.size());
    state_mib = ns.stats().memory_bytes / 1048576.0;
  }
  state.counters["precision_at_100"] = precision;
  state.counters["mean_rel_err_pct"] = mean_rel_err * 100;
  state.counters["max_rel_err_pct"] = max_rel_err * 100;
  state.counters["state_MiB"] = state_mib;
}

}  // namespace

// Args: sketch width, depth, candidates. 4 x 2^17 doubles = 4 MiB would
// leave no room for the summary inside 4 MiB; 3 x 2^17 (3 MiB) and 4 x 2^16
// (2 MiB) fit. 2048 x 3 with 512 candidates is a view of 128 KiB all in
// (issue 11's size, bench/compact_accuracy).
BENCHMARK(BM_PipelineEbb)
    ->Args({1 << 17, 3, 1024})
    ->Args({1 << 16, 4, 1024})
    ->Args({2048, 3, 512})
    ->MinTime(2.0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactUnorderedMap)->MinTime(2.0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactUnorderedMapPlain)->MinTime(2.0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AccuracyTop100)->Args({1 << 17, 3})->Args({1 << 16, 4})->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
