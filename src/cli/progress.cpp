#include "progress.hpp"

#include <cstdio>

namespace ebb::cli {

void Progress::update(std::uint64_t done) {
  if (total_ == 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;  // redraws cost little, but not nothing
  last_ = now;
  drawn_ = true;
  const double frac = done >= total_ ? 1.0 : static_cast<double>(done) / static_cast<double>(total_);
  const double secs = std::chrono::duration<double>(now - start_).count();
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kWidth] = '\0';
  std::fprintf(stderr, "\r[%s] %5.1f%%  %.1f MiB/s ", bar, frac * 100, secs > 0 ? done / secs / 1048576.0 : 0.0);
  std::fflush(stderr);
}

void Progress::finish() {
  if (drawn_) std::fputs("\r\x1b[K", stderr);  // clear the bar line
}

}  // namespace ebb::cli
