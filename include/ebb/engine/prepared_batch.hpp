#pragma once
// A validated batch in the layout the views want: one column per field and
// every key hashed once, whatever the number of views.
#include <cstdint>
#include <string_view>
#include <vector>

namespace ebb::engine {

struct PreparedBatch {
  std::vector<std::string_view> items;
  std::vector<std::uint64_t> hashes;
  std::vector<double> times;
  std::vector<double> weights;
  double min_time = 0;
  double max_time = 0;

  std::size_t size() const noexcept { return items.size(); }
  void clear() noexcept {
    items.clear();
    hashes.clear();
    times.clear();
    weights.clear();
  }
};

}  // namespace ebb::engine
