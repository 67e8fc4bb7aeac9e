// distribution_memory: the measured memory of distributions that forget
// (issue 10's figure: 1M distributions x 20 bins, goal <= 64 bytes a bin
// all in).
//
//   distribution_memory [--distributions 1000000] [--bins 20] [--shards 16]
//
// Fills the service's layout (16 DistributionStore shards, names
// "d<number>" and bins "f<number>", as short as typical keys and country
// codes) through incr(), then reports what a counting allocator saw
// (global operator new/delete, by malloc_usable_size: what the heap really
// hands out, slack included) against the stores' own memory_bytes()
// accounting. Prints bytes per bin, all in: the hash tables, the nodes,
// the bin vectors and every name.
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ebb/core/hash.hpp"
#include "ebb/engine/distribution_store.hpp"
#include "bench/common/counting_allocator.hpp"


int main(int argc, char** argv) {
  std::size_t distributions = 1'000'000, bins = 20, shards = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const std::size_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (a == "--distributions") distributions = v;
    else if (a == "--bins") bins = v;
    else if (a == "--shards") shards = v;
    else {
      std::fprintf(stderr, "distribution_memory: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (distributions == 0 || bins == 0 || shards == 0) return 2;
  const std::size_t before = ebb::bench::live_bytes();
  std::vector<std::unique_ptr<ebb::engine::DistributionStore>> stores;
  for (std::size_t s = 0; s < shards; ++s) stores.push_back(std::make_unique<ebb::engine::DistributionStore>());
  std::vector<std::string> field_names;
  for (std::size_t b = 0; b < bins; ++b) {
    field_names.push_back(std::to_string(b));
    field_names.back().insert(field_names.back().begin(), 'f');  // (not "f" + ...: g++ 12 warns falsely, -Wrestrict)
  }
  const auto t0 = std::chrono::steady_clock::now();
  // Bins arrive one increment at a time, round robin over distributions,
  // as a live stream fills them (each vector grows as it would).
  const double t = 1.7e9;
  std::string name;
  for (std::size_t b = 0; b < bins; ++b) {
    const std::string_view field = field_names[b];
    for (std::size_t d = 0; d < distributions; ++d) {
      name.assign(1, 'd');
      name += std::to_string(d);  // (not "d" + ...: g++ 12 warns falsely, -Wrestrict)
      stores[ebb::hash_key(name) % shards]->incr(name, std::span<const std::string_view>(&field, 1), 1.0, t + static_cast<double>(b));
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::size_t live = ebb::bench::live_bytes() - before;  // the stores, all in (and 20 short field names)
  std::size_t accounted = 0, held_bins = 0;
  for (const auto& s : stores) {
    accounted += s->memory_bytes();
    held_bins += s->bins();
  }
  const double per_bin = static_cast<double>(live) / static_cast<double>(held_bins);
  std::printf("distribution_memory: %zu distributions x %zu bins = %zu bins in %zu shards, filled in %.2f s (%.2f M increments/s)\n",
              distributions, bins, held_bins, shards, secs, static_cast<double>(held_bins) / secs / 1e6);
  std::printf("  measured (counting allocator, usable sizes): %.1f MiB, %.1f bytes a bin all in\n", live / 1048576.0, per_bin);
  std::printf("  accounted (memory_bytes()):                  %.1f MiB, %.1f bytes a bin\n", accounted / 1048576.0,
              static_cast<double>(accounted) / static_cast<double>(held_bins));
  std::printf("  goal: <= 64 bytes a bin: %s\n", per_bin <= 64 ? "met" : "NOT met");
  return per_bin <= 64 ? 0 : 1;
}
