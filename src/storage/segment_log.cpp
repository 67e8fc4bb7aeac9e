#include "ebb/storage/segment_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <utility>

#include "ebb/core/error.hpp"
#include "ebb/core/spin_lock.hpp"
#include "ebb/storage/file_io.hpp"
#include "ebb/storage/segment_format.hpp"

namespace ebb::storage {
namespace {

// Where bytes set aside go: `base`, or base.1, base.2... if an earlier
// repair already set bytes aside under that name.
std::filesystem::path aside_path(const std::string& base) {
  std::filesystem::path p = base;
  for (int n = 1; std::filesystem::exists(p); ++n) p = base + "." + std::to_string(n);
  return p;
}

std::string segment_name(std::uint64_t first_lsn) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu.log", static_cast<unsigned long long>(first_lsn));
  return buf;
}

// "00000000000000000042.log" -> 42; 0 for any other name.
std::uint64_t parse_segment_name(const std::string& name) {
  if (name.size() != 24 || name.substr(20) != ".log") return 0;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    v = v * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  return v;
}

// How often --fsync off starts the writeback of the log's new bytes: at 16
// MB/s of log, pieces of about 1.6 MB.
constexpr auto kWritebackEvery = std::chrono::milliseconds(100);

void observe(auto& buckets, const auto& bounds, double v) {
  std::size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  ++buckets[i];
}

}  // namespace

const char* fsync_policy_name(FsyncPolicy p) noexcept {
  switch (p) {
    case FsyncPolicy::batch: return "batch";
    case FsyncPolicy::interval: return "interval";
    case FsyncPolicy::off: return "off";
  }
  return "?";
}

void EventLog::wait_durable(std::uint64_t lsn) {
  std::promise<std::string> done;
  auto result = done.get_future();
  when_durable(lsn, [&done](const std::string& error) { done.set_value(error); });
  const std::string error = result.get();
  if (!error.empty()) throw LogUnavailable(error);
}

SegmentLog::Segment::~Segment() {
  if (fd >= 0) ::close(fd);
}

SegmentLog::SegmentLog(std::filesystem::path dir, SegmentLogOptions options, std::uint64_t replay_after, std::uint64_t min_next_lsn,
                       const ReplayFn& replay, LogRecovery* report)
    : dir_(std::move(dir)), options_(options) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw IoError("cannot create log directory", dir_, ec.value());
  dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) throw IoError("cannot open log directory", dir_, errno);
  LogRecovery local;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    recover(replay_after, min_next_lsn, replay, report ? *report : local);
  } catch (...) {
    ::close(dir_fd_);  // no destructor runs for a constructor that throws
    throw;
  }
  (report ? *report : local).seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  durable_lsn_ = next_lsn_ - 1;  // what recovery read is on disk
  sync_thread_ = std::thread([this] { sync_loop(); });
}

SegmentLog::~SegmentLog() {
  std::multimap<std::uint64_t, DurableCallback> left;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (sync_thread_.joinable()) sync_thread_.join();
  {
    std::lock_guard lock(mu_);
    left.swap(waiters_);
  }
  for (auto& [_, cb] : left) cb("the log was closed before the record was synced");
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

int SegmentLog::sync_directory() const {
  if (::fsync(dir_fd_) == 0) return 0;
  return errno;
}

void SegmentLog::recover(std::uint64_t replay_after, std::uint64_t min_next_lsn, const ReplayFn& replay, LogRecovery& report) {
  std::vector<std::pair<std::uint64_t, std::filesystem::path>> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    const std::uint64_t first = parse_segment_name(entry.path().filename().string());
    if (first != 0 && entry.is_regular_file()) found.emplace_back(first, entry.path());
  }
  std::sort(found.begin(), found.end());
  std::uint64_t expected = found.empty() ? 1 : found.front().first;
  if (!found.empty() && expected > replay_after + 1) {
    throw FormatError("the log in " + dir_.string() + " begins at record " + std::to_string(expected) + " but the checkpoint needs every record after " +
                      std::to_string(replay_after) + ": records are missing");
  }
  std::uint64_t last_size = 0;
  bool last_read = false;  // whether closed_.back() was read (and last_size is its size), not skipped
  bool cut = false;
  std::string buffer;  // one for every segment: its pages are faulted in once
  for (std::size_t s = 0; s < found.size(); ++s) {
    const auto& [first, path] = found[s];
    if (cut) {  // everything after a cut is unreachable: keep it aside, out of the log
      std::filesystem::rename(path, aside_path(path.string() + ".corrupt"));
      continue;
    }
    if (first != expected) {
      throw FormatError("log segment " + path.string() + " begins at record " + std::to_string(first) + ", expected " + std::to_string(expected) +
                        ": a segment is missing");
    }
    // A segment wholly before the replay point is not read (recovery time);
    // it is validated when it is the last one (it becomes the open segment).
    const bool last = s + 1 == found.size();
    if (!last && found[s + 1].first <= replay_after + 1) {
      expected = found[s + 1].first;
      auto seg = std::make_shared<Segment>();
      seg->path = path;
      seg->first_lsn = first;
      closed_.push_back(seg);
      last_read = false;
      const auto size = std::filesystem::file_size(path);
      report.bytes += size;
      stats_.bytes += size;
      continue;
    }
    read_whole_file_into(path, buffer);
    const std::string_view data = buffer;
    std::size_t pos = 0;
    std::string why;
    auto on_record = [&](std::uint64_t lsn, std::string_view payload) {
      ++report.records;
      if (lsn > replay_after) {
        replay(lsn, payload);
        ++report.replayed;
      }
    };
    {
      const SegmentScan scan = scan_segment(data, first, on_record);
      pos = scan.valid_bytes;
      expected = scan.next_lsn;
      why = scan.error;
    }
    for (;;) {
      if (why.empty()) break;
      // A torn write leaves nothing valid after it. Valid records after the
      // damage (here, or in later segments: a segment is synced before the
      // next begins) mean damage in the middle of the log.
      std::uint64_t resume_lsn = 0;
      const std::size_t resume =
          find_segment_record(data, pos == 0 ? kSegmentHeaderBytes : pos + 1, pos == 0 ? expected : expected + 1, resume_lsn);
      const bool later = resume != std::string_view::npos || s + 1 < found.size();
      if (!later) break;  // a torn tail: cut below
      const std::uint64_t next_good = resume != std::string_view::npos ? resume_lsn : found[s + 1].first;
      const std::string where = "log segment " + path.string() + " is damaged at byte " + std::to_string(pos) + " (" + why + ")";
      if (next_good == expected || next_good - 1 <= replay_after) {
        // Every damaged record is already in the checkpoint (or none is: a
        // damaged segment header before intact records): skip them.
        report.damage += (report.damage.empty() ? "" : "; ") + where +
                         (next_good == expected ? ": its records are intact and were read"
                                                : ": records " + std::to_string(expected) + " to " + std::to_string(next_good - 1) +
                                                      " are unreadable but the checkpoint holds them; skipped");
        expected = next_good;
        why.clear();
        if (resume == std::string_view::npos) {
          pos = data.size();  // the rest of this segment; the next one goes on
          break;
        }
        const SegmentScan scan = scan_segment_records(data, resume, next_good, on_record);
        pos = scan.valid_bytes;
        expected = scan.next_lsn;
        why = scan.error;
        continue;
      }
      if (!options_.repair) {
        throw FormatError(where + ", and records written after it follow (acknowledged writes): cutting there would drop them. " +
                          "Nothing was changed. Restore the file from a backup, or start with --repair-log to keep the records " +
                          "before the damage (the rest is set aside as .corrupt files)");
      }
      break;  // --repair-log: cut below
    }
    if (!why.empty()) {
      cut = true;
      report.truncated_bytes += data.size() - pos;
      const auto aside = aside_path(path.string() + ".corrupt-" + std::to_string(pos));
      report.truncation = path.string() + " at byte " + std::to_string(pos) + ": " + why + " (" + std::to_string(data.size() - pos) +
                          " bytes cut, kept in " + aside.filename().string() + ")";
      write_file_atomically(aside, std::string_view(data).substr(pos));
      if (pos < kSegmentHeaderBytes) {
        std::filesystem::remove(path);
        continue;  // an empty segment is made again below
      }
      if (::truncate(path.c_str(), static_cast<off_t>(pos)) != 0) throw IoError("cannot truncate the torn log tail of", path, errno);
    }
    auto seg = std::make_shared<Segment>();
    seg->path = path;
    seg->first_lsn = first;
    closed_.push_back(seg);
    report.bytes += pos;
    stats_.bytes += pos;
    last_size = pos;
    last_read = true;
  }
  // The record a checkpoint starts after is never released from the log:
  // a log that ends before it lost files (an acknowledged record after the
  // checkpoint may have gone with them).
  // (A torn tail that was cut explains an earlier end: what it took, the
  // checkpoint holds.)
  if (replay_after > 0 && expected <= replay_after && !cut && !options_.repair) {
    throw FormatError("the log in " + dir_.string() + " ends at record " + std::to_string(expected - 1) +
                      " but the checkpoint holds records up to " + std::to_string(replay_after) +
                      ": log segments are missing, and writes acknowledged after the checkpoint may be gone with them. Nothing was "
                      "changed. Restore the wal directory, or start with --repair-log to go on from the checkpoint");
  }
  next_lsn_ = std::max(expected, min_next_lsn);
  // The newest segment stays open for appends, unless numbering jumped or
  // it was not read (the segment after it, before the checkpoint's start,
  // was a torn header and went: appends need the true size of the file they
  // go to, to cut a failed write back).
  if (!closed_.empty() && last_read && closed_.back()->first_lsn <= next_lsn_ && expected == next_lsn_) {
    current_ = closed_.back();
    closed_.pop_back();
    current_->fd = ::open(current_->path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (current_->fd < 0) throw IoError("cannot open log segment", current_->path, errno);
    current_bytes_ = last_size;
  } else {
    std::lock_guard lock(mu_);
    open_new_segment(next_lsn_);
  }
  stats_.segments = closed_.size() + 1;
  if (const int err = sync_directory(); err != 0) throw IoError("cannot sync directory", dir_, err);
  names_synced_ = names_created_;
  // What was read may sit in the page cache only (a process crash under
  // --fsync off): make it durable once, for every closed segment at once.
  if (::syncfs(dir_fd_) != 0) throw IoError("cannot sync the log directory", dir_, errno);
  for (auto& seg : closed_) seg->synced = true;
}

void SegmentLog::open_new_segment(std::uint64_t first_lsn) {
  auto seg = std::make_shared<Segment>();
  seg->path = dir_ / segment_name(first_lsn);
  seg->first_lsn = first_lsn;
  seg->fd = ::open(seg->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (seg->fd < 0) throw IoError("cannot create log segment", seg->path, errno);
  std::string header;
  append_segment_header(header, first_lsn);
  try {
    write_all(seg->fd, header, seg->path);
  } catch (...) {
    ::unlink(seg->path.c_str());
    throw;
  }
  ++names_created_;
  if (current_) closed_.push_back(std::move(current_));
  current_ = std::move(seg);
  current_bytes_ = kSegmentHeaderBytes;
  std::lock_guard s(stats_mu_);
  stats_.bytes += kSegmentHeaderBytes;
  stats_.segments = closed_.size() + 1;
}

void SegmentLog::fail(const std::string& why) {
  if (failure_.empty()) failure_ = why;
}

std::uint64_t SegmentLog::append(std::string_view payload) {
  if (payload.size() > kMaxRecordBytes) throw LogUnavailable("a log record is limited to 1 GiB");
  // Two event loops append at once; the holder is in write(2) briefly.
  lock_spinning(mu_);
  std::lock_guard lock(mu_, std::adopt_lock);
  if (!failure_.empty()) throw LogUnavailable(failure_);
  try {
    if (current_bytes_ >= options_.segment_bytes) {
      // The closed segment must be durable before records in the next one
      // are acknowledged: the sync thread only syncs the open segment.
      if (options_.policy != FsyncPolicy::off) {
        if (::fdatasync(current_->fd) != 0) {
          fail("cannot sync log segment '" + current_->path.string() + "': " + std::strerror(errno));
          throw LogUnavailable(failure_);
        }
        current_->synced = true;
      }
      open_new_segment(next_lsn_);
    }
    const std::uint64_t lsn = next_lsn_;
    scratch_.clear();
    append_segment_record_header(scratch_, lsn, payload);
    const std::size_t record_bytes = scratch_.size() + payload.size();
    try {
      write_all(current_->fd, scratch_, payload, current_->path);
    } catch (const IoError&) {
      // Nothing half-written stays: cut back to the last whole record. If
      // even that fails the log's end is unknown and it takes no more.
      if (::ftruncate(current_->fd, static_cast<off_t>(current_bytes_)) != 0) {
        fail("cannot cut a partial record from '" + current_->path.string() + "': " + std::strerror(errno));
      }
      throw;
    }
    current_bytes_ += record_bytes;
    ++next_lsn_;
    std::lock_guard s(stats_mu_);
    stats_.bytes += record_bytes;
    ++stats_.records;
    return lsn;
  } catch (const IoError& e) {
    std::lock_guard s(stats_mu_);
    ++stats_.append_errors;
    throw LogUnavailable(e.what());
  }
}

void SegmentLog::when_durable(std::uint64_t lsn, DurableCallback done) {
  if (options_.policy != FsyncPolicy::batch) return done("");
  std::unique_lock lock(mu_);
  if (lsn <= durable_lsn_) {
    lock.unlock();
    return done("");
  }
  if (!failure_.empty()) {
    const std::string why = failure_;
    lock.unlock();
    return done(why);
  }
  waiters_.emplace(lsn, std::move(done));
  lock.unlock();
  cv_.notify_one();
}

std::uint64_t SegmentLog::last_lsn() const {
  std::lock_guard lock(mu_);
  return next_lsn_ - 1;
}

std::string SegmentLog::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

void SegmentLog::sync_loop() {
  std::unique_lock lock(mu_);
  const auto interval = std::chrono::duration<double>(options_.fsync_interval);
  while (!stop_) {
    if (options_.policy == FsyncPolicy::batch) {
      cv_.wait(lock, [this] { return stop_ || !waiters_.empty(); });
    } else if (options_.policy == FsyncPolicy::interval) {
      cv_.wait_for(lock, interval, [this] { return stop_; });
    } else {
      cv_.wait_for(lock, kWritebackEvery, [this] { return stop_; });
      if (stop_) break;
      start_writeback(lock);
      continue;
    }
    if (stop_) break;
    const std::uint64_t target = next_lsn_ - 1;
    std::vector<DurableCallback> ready;
    std::string error;
    if (target > durable_lsn_ && failure_.empty()) {
      auto seg = current_;  // kept alive through the fsync even if a roll closes it
      // Every record up to target lies in a segment created by now: its name
      // is durable once a directory fsync that began after this point ends.
      const std::uint64_t names = names_created_;
      const bool new_names = names_synced_ < names;
      lock.unlock();
      const auto t0 = std::chrono::steady_clock::now();
      const int rc = ::fdatasync(seg->fd);
      const int err = errno;
      const int dir_err = rc == 0 && new_names ? sync_directory() : 0;
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      lock.lock();
      if (rc != 0) {
        // After a failed fsync the page cache can no longer be trusted
        // (the kernel may have dropped the dirty pages): stop taking records.
        fail("fsync of log segment '" + seg->path.string() + "' failed: " + std::strerror(err));
      } else if (dir_err != 0) {
        fail("fsync of the log directory '" + dir_.string() + "' failed: " + std::strerror(dir_err));
      } else {
        if (new_names) names_durable(names);
        std::lock_guard s(stats_mu_);
        ++stats_.fsyncs;
        stats_.fsync_seconds_sum += dt;
        observe(stats_.fsync_buckets, LogStats::kFsyncBuckets, dt);
        const auto group = static_cast<double>(target - durable_lsn_);
        stats_.group_records_sum += target - durable_lsn_;
        observe(stats_.group_buckets, LogStats::kGroupBuckets, group);
        durable_lsn_ = std::max(durable_lsn_, target);
      }
    }
    error = failure_;
    auto end = error.empty() ? waiters_.upper_bound(durable_lsn_) : waiters_.end();
    for (auto it = waiters_.begin(); it != end; ++it) ready.push_back(std::move(it->second));
    waiters_.erase(waiters_.begin(), end);
    if (ready.empty()) continue;
    lock.unlock();
    for (auto& cb : ready) cb(error);
    lock.lock();
  }
}

void SegmentLog::names_durable(std::uint64_t names) {
  names_synced_ = std::max(names_synced_, names);
  std::lock_guard s(stats_mu_);
  ++stats_.directory_syncs;
}

void SegmentLog::start_writeback(std::unique_lock<std::mutex>& lock) {
  if (!current_ || !failure_.empty()) return;
  // A segment closed since the last call: the rest of it (to its end), then
  // the open one from its start. (Segments opened and closed within one
  // interval are left to the kernel: a roll every 100 ms is not this log's
  // load.)
  std::shared_ptr<Segment> closed;
  std::uint64_t closed_from = 0;
  if (writeback_segment_ != current_) {
    closed = std::exchange(writeback_segment_, current_);
    closed_from = std::exchange(writeback_offset_, 0);
  }
  const auto seg = writeback_segment_;  // kept alive without the lock, like the fsync's
  const std::uint64_t from = writeback_offset_, to = current_bytes_;
  writeback_offset_ = to;
  lock.unlock();
  // Errors are not reported here: with SYNC_FILE_RANGE_WRITE alone (no
  // wait) a page that fails to write leaves its error on the file for the
  // next fdatasync (a checkpoint's sync), which fails the log.
  if (closed) ::sync_file_range(closed->fd, static_cast<off_t>(closed_from), 0, SYNC_FILE_RANGE_WRITE);
  if (to > from) ::sync_file_range(seg->fd, static_cast<off_t>(from), static_cast<off_t>(to - from), SYNC_FILE_RANGE_WRITE);
  // A segment release() removed meanwhile closes here, not under mu_
  // (closing an unlinked segment frees its blocks: tens of ms).
  closed.reset();
  lock.lock();
}

void SegmentLog::sync() {
  std::unique_lock lock(mu_);
  if (!failure_.empty()) throw LogUnavailable(failure_);
  const std::uint64_t target = next_lsn_ - 1;
  if (target <= durable_lsn_ && options_.policy == FsyncPolicy::batch) return;
  // With --fsync off, closed segments were never synced. (A descriptor is
  // closed only with its segment: the sync thread may be using it.)
  std::vector<std::shared_ptr<Segment>> segments;
  for (const auto& closed : closed_) {
    if (!closed->synced) segments.push_back(closed);
  }
  segments.push_back(current_);
  const std::uint64_t names = names_created_;
  const bool new_names = names_synced_ < names;
  lock.unlock();
  for (const auto& seg : segments) {
    if (::fdatasync(seg->fd) != 0) {
      const int err = errno;
      lock.lock();
      fail("fsync of log segment '" + seg->path.string() + "' failed: " + std::strerror(err));
      throw LogUnavailable(failure_);
    }
  }
  if (new_names) {
    if (const int err = sync_directory(); err != 0) {
      lock.lock();
      fail("fsync of the log directory '" + dir_.string() + "' failed: " + std::strerror(err));
      throw LogUnavailable(failure_);
    }
  }
  lock.lock();
  for (std::size_t i = 0; i + 1 < segments.size(); ++i) segments[i]->synced = true;  // closed: for good
  if (new_names) names_durable(names);
  durable_lsn_ = std::max(durable_lsn_, target);
  lock.unlock();
  cv_.notify_all();  // waiters now covered are answered by the sync thread
}

void SegmentLog::release(std::uint64_t upto) {
  // Only the files are removed under no lock: unlinking a segment and
  // closing its descriptor frees its blocks, tens of milliseconds for a
  // full segment on ext4, and appends (event loops holding a namespace's
  // lock) must not wait for that. Only release() takes segments off the
  // front of closed_ (the checkpoint's thread, one pass at a time); appends
  // add at the back. The erase below checks it takes the segments it
  // removed all the same.
  std::vector<std::shared_ptr<Segment>> old;
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < closed_.size(); ++i) {
      const std::uint64_t next_first = i + 1 < closed_.size() ? closed_[i + 1]->first_lsn : current_->first_lsn;
      if (next_first - 1 > upto) break;  // this segment still holds a record after `upto`
      old.push_back(closed_[i]);
    }
  }
  std::size_t removed = 0;
  std::uint64_t removed_bytes = 0;
  for (const auto& seg : old) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(seg->path, ec);
    const std::uint64_t bytes = ec ? 0 : size;
    std::filesystem::remove(seg->path, ec);
    if (ec) break;  // tried again at the next checkpoint
    ++removed;
    removed_bytes += bytes;
  }
  if (removed == 0) return;
  {
    std::lock_guard lock(mu_);
    std::size_t front = 0;
    while (front < removed && front < closed_.size() && closed_[front] == old[front]) ++front;
    closed_.erase(closed_.begin(), closed_.begin() + static_cast<std::ptrdiff_t>(front));
    std::lock_guard s(stats_mu_);
    stats_.bytes -= std::min<std::uint64_t>(stats_.bytes, removed_bytes);
    stats_.segments = closed_.size() + 1;
  }
  (void)sync_directory();  // best effort: a segment that comes back after a crash is skipped by LSN
  old.clear();  // the descriptors close here, under no lock
}

LogStats SegmentLog::stats() const {
  std::lock_guard s(stats_mu_);
  return stats_;
}

}  // namespace ebb::storage
