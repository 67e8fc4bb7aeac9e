#include "ebb/io/line_reader.hpp"

#include "ebb/io/find_byte.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace ebb::io {
namespace {
std::string_view trim_cr(std::string_view s) { return !s.empty() && s.back() == '\r' ? s.substr(0, s.size() - 1) : s; }
}  // namespace

// How many bytes of a mapping one call hands out: ~9k short lines, a chunk
// small enough to stay in cache between the parsing and the counting thread.
constexpr std::size_t kMappedWindow = std::size_t{1} << 18;

LineReader::LineReader(int fd, std::size_t max_line_bytes)
    : fd_(fd), max_line_(max_line_bytes), buffer_bytes_(std::max<std::size_t>(std::size_t{1} << 20, 2 * max_line_bytes + 1)) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    const auto size = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    // Not MAP_POPULATE: a multi-GB log must not be faulted in up front; with
    // MADV_SEQUENTIAL the kernel reads ahead and maps around each fault.
    if (p != MAP_FAILED) {  // otherwise fall back to read(2)
      ::madvise(p, size, MADV_SEQUENTIAL);
      map_size_ = size;
      mapped_ = std::shared_ptr<const char>(static_cast<const char*>(p), [size](const char* q) {
        ::munmap(const_cast<char*>(q), size);
      });
    }
  }
}

bool LineReader::next_mapped(std::vector<Line>& lines) {
  // The file's size was taken at open: a file that grows while it is read
  // is read up to that size. Newlines are found 64 bytes at a time as a
  // bitmask, so short lines cost a few instructions each.
  const char* data = mapped_.get();
  const std::size_t limit = std::min(map_size_, pos_ + kMappedWindow);
  auto emit = [&](std::size_t begin, std::size_t stop) {
    const std::string_view text = trim_cr(std::string_view(data + begin, stop - begin));
    lines.push_back({text.substr(0, std::min(text.size(), max_line_)), text.size() > max_line_});
  };
  std::size_t line_start = pos_;
  std::size_t scan = pos_;
  while (scan < map_size_ && line_start < limit) {
    std::uint64_t mask;
    std::size_t block;
    if (map_size_ - scan >= 64) {
      block = 64;
      mask = byte_mask64(data + scan, '\n');
    } else {  // the last bytes: never read past the mapping
      block = map_size_ - scan;
      mask = 0;
      for (std::size_t i = 0; i < block; ++i) mask |= static_cast<std::uint64_t>(data[scan + i] == '\n') << i;
    }
    while (mask != 0) {
      const std::size_t nl = scan + static_cast<std::size_t>(__builtin_ctzll(mask));
      mask &= mask - 1;
      emit(line_start, nl);
      line_start = nl + 1;
    }
    scan += block;
  }
  if (scan >= map_size_ && line_start < map_size_) {  // the last line had no terminator
    emit(line_start, map_size_);
    line_start = map_size_;
  }
  pos_ = line_start;
  return !lines.empty();
}

bool LineReader::next(std::vector<char>& buffer, std::vector<Line>& lines) {
  lines.clear();
  if (mapped_) return next_mapped(lines);
  while (lines.empty()) {
    if (eof_ && carry_.empty()) return false;
    if (buffer.size() < buffer_bytes_) buffer.resize(buffer_bytes_);
    // The carried line is at most max_line_ bytes, so at least half the buffer is free.
    std::memcpy(buffer.data(), carry_.data(), carry_.size());
    std::size_t end = carry_.size();
    carry_.clear();
    if (!eof_) {
      ssize_t n;
      do {
        n = ::read(fd_, buffer.data() + end, buffer.size() - end);
      } while (n < 0 && errno == EINTR);
      if (n < 0) throw std::system_error(errno, std::generic_category(), "read");
      if (n == 0) eof_ = true;
      end += static_cast<std::size_t>(n);
      bytes_read_ += static_cast<std::uint64_t>(n);
    }
    const char* base = buffer.data();
    std::size_t pos = 0;
    while (pos < end) {
      const std::size_t stop = pos + find_byte(base + pos, end - pos, '\n');
      if (stop == end) break;
      if (skipping_) {
        skipping_ = false;  // the tail of an oversized line ends here
      } else {
        const std::string_view text = trim_cr(std::string_view(base + pos, stop - pos));
        lines.push_back({text.substr(0, std::min(text.size(), max_line_)), text.size() > max_line_});
      }
      pos = stop + 1;
    }
    const std::string_view tail(base + pos, end - pos);
    if (eof_) {
      if (!tail.empty() && !skipping_) {  // the last line had no terminator
        const std::string_view text = trim_cr(tail);
        lines.push_back({text.substr(0, std::min(text.size(), max_line_)), text.size() > max_line_});
      }
      skipping_ = false;
    } else if (skipping_) {
      // still inside an oversized line: drop what was read of it
    } else if (tail.size() > max_line_) {
      // No terminator within the limit: report the line now, skip its rest.
      lines.push_back({tail.substr(0, max_line_), true});
      skipping_ = true;
    } else {
      carry_.assign(tail);
    }
  }
  return true;
}

}  // namespace ebb::io
