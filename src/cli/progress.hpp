#pragma once
// A progress bar on stderr for inputs of known size. Silent when total is 0.
#include <chrono>
#include <cstdint>

namespace ebb::cli {

class Progress {
 public:
  explicit Progress(std::uint64_t total_bytes) : total_(total_bytes) {}
  void update(std::uint64_t done_bytes);
  void finish();

 private:
  std::uint64_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace ebb::cli
