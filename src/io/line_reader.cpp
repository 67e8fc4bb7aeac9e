#include "ebb/io/line_reader.hpp"

#include "ebb/io/find_byte.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <system_error>

namespace ebb::io {
namespace {
std::string_view trim_cr(std::string_view s) { return !s.empty() && s.back() == '\r' ? s.substr(0, s.size() - 1) : s; }

// Bits set in x, without the popcnt instruction (not in baseline x86-64:
// __builtin_popcountll would be a libgcc call).
std::size_t popcount64(std::uint64_t x) noexcept {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return static_cast<std::size_t>((x * 0x0101010101010101ULL) >> 56);
}
}  // namespace


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
    // Newlines are found 64 bytes at a time as a bitmask, and their offsets
    // written out eight per block whatever the block holds (more only when it
    // holds more), so no branch depends on how many lines a block has; then
    // the lines are cut in a loop of its own.
    const char* base = buffer.data();
    if (newline_capacity_ < end + 64) {
      // Sized to the buffer's capacity (which grows by doubling), not to
      // this read: a new allocation per read that carried a longer line
      // than before would be an mmap and munmap each, and an munmap stops
      // the other threads of the process (TLB shootdown).
      newline_capacity_ = std::max(buffer.capacity(), end) + 64;
      newlines_ = std::make_unique_for_overwrite<std::uint32_t[]>(newline_capacity_);
    }
    std::uint32_t* const nl = newlines_.get();
    std::size_t count = 0;
    std::size_t scan = 0;
    for (; scan + 64 <= end; scan += 64) {
      std::uint64_t mask = byte_mask64(base + scan, '\n');
      const auto at = static_cast<std::uint32_t>(scan);
      const std::size_t n = popcount64(mask);
      for (std::size_t k = 0; k < 8; ++k) {
        nl[count + k] = at + static_cast<std::uint32_t>(__builtin_ctzll(mask | (std::uint64_t{1} << 63)));
        mask &= mask - 1;
      }
      for (std::size_t k = 8; k < n; ++k) {
        nl[count + k] = at + static_cast<std::uint32_t>(__builtin_ctzll(mask));
        mask &= mask - 1;
      }
      count += n;
    }
    for (; scan < end; ++scan) {
      if (base[scan] == '\n') nl[count++] = static_cast<std::uint32_t>(scan);
    }
    std::size_t line_start = 0;
    std::size_t i = 0;
    if (count > 0 && skipping_) {
      skipping_ = false;  // the tail of an oversized line ends at the first newline
      line_start = nl[0] + 1;
      i = 1;
    }
    for (; i < count; ++i) {
      emit(std::string_view(base + line_start, nl[i] - line_start));
      line_start = nl[i] + 1;
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
