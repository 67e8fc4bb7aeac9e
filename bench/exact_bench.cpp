// Issue 10's exact-counting figures (`"counting": "exact"`, tidalDB's
// signal ledger: 25 ns a score read, 64 bytes of hot state per entity and
// signal with 3 decay rates):
//
//   read    a ranking pass over 200 items of a table of N records (3
//           half-lives: 1h, 24h, 7d): per item, the table's lookup (the key's
//           hash given, as the server has it) and one multiply by the pass's
//           read factor; then with the hash computed; then through
//           Namespace::count() (the full answer with bounds). Baseline in the
//           same process: the same 200 lookups in a std::unordered_map<string,
//           double> (what a hand-rolled cache holds). Medians of `reps` passes.
//   ingest  events per second into the table (the namespace's batch path),
//           against the sketch namespace with the same views in this process.
//   memory  bytes per record by a counting allocator: N records with one
//           event each (the hot state), and 100k records with 50 events each
//           over an hour under windows 1h and 7d (their rings).
//
// Usage: exact_bench [records (default 1000000)] [reps (default 9)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/common/counting_allocator.hpp"
#include "bench/common/timing.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/engine/exact_view.hpp"
#include "ebb/engine/namespace.hpp"

namespace {

using ebb::engine::Event;
using ebb::engine::Namespace;
using ebb::engine::NamespaceConfig;
using ebb::engine::ViewSpec;
using ebb::bench::Clock;

constexpr double kStart = 1.7e9;

using ebb::bench::median;
using ebb::bench::seconds_since;

NamespaceConfig config(bool exact, std::uint64_t max_items, std::vector<double> windows = {}) {
  NamespaceConfig c;
  c.name = "bench";
  c.k = 100;
  c.all_time = false;
  c.half_lives = {3600, 86400, 7 * 86400.0};
  c.windows = std::move(windows);
  c.clock = ebb::engine::ClockMode::event;
  c.max_event_age = 30 * 86400.0;
  c.max_time_jump = 30 * 86400.0;
  if (exact) {
    c.counting = ebb::engine::Counting::exact;
    c.max_items = max_items;
  }
  return c;
}

std::string key_of(std::size_t i) {
  std::string k = std::to_string(i);
  k.insert(0, "item:");  // (not "item:" + ...: g++ 12 warns falsely, -Wrestrict)
  return k;
}

// Feeds `records` keys with `per_key` events each, spread over an hour, in batches.
void fill(Namespace& ns, std::size_t records, std::size_t per_key, const std::vector<std::string>& keys) {
  std::vector<Event> batch;
  batch.reserve(4096);
  for (std::size_t j = 0; j < per_key; ++j) {
    for (std::size_t i = 0; i < records; ++i) {
      const double t = kStart + 3600.0 * (static_cast<double>(j) + static_cast<double>(i) / records) / per_key;
      batch.push_back({keys[i], t, 1.0});
      if (batch.size() == 4096) {
        ns.apply(batch);
        batch.clear();
      }
    }
  }
  if (!batch.empty()) ns.apply(batch);
}

void read_figures(std::size_t records, int reps) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < records; ++i) keys.push_back(key_of(i));
  Namespace ns(config(true, records));
  fill(ns, records, records <= 1000 ? 50 : 1, keys);
  const auto& view = dynamic_cast<const ebb::engine::ExactView&>(ns.view(ViewSpec::decayed(7 * 86400.0)));
  const auto& table = view.table();
  std::unordered_map<std::string, double> baseline;
  for (std::size_t i = 0; i < records; ++i) baseline.emplace(keys[i], 1.0);

  std::mt19937_64 rng(42);
  const ViewSpec week = ViewSpec::decayed(7 * 86400.0);
  const double now = ns.now() + 60;
  double sink = 0;
  // Each variant reads its own fresh random pass: none is warmed by another's.
  auto pass_of = [&] {
    std::vector<std::string_view> pass;
    for (int i = 0; i < 200; ++i) pass.push_back(keys[rng() % records]);
    return pass;
  };
  auto time_pass = [&](auto&& read) {
    const auto pass = pass_of();
    std::vector<std::uint64_t> hashes;
    for (auto k : pass) hashes.push_back(ebb::hash_key(k));
    const auto t = Clock::now();
    read(pass, hashes);
    return seconds_since(t) * 1e9 / 200;
  };
  std::vector<double> lookup, hashed, answered, map_ns;
  for (int rep = 0; rep < reps * 20; ++rep) {
    lookup.push_back(time_pass([&](const auto& pass, const auto& hashes) {
      const auto reading = *table.reading(week, now, true);  // one exp() per pass
      for (std::size_t i = 0; i < pass.size(); ++i) {
        const auto rec = table.find(pass[i], hashes[i]);
        sink += rec == ebb::engine::ExactTable::kNone ? 0 : table.value(rec, reading);
      }
    }));
    hashed.push_back(time_pass([&](const auto& pass, const auto&) {
      const auto reading = *table.reading(week, now, true);
      for (auto k : pass) {
        const auto rec = table.find(k, ebb::hash_key(k));
        sink += rec == ebb::engine::ExactTable::kNone ? 0 : table.value(rec, reading);
      }
    }));
    answered.push_back(time_pass([&](const auto& pass, const auto&) {
      for (auto k : pass) sink += ns.count(k, week).item.estimate;
    }));
    map_ns.push_back(time_pass([&](const auto& pass, const auto&) {
      for (auto k : pass) {
        const auto it = baseline.find(std::string(k));
        sink += it == baseline.end() ? 0 : it->second;
      }
    }));
  }
  std::printf("read, %zu records, 200-item pass, ns per item (median of %d passes, each on fresh random items): lookup+multiply %.1f, "
              "with the hash computed %.1f, Namespace::count %.1f; baseline std::unordered_map<string,double>::find %.1f "
              "(ratio with hash / baseline %.2f)%s\n",
              records, reps * 20, median(lookup), median(hashed), median(answered), median(map_ns), median(hashed) / median(map_ns),
              sink < 0 ? "!" : "");
}

void ingest_figures(int reps) {
  const std::size_t records = 100'000, per_key = 20;
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < records; ++i) keys.push_back(key_of(i));
  std::vector<double> exact, sketch;
  for (int rep = 0; rep < reps; ++rep) {
    for (bool is_exact : {true, false}) {
      Namespace ns(config(is_exact, records, {3600}));
      const auto t = Clock::now();
      fill(ns, records, per_key, keys);
      (is_exact ? exact : sketch).push_back(static_cast<double>(records * per_key) / seconds_since(t));
    }
  }
  std::printf("ingest, 100k keys x 20 events, half-lives 1h/24h/7d + window 1h, events/s (median of %d): exact %.2f M, sketch %.2f M "
              "(ratio exact/sketch %.2f)\n",
              reps, median(exact) / 1e6, median(sketch) / 1e6, median(exact) / median(sketch));
}

void memory_figures(std::size_t records) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < records; ++i) keys.push_back(key_of(i));
  {
    const std::size_t before = ebb::bench::live_bytes();
    auto ns = std::make_unique<Namespace>(config(true, records));
    fill(*ns, records, 1, keys);
    const std::size_t live = ebb::bench::live_bytes() - before;
    std::printf("memory, %zu records, half-lives 1h/24h/7d, keys 'item:N' (10-12 bytes): %.1f bytes per record all in "
                "(accounted %.1f; tidalDB: 64 hot bytes per entity-signal, keys aside)\n",
                records, static_cast<double>(live) / records, static_cast<double>(ns->stats().memory_bytes) / records);
  }
  {
    const std::size_t n = std::min<std::size_t>(records, 100'000);
    const std::size_t before = ebb::bench::live_bytes();
    auto ns = std::make_unique<Namespace>(config(true, n, {3600, 7 * 86400.0}));
    fill(*ns, n, 50, keys);
    const std::size_t live = ebb::bench::live_bytes() - before;
    std::printf("memory, %zu records x 50 events over 1h, windows 1h + 7d too: %.1f bytes per record all in (accounted %.1f; "
                "bound %.1f with keys of max_item_bytes)\n",
                n, static_cast<double>(live) / n, static_cast<double>(ns->stats().memory_bytes) / n,
                static_cast<double>(ebb::engine::ExactTable::bytes_max(ns->config())) / n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t records = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 9;
  if (records < 200 || reps < 1) {
    std::fprintf(stderr, "usage: exact_bench [records >= 200] [reps >= 1]\n");
    return 2;
  }
  read_figures(200, reps);
  read_figures(records, reps);
  ingest_figures(reps);
  memory_figures(records);
  return 0;
}
