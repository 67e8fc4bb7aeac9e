#pragma once
// An exclusive lock on a directory for this process's life: flock on
// <dir>/LOCK and on the directory itself (so a LOCK file deleted as "stale"
// does not let a second process in). Two ebb processes never write one
// data directory.
#include <filesystem>
#include <string>

namespace ebb::storage {

class DirectoryLock {
 public:
  // Creates the directory if needed. Throws IoError, or std::runtime_error
  // "<what> '<dir>' is in use by another ebb server" when it is held.
  DirectoryLock(const std::filesystem::path& dir, const std::string& what);
  ~DirectoryLock();  // releases both
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int lock_fd_ = -1;
  int dir_fd_ = -1;
};

}  // namespace ebb::storage
