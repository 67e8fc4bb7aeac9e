// A directory's exclusive lock (storage/directory_lock.hpp).
#include "ebb/storage/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "ebb/storage/file_io.hpp"

namespace ebb::storage {

DirectoryLock::DirectoryLock(const std::filesystem::path& dir, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError("cannot create directory", dir, ec.value());
  const auto lock_path = dir / "LOCK";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) throw IoError("cannot open lock file", lock_path, errno);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);  // no destructor runs for a constructor that throws
    throw std::runtime_error(what + " '" + dir.string() + "' is in use by another ebb server (lock held on " + lock_path.string() + ")");
  }
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    const int err = errno;
    ::close(lock_fd_);
    throw IoError("cannot open", dir, err);
  }
  if (::flock(dir_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(dir_fd_);
    ::close(lock_fd_);
    throw std::runtime_error(what + " '" + dir.string() + "' is in use by another ebb server (lock held on the directory)");
  }
}

DirectoryLock::~DirectoryLock() {
  ::close(dir_fd_);  // releases the flocks
  ::close(lock_fd_);
}

}  // namespace ebb::storage
