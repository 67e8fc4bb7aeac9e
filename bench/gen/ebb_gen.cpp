// ebb_gen: writes a synthetic Zipf event stream as TSV (key \t unix time),
// for the ebb top comparison script and for trying ebb on large inputs.
//   ebb_gen LINES [DISTINCT] [SKEW] > file.tsv
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/common/zipf_stream.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ebb_gen LINES [DISTINCT=1000000] [SKEW=1.1]\n");
    return 2;
  }
  const std::size_t lines = std::strtoull(argv[1], nullptr, 10);
  const std::size_t distinct = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  const double skew = argc > 3 ? std::strtod(argv[3], nullptr) : 1.1;
  if (lines == 0 || distinct == 0 || !(skew > 0)) {
    std::fprintf(stderr, "ebb_gen: LINES and DISTINCT must be > 0, SKEW > 0\n");
    return 2;
  }
  const auto z = ebb::bench::make_zipf_stream(distinct, lines, skew, 1000.0);
  std::string out;
  char buf[64];
  for (std::size_t i = 0; i < lines; ++i) {
    out += z.keys[z.ranks[i]];
    std::snprintf(buf, sizeof buf, "\t%.3f\n", z.times[i]);
    out += buf;
    if (out.size() > (1 << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
