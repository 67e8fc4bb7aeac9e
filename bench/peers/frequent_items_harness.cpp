// frequent_items_harness: Apache DataSketches' frequent_items_sketch over a
// TSV file, the in-process peer of `ebb top` in bench/peer_bench.sh.
//
//   frequent_items_harness FILE [-k 100] [--lg 12]
//
// Counts the first column of every line (a line without a tab is all key),
// one update() per line with weight 1, in a frequent_items_sketch<std::string>
// of lg_max_map_size --lg (default 12: a map of 4096 slots, at most 3072
// items tracked). Prints the top k rows of get_frequent_items(NO_FALSE_NEGATIVES)
// as "rank<TAB>item<TAB>estimate<TAB>lower<TAB>upper" on stdout (the sketch's
// own sort, heaviest estimate first) and a summary line on stderr.
//
// The file is read the fastest honest way: mapped whole, keys found with
// memchr as string_views. The sketch takes std::string, so each update pays
// for one string: that is the peer's API, not the harness's choice.
//
// Not part of the CMake build (ebb never needs DataSketches): bench/peer_bench.sh
// compiles it with
//   g++ -O2 -std=c++20 -I<datasketches-cpp>/fi/include -I<datasketches-cpp>/common/include
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "frequent_items_sketch.hpp"

int main(int argc, char** argv) {
  const char* path = nullptr;
  std::size_t k = 100;
  int lg = 12;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-k" && i + 1 < argc) k = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--lg" && i + 1 < argc) lg = std::atoi(argv[++i]);
    else if (!path && !a.starts_with("-")) path = argv[i];
    else {
      std::fprintf(stderr, "usage: frequent_items_harness FILE [-k 100] [--lg 12]\n");
      return 2;
    }
  }
  if (!path || k == 0 || lg < 3 || lg > 30) {
    std::fprintf(stderr, "usage: frequent_items_harness FILE [-k 100] [--lg 12] (lg 3..30)\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();

  const int fd = ::open(path, O_RDONLY);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    std::perror(path);
    return 1;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  const char* data = "";
  if (size > 0) {
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (m == MAP_FAILED) {
      std::perror("mmap");
      return 1;
    }
    ::madvise(m, size, MADV_SEQUENTIAL);
    data = static_cast<const char*>(m);
  }

  datasketches::frequent_items_sketch<std::string> sketch(static_cast<std::uint8_t>(lg));
  std::size_t lines = 0;
  const char* p = data;
  const char* const end = data + size;
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (!nl) nl = end;
    const char* tab = static_cast<const char*>(std::memchr(p, '\t', static_cast<std::size_t>(nl - p)));
    const std::string_view key(p, static_cast<std::size_t>((tab ? tab : nl) - p));
    if (!key.empty()) {
      sketch.update(std::string(key));
      ++lines;
    }
    p = nl + 1;
  }

  const auto rows = sketch.get_frequent_items(datasketches::NO_FALSE_NEGATIVES);
  const auto counted = std::chrono::steady_clock::now();
  std::string out;
  char buf[96];
  for (std::size_t i = 0; i < rows.size() && i < k; ++i) {
    const auto& r = rows[i];
    out += std::to_string(i + 1);
    out += '\t';
    out += r.get_item();
    std::snprintf(buf, sizeof buf, "\t%llu\t%llu\t%llu\n", static_cast<unsigned long long>(r.get_estimate()),
                  static_cast<unsigned long long>(r.get_lower_bound()), static_cast<unsigned long long>(r.get_upper_bound()));
    out += buf;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  const double secs = std::chrono::duration<double>(counted - start).count();
  std::fprintf(stderr,
               "frequent_items lg %d: %zu keys counted in %.3f s (%.1f M/s); %u items tracked, %zu above the "
               "NO_FALSE_NEGATIVES threshold (max error %llu)%s\n",
               lg, lines, secs, lines / secs / 1e6, sketch.get_num_active_items(), rows.size(),
               static_cast<unsigned long long>(sketch.get_maximum_error()),
               rows.size() < k ? ": fewer than k rows printed" : "");
  return 0;
}
