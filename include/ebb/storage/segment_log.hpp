#pragma once
// The local write-ahead log: segment files in <data-dir>/wal/.
//
//   <first lsn, 20 digits>.log   segment: header, then records back to back
//   header  (16 bytes): "EBBWAL01", u64 first LSN
//   record  (20 + n):   u32 n, u64 LSN, u64 XXH3-64 of the payload seeded
//                       with the LSN and n, then the n payload bytes
//
// Little-endian. A record is valid when it lies wholly inside the file, its
// LSN is the one expected and its checksum matches; recovery stops at the
// first invalid one, keeps the bytes it cuts in <segment>.corrupt-<offset>
// and truncates there, so the log ends at its last good record.
//
// Group commit (--fsync batch): appends only write(2); a sync thread
// fdatasyncs the open segment once for every waiter that queued since the
// last fsync, so concurrent batches share one disk flush.
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ebb/storage/event_log.hpp"
#include "ebb/storage/log_stats.hpp"

namespace ebb::storage {

struct SegmentLogOptions {
  FsyncPolicy policy = FsyncPolicy::batch;
  double fsync_interval = 1.0;               // seconds, for FsyncPolicy::interval
  std::uint64_t segment_bytes = 64u << 20;   // a segment is closed past this size
  // A damaged record in a segment that is not the last cannot be a torn
  // write (a segment is synced before the next one starts): the segments
  // after it hold acknowledged records. Recovery refuses to start unless
  // told to cut there anyway (ebb serve --repair-log).
  bool repair = false;
};

// What opening the log found.
struct LogRecovery {
  std::uint64_t records = 0;         // valid records read (replayed or skipped)
  std::uint64_t replayed = 0;        // handed to the replay function
  std::uint64_t bytes = 0;           // bytes of valid log
  std::uint64_t truncated_bytes = 0; // cut from a torn or corrupt tail
  std::string truncation;            // where and why, when something was cut
  std::string damage;                // damaged records skipped because the checkpoint holds them
  double seconds = 0;
};

class SegmentLog final : public EventLog {
 public:
  using ReplayFn = std::function<void(std::uint64_t lsn, std::string_view payload)>;

  // Opens (creating) `dir`, validates every segment, cuts a torn or corrupt
  // tail, hands every record with LSN > `replay_after` to `replay` in order
  // and starts the sync thread. `min_next_lsn`: the next LSN is at least
  // this (a checkpoint may cover records whose segments were released).
  // Throws IoError naming the path, or FormatError for a gap in the log.
  SegmentLog(std::filesystem::path dir, SegmentLogOptions options, std::uint64_t replay_after, std::uint64_t min_next_lsn,
             const ReplayFn& replay, LogRecovery* report = nullptr);
  ~SegmentLog() override;

  std::uint64_t append(std::string_view payload) override;
  void when_durable(std::uint64_t lsn, DurableCallback done) override;
  std::uint64_t last_lsn() const override;
  void release(std::uint64_t upto) override;
  void sync() override;
  std::string failure() const override;

  LogStats stats() const;

 private:
  struct Segment {
    std::filesystem::path path;
    std::uint64_t first_lsn = 0;
    int fd = -1;           // closed with the segment only: the sync thread may be using it
    bool synced = false;   // closed and known durable (mu_ held)
    ~Segment();
  };
  void recover(std::uint64_t replay_after, std::uint64_t min_next_lsn, const ReplayFn& replay, LogRecovery& report);
  // Creates the segment and writes its header, with no sync: it runs on an
  // event loop at a roll, where an fdatasync waits behind whatever the disk
  // is writing back (tens of ms under a checkpoint). Its bytes are made
  // durable with its records (the open segment is what the sync thread and
  // sync() flush) and its name by the directory fsync they make first
  // (names_created_ / names_synced_).
  void open_new_segment(std::uint64_t first_lsn);  // mu_ held
  // fsync of the log directory: 0 or the errno. mu_ not held.
  int sync_directory() const;
  // A directory fsync that began once `names` segments existed has
  // returned: their names are durable. mu_ held.
  void names_durable(std::uint64_t names);
  void sync_loop();
  // --fsync off: starts the kernel's writeback of what was appended since
  // the last call (sync_file_range, no wait, no durability claimed), so the
  // log reaches the disk in small steady pieces instead of as one burst at
  // a checkpoint's sync or the kernel's dirty expiry. Sync thread only.
  void start_writeback(std::unique_lock<std::mutex>& lock);
  void fail(const std::string& why);  // mu_ held: the log refuses appends from now on

  std::filesystem::path dir_;
  SegmentLogOptions options_;

  mutable std::mutex mu_;  // appends, segments, counters
  std::vector<std::shared_ptr<Segment>> closed_;  // oldest first (released from the front)
  std::shared_ptr<Segment> current_;
  std::uint64_t current_bytes_ = 0;
  std::uint64_t next_lsn_ = 1;
  std::uint64_t durable_lsn_ = 0;
  // Segments created, and how many of those the log directory's last
  // completed fsync covers. A sync path reads the first before its
  // fdatasync and raises the second only once its own directory fsync has
  // returned, so two paths syncing at once cannot vouch for each other's
  // unfinished fsync.
  std::uint64_t names_created_ = 0;
  std::uint64_t names_synced_ = 0;
  int dir_fd_ = -1;  // held open: a directory fsync cannot then fail for want of a descriptor
  std::string failure_;
  std::multimap<std::uint64_t, DurableCallback> waiters_;
  bool stop_ = false;
  std::condition_variable cv_;
  std::string scratch_;

  mutable std::mutex stats_mu_;
  LogStats stats_;
  std::shared_ptr<Segment> writeback_segment_;  // start_writeback's progress (sync thread only)
  std::uint64_t writeback_offset_ = 0;
  std::thread sync_thread_;
};

}  // namespace ebb::storage
