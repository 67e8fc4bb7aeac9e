#include "ebb/storage/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ebb::storage {

IoError::IoError(const std::string& what, const std::filesystem::path& path, int err)
    : std::runtime_error(what + " '" + path.string() + "': " + std::strerror(err)), err_(err) {}

void fsync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open directory", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw IoError("cannot sync directory", dir, err);
}

void write_all(int fd, std::string_view bytes, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError("cannot write", path, errno);
    done += static_cast<std::size_t>(n);
  }
}

void write_all(int fd, std::string_view first, std::string_view second, const std::filesystem::path& path) {
  std::size_t done = 0;  // of first, then of second
  while (done < first.size()) {
    iovec parts[2] = {{const_cast<char*>(first.data() + done), first.size() - done}, {const_cast<char*>(second.data()), second.size()}};
    const ssize_t n = ::writev(fd, parts, 2);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError("cannot write", path, errno);
    done += static_cast<std::size_t>(n);
  }
  // `done` now counts past the end of first: what of second is written.
  if (done - first.size() < second.size()) write_all(fd, second.substr(done - first.size()), path);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError("cannot create", tmp, errno);
  try {
    write_all(fd, bytes, tmp);
    if (::fsync(fd) != 0) throw IoError("cannot sync", tmp, errno);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());  // nothing half-written stays behind
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw IoError("cannot rename into", path, err);
  }
  fsync_directory(path.parent_path());
}

std::string read_whole_file(const std::filesystem::path& path) {
  std::string out;
  read_whole_file_into(path, out);
  return out;
}

void read_whole_file_into(const std::filesystem::path& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open", path, errno);
  // Read straight into a buffer of the file's size: a 64 MiB log segment
  // grown 64 KiB at a time was copied twice over (recovery time). A reused
  // `out` keeps its pages: no fresh page faults per segment.
  struct stat st{};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(std::max<std::size_t>(out.size() * 2, 1 << 16));  // it grew meanwhile
    const ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw IoError("cannot read", path, err);
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(used);
}

}  // namespace ebb::storage
