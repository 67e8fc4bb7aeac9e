#include "ebb/storage/file_io.hpp"

#include <fcntl.h>
#include <unistd.h>

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
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open", path, errno);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw IoError("cannot read", path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace ebb::storage
