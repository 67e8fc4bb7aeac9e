#include "ebb/storage/checkpoint_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ebb::storage {
namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path) {
  throw std::runtime_error(what + " '" + path.string() + "': " + std::strerror(errno));
}

void fsync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory", dir);
  ::fsync(fd);
  ::close(fd);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

CheckpointStore::CheckpointStore(std::filesystem::path dir) : dir_(std::move(dir)), ns_dir_(dir_ / "namespaces") {
  std::error_code ec;
  std::filesystem::create_directories(ns_dir_, ec);
  if (ec) throw std::runtime_error("cannot create data directory '" + ns_dir_.string() + "': " + ec.message());
  const auto lock_path = dir_ / "LOCK";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) fail("cannot open lock file", lock_path);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw std::runtime_error("data directory '" + dir_.string() + "' is in use by another ebb server (lock held on " +
                             lock_path.string() + ")");
  }
}

CheckpointStore::~CheckpointStore() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

void CheckpointStore::write_atomically(const std::filesystem::path& path, std::string_view bytes) {
  const auto tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", tmp);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      errno = saved;
      fail("cannot write", tmp);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    fail("cannot sync", tmp);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename into", path);
  fsync_dir(path.parent_path());
}

void CheckpointStore::save_config(const std::string& name, std::string_view json) { write_atomically(ns_dir_ / (name + ".json"), json); }

void CheckpointStore::save_state(const std::string& name, std::string_view blob) { write_atomically(ns_dir_ / (name + ".state"), blob); }

void CheckpointStore::remove(const std::string& name) {
  std::error_code ec;
  std::filesystem::remove(ns_dir_ / (name + ".state"), ec);
  std::filesystem::remove(ns_dir_ / (name + ".json"), ec);
  fsync_dir(ns_dir_);
}

std::vector<CheckpointStore::Stored> CheckpointStore::load_all() const {
  std::vector<Stored> out;
  for (const auto& entry : std::filesystem::directory_iterator(ns_dir_)) {
    const auto& p = entry.path();
    if (p.extension() != ".json") continue;
    Stored s;
    s.name = p.stem().string();
    s.config_path = p;
    s.config_json = read_file(p);
    s.state_path = ns_dir_ / (s.name + ".state");
    if (std::filesystem::exists(s.state_path)) s.state = read_file(s.state_path);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const Stored& a, const Stored& b) { return a.name < b.name; });
  return out;
}

}  // namespace ebb::storage
