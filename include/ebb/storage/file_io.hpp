#pragma once
// Small POSIX file helpers for the data directory. Every failure throws
// storage::IoError naming the path and the system's reason (errno), so a
// full disk or a read-only directory says exactly where.
#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ebb::storage {

class IoError : public std::runtime_error {
 public:
  IoError(const std::string& what, const std::filesystem::path& path, int err);
  int error_number() const noexcept { return err_; }

 private:
  int err_;
};

// Writes `bytes` to `path` so a crash leaves the old file or the new one,
// never a torn one: temporary file, fsync, rename, fsync of the directory.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);
std::string read_whole_file(const std::filesystem::path& path);
// The same into `out`, reusing its memory (a loop over many large files).
void read_whole_file_into(const std::filesystem::path& path, std::string& out);
void fsync_directory(const std::filesystem::path& dir);
// write(2) until done; EINTR retried.
void write_all(int fd, std::string_view bytes, const std::filesystem::path& path);
// The same for two pieces one after the other, in one writev(2) call
// when the kernel takes them whole.
void write_all(int fd, std::string_view first, std::string_view second, const std::filesystem::path& path);

}  // namespace ebb::storage
