// What one uncached GET /top-k k=100 costs the server besides HTTP: the
// namespace's top() and the JSON of its answer (service::write_top_k), on a
// namespace fed a Zipf 0.8 stream like peer_bench's (5m half-life, k 100,
// 65536 x 4, 1024 candidates). Under ingest every batch changes the view,
// so each batch costs one of these.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/common/zipf_stream.hpp"
#include "ebb/engine/namespace.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/service/answer_json.hpp"

namespace {

ebb::engine::Namespace& fed() {
  static ebb::engine::Namespace ns = [] {
    ebb::engine::NamespaceConfig c;
    c.name = "hot";
    c.k = 100;
    c.all_time = false;
    c.half_lives = {300};
    c.sketch = ebb::CountMinShape::with_dimensions(65536, 4);
    return ebb::engine::Namespace(c);
  }();
  static bool once = [] {
    const auto z = ebb::bench::make_zipf_stream(1000000, 1000000, 0.8, 1e6);
    const double now = ebb::engine::wall_clock_now();
    std::vector<ebb::engine::Event> ev;
    for (std::size_t i = 0; i < z.ranks.size(); ++i) {
      ev.push_back({z.keys[z.ranks[i]], now, 1.0});
      if (ev.size() == 1000) {
        ns.apply(ev);
        ev.clear();
      }
    }
    return true;
  }();
  (void)once;
  return ns;
}

void BM_Top(benchmark::State& state) {
  auto& ns = fed();
  for (auto _ : state) benchmark::DoNotOptimize(ns.top(std::nullopt, 100));
}
BENCHMARK(BM_Top);

void BM_TopJson(benchmark::State& state) {
  auto& ns = fed();
  const auto answer = ns.top(std::nullopt, 100);
  std::size_t bytes = 0;
  for (auto _ : state) {
    ebb::io::JsonWriter w;
    ebb::service::write_top_k(w, "hot", answer);
    bytes = w.take().size();
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_TopJson);

}  // namespace

BENCHMARK_MAIN();
