#pragma once
// The write-ahead log as the service sees it: an ordered sequence of opaque
// records, each with a sequence number (LSN, 1, 2, ...). On one machine it
// is segment files in the data directory (SegmentLog); in a cluster a
// JetStream stream takes its place behind the same interface.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ebb::storage {

// When a record counts as durable (ebb serve --fsync).
enum class FsyncPolicy {
  batch,     // on disk before it is acknowledged; concurrent appends share one fsync
  interval,  // acknowledged at once; fsync'ed every fsync interval (a crash loses at most that)
  off,       // acknowledged at once; the OS writes it back when it likes
};
const char* fsync_policy_name(FsyncPolicy p) noexcept;

// The log cannot take a record now (disk full, read-only, an earlier fsync
// failed). Nothing of the record is in the log.
class LogUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class EventLog {
 public:
  virtual ~EventLog() = default;

  // Appends one record; returns its LSN. Throws LogUnavailable.
  virtual std::uint64_t append(std::string_view payload) = 0;
  // Calls done("") once every record up to `lsn` is as durable as the
  // policy promises (at once for interval and off), or done(reason) when it
  // cannot be. May call from another thread; must not block.
  using DurableCallback = std::function<void(const std::string& error)>;
  virtual void when_durable(std::uint64_t lsn, DurableCallback done) = 0;
  // The newest LSN appended (0 when none ever was).
  virtual std::uint64_t last_lsn() const = 0;
  // Forgets records with LSN <= upto where whole segments allow.
  virtual void release(std::uint64_t upto) = 0;
  // Makes everything appended durable now (shutdown); throws LogUnavailable.
  virtual void sync() = 0;
  // Empty while records can be appended, else why not.
  virtual std::string failure() const = 0;

  // Blocking form of when_durable; throws LogUnavailable.
  void wait_durable(std::uint64_t lsn);
};

}  // namespace ebb::storage
