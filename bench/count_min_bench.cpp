// Count-Min conservative update on a 4 x 2^20 double sketch (32 MiB, far
// beyond L2): ns per event, single thread. The naive loop (one event at a
// time, no prefetch) is the in-process baseline; the batched path is what
// ebb runs, undecayed and decayed (forward-decay weights from event times).
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

void BM_CmsBatchUndecayed(benchmark::State& state) {
  const auto& in = input();
  auto cms = make_sketch();
  std::vector<double> weights(kChunk, 1.0), est(kChunk);
  std::size_t i = 0;
  for (auto _ : state) {
    cms.update_batch({in.hashes.data() + i, kChunk}, weights, est);
    benchmark::DoNotOptimize(est.data());
    i = (i + kChunk) % kEvents;
  }
  state.SetItemsProcessed(state.iterations() * kChunk);
}

void BM_CmsBatchDecayed(benchmark::State& state) {
  const auto& in = input();
  auto cms = make_sketch();
  auto clock = ebb::ForwardDecay::with_half_life(300);
  clock.anchor(in.times[0]);
  ebb::WeightScaler scaler;
  std::vector<double> ones(kChunk, 1.0), weights(kChunk), est(kChunk);
  std::size_t i = 0;
  for (auto _ : state) {
    scaler.scale(clock, in.times.data() + i, ones.data(), weights.data(), kChunk);
    cms.update_batch({in.hashes.data() + i, kChunk}, weights, est);
    benchmark::DoNotOptimize(est.data());
    i = (i + kChunk) % kEvents;
  }
  state.SetItemsProcessed(state.iterations() * kChunk);
}

}  // namespace

BENCHMARK(BM_CmsNaiveLoop)->MinTime(1.0);
BENCHMARK(BM_CmsBatchUndecayed)->MinTime(1.0);
BENCHMARK(BM_CmsBatchDecayed)->MinTime(1.0);
BENCHMARK_MAIN();
