#include "ebb/io/line_reader.hpp"

#include "ebb/io/find_byte.hpp"

#include <fcntl.h>
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

// How many bytes one read asks for: ~9k short lines, a chunk small enough
// to stay in cache between the parsing and the counting thread.
constexpr std::size_t kReadBytes = std::size_t{1} << 18;

LineReader::LineReader(int fd, std::size_t max_line_bytes, std::optional<std::uint64_t> size_at_open)
    : fd_(fd), max_line_(max_line_bytes) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const std::uint64_t size = size_at_open.value_or(static_cast<std::uint64_t>(st.st_size));
    const off_t at = ::lseek(fd, 0, SEEK_CUR);
    regular_ = true;
    expected_ = remaining_ = at >= 0 && static_cast<std::uint64_t>(at) < size ? size - static_cast<std::uint64_t>(at) : 0;
    // Twice the default read-ahead: the file is read once, front to back.
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
}

std::size_t LineReader::fill(char* dest, std::size_t space) {
  std::size_t want = std::min(space, kReadBytes);
  if (regular_) want = static_cast<std::size_t>(std::min<std::uint64_t>(want, remaining_));
  ssize_t n = 0;
  if (want > 0) {
    do {
      n = ::read(fd_, dest, want);
    } while (n < 0 && errno == EINTR);
    if (n < 0) throw std::system_error(errno, std::generic_category(), "read");
  }
  bytes_read_ += static_cast<std::uint64_t>(n);
  if (regular_) {
    // A regular file ends at the size it had when it was opened; ending
    // before that means it was truncated under us.
    if (n == 0 && remaining_ > 0) shrank_ = true;
    remaining_ -= static_cast<std::uint64_t>(n);
    if (remaining_ == 0 || shrank_) eof_ = true;
  } else if (n == 0) {
    eof_ = true;
  }
  return static_cast<std::size_t>(n);
}

bool LineReader::next(std::vector<char>& buffer, std::vector<Line>& lines) {
  lines.clear();
  auto emit = [&](std::string_view raw) {
    const std::string_view text = trim_cr(raw);
    lines.push_back({text.substr(0, std::min(text.size(), max_line_)), text.size() > max_line_});
  };
  while (lines.empty()) {
    if (eof_ && carry_.empty()) return false;
    // Room for the carried line (at most max_line_ bytes and a '\r') and one whole
    // read. Sized to that, not to the worst case: resize() writes every
    // byte, and first touches of fresh pages are what a buffer costs.
    if (buffer.size() < carry_.size() + kReadBytes) buffer.resize(carry_.size() + kReadBytes);
    std::memcpy(buffer.data(), carry_.data(), carry_.size());
    std::size_t end = carry_.size();
    carry_.clear();
    if (!eof_) end += fill(buffer.data() + end, buffer.size() - end);
    // Newlines are found 64 bytes at a time as a bitmask, so short lines
    // cost a few instructions each.
    const char* base = buffer.data();
    std::size_t line_start = 0;
    auto line_at = [&](std::size_t nl) {
      if (skipping_) {
        skipping_ = false;  // the tail of an oversized line ends here
      } else {
        emit(std::string_view(base + line_start, nl - line_start));
      }
      line_start = nl + 1;
    };
    std::size_t scan = 0;
    for (; scan + 64 <= end; scan += 64) {
      for (std::uint64_t mask = byte_mask64(base + scan, '\n'); mask != 0; mask &= mask - 1) {
        line_at(scan + static_cast<std::size_t>(__builtin_ctzll(mask)));
      }
    }
    for (; scan < end; ++scan) {
      if (base[scan] == '\n') line_at(scan);
    }
    const std::string_view tail(base + line_start, end - line_start);
    if (eof_) {
      // The last line had no terminator; after a truncation it is a
      // fragment cut off at the new end, not a line.
      if (!tail.empty() && !skipping_ && !shrank_) emit(tail);
      skipping_ = false;
    } else if (skipping_) {
      // still inside an oversized line: drop what was read of it
    } else if (tail.size() - (!tail.empty() && tail.back() == '\r' ? 1 : 0) > max_line_) {
      // No terminator within the limit: report the line now, skip its rest.
      // (A last '\r' may be half of a CRLF whose '\n' the next read brings:
      // a line of exactly the limit is carried, not reported.)
      lines.push_back({tail.substr(0, max_line_), true});
      skipping_ = true;
    } else {
      carry_.assign(tail);
    }
  }
  return true;
}

}  // namespace ebb::io
