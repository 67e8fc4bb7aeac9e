#include "ebb/io/line_reader.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace ebb::io {
namespace {
std::string_view trim_cr(std::string_view s) { return !s.empty() && s.back() == '\r' ? s.substr(0, s.size() - 1) : s; }
}  // namespace

LineReader::LineReader(int fd, std::size_t max_line_bytes)
    : fd_(fd), max_line_(max_line_bytes), buffer_bytes_(std::max<std::size_t>(std::size_t{1} << 20, 2 * max_line_bytes + 1)) {}

bool LineReader::next(std::vector<char>& buffer, std::vector<Line>& lines) {
  lines.clear();
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
      const void* nl = std::memchr(base + pos, '\n', end - pos);
      if (nl == nullptr) break;
      const std::size_t stop = static_cast<const char*>(nl) - base;
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
