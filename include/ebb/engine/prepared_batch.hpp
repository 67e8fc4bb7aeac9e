#pragma once
// A validated batch in the layout the views want: one column per field and
// every key hashed once, whatever the number of views.
#include <cstdint>
#include <string_view>
#include <vector>

namespace ebb::engine {

struct PreparedBatch {
  // Columns only grow (no zero-filling on every batch); the first count()
  // entries are this batch.
  std::vector<std::string_view> items;
  std::vector<std::uint64_t> hashes;
  std::vector<double> times;
  std::vector<double> weights;
  std::size_t count = 0;
  double min_time = 0;
  double max_time = 0;
  double now = 0;  // the namespace's "now" once the batch is counted (windows' lateness)

  std::size_t size() const noexcept { return count; }
  void reserve(std::size_t n) {
    if (items.size() < n) {
      items.resize(n);
      hashes.resize(n);
      times.resize(n);
      weights.resize(n);
    }
  }
};

}  // namespace ebb::engine
