// Count-Min conservative update on a 4 x 2^20 double sketch (32 MiB, far
// beyond L2): ns per event, single thread. The naive loop (one event at a
// time, no prefetch) is the in-process baseline; the batched path is what
// ebb's views run, undecayed (rate 0) and decayed (half-life 5m), both
// taking each event's weight from its time through the view's clock.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ebb/decay/forward_decay.hpp"
#include "ebb/decay/weight_scaler.hpp"
#include "ebb/sketch/count_min/count_min.hpp"

namespace {

constexpr std::size_t kEvents = 1 << 22;
constexpr std::size_t kChunk = 256;  // as engine views process a batch

struct Input {
  std::vector<std::uint64_t> hashes;
  std::vector<double> times;
  Input() : hashes(kEvents), times(kEvents) {
    std::mt19937_64 rng(1);
    for (auto& h : hashes) h = rng();  // uniform keys: every row access is a cache miss
    for (std::size_t i = 0; i < kEvents; ++i) times[i] = 1.7e9 + i * 1e-6;  // 1M events/s of stream time
  }
};
const Input& input() {
  static const Input in;
  return in;
}

ebb::CountMin make_sketch() { return ebb::CountMin(ebb::CountMinShape::with_dimensions(1 << 20, 4)); }

void BM_CmsNaiveLoop(benchmark::State& state) {
  const auto& in = input();
  auto cms = make_sketch();
  std::size_t i = 0;
  for (auto _ : state) {
    for (std::size_t j = 0; j < kChunk; ++j, ++i) benchmark::DoNotOptimize(cms.update(in.hashes[i % kEvents], 1.0));
  }
  state.SetItemsProcessed(state.iterations() * kChunk);
}

// The engine's path for a view: weights from event times through the
// view's clock, then the batched update. "No decay" is the same code with
// rate 0 (ForwardDecay::none()), so the two differ by the decay alone.
void batch_through_clock(benchmark::State& state, ebb::ForwardDecay clock) {
  const auto& in = input();
  auto cms = make_sketch();
  clock.anchor(in.times[0]);
  ebb::WeightScaler scaler;
  // A batch's times arrive with the batch (in cache), as in a view's
  // PreparedBatch: 1M events/s of stream time.
  std::vector<double> times(kChunk), ones(kChunk, 1.0), weights(kChunk), est(kChunk);
  double t = in.times[0];
  std::size_t i = 0;
  for (auto _ : state) {
    for (auto& x : times) x = t += 1e-6;
    scaler.scale(clock, times.data(), ones.data(), weights.data(), kChunk);
    cms.update_batch({in.hashes.data() + i, kChunk}, weights, est);
    benchmark::DoNotOptimize(est.data());
    i = (i + kChunk) % kEvents;
  }
  state.SetItemsProcessed(state.iterations() * kChunk);
}

void BM_CmsBatchUndecayed(benchmark::State& state) { batch_through_clock(state, ebb::ForwardDecay::none()); }
void BM_CmsBatchDecayed(benchmark::State& state) { batch_through_clock(state, ebb::ForwardDecay::with_half_life(300)); }

// The forward-decay weights alone (what decayed adds to the batch path).
void BM_WeightScalerOnly(benchmark::State& state) {
  const auto& in = input();
  auto clock = ebb::ForwardDecay::with_half_life(300);
  clock.anchor(in.times[0]);
  ebb::WeightScaler scaler;
  std::vector<double> ones(kChunk, 1.0), weights(kChunk);
  std::size_t i = 0;
  for (auto _ : state) {
    scaler.scale(clock, in.times.data() + i, ones.data(), weights.data(), kChunk);
    benchmark::DoNotOptimize(weights.data());
    i = (i + kChunk) % kEvents;
  }
  state.SetItemsProcessed(state.iterations() * kChunk);
}

}  // namespace

BENCHMARK(BM_WeightScalerOnly);
BENCHMARK(BM_CmsNaiveLoop)->MinTime(1.0);
BENCHMARK(BM_CmsBatchUndecayed)->MinTime(1.0);
BENCHMARK(BM_CmsBatchDecayed)->MinTime(1.0);
BENCHMARK_MAIN();
