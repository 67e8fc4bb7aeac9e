#pragma once
// Counters a log exposes for /metrics.
#include <array>
#include <cstdint>

namespace ebb::storage {

struct LogStats {
  // fsync latency buckets, seconds (upper bounds; the last is +Inf).
  static constexpr std::array<double, 12> kFsyncBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                           0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
  // Records made durable by one fsync (group-commit size), upper bounds.
  static constexpr std::array<double, 9> kGroupBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256};

  std::uint64_t bytes = 0;     // bytes in the log's live segments
  std::uint64_t segments = 0;  // live segment files
  std::uint64_t records = 0;   // records appended since start
  std::uint64_t append_errors = 0;
  std::uint64_t fsyncs = 0;
  std::uint64_t directory_syncs = 0;  // fsyncs of the log directory (a new segment's name)
  double fsync_seconds_sum = 0;
  std::array<std::uint64_t, kFsyncBuckets.size() + 1> fsync_buckets{};
  std::uint64_t group_records_sum = 0;
  std::array<std::uint64_t, kGroupBuckets.size() + 1> group_buckets{};
};

}  // namespace ebb::storage
