#include "ebb/io/line_reader.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace ebb::io {

LineReader::LineReader(int fd, std::size_t max_line_bytes)
    : fd_(fd), max_line_(max_line_bytes), buffer_(std::max<std::size_t>(std::size_t{1} << 20, 2 * max_line_bytes)) {}

namespace {
std::string_view trim_cr(std::string_view s) { return !s.empty() && s.back() == '\r' ? s.substr(0, s.size() - 1) : s; }
}  // namespace

bool LineReader::next(std::vector<Line>& lines) {
  lines.clear();
  while (lines.empty()) {
    if (eof_ && begin_ == end_) return false;
    // Make room: move the partial tail to the front and fill the rest.
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (!eof_) {
      ssize_t n;
      do {
        n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
      } while (n < 0 && errno == EINTR);
      if (n < 0) throw std::system_error(errno, std::generic_category(), "read");
      if (n == 0) eof_ = true;
      end_ += static_cast<std::size_t>(n);
      bytes_read_ += static_cast<std::uint64_t>(n);
    }
    const char* base = buffer_.data();
    std::size_t pos = begin_;
    while (pos < end_) {
      const void* nl = std::memchr(base + pos, '\n', end_ - pos);
      if (nl == nullptr) break;
      const std::size_t stop = static_cast<const char*>(nl) - base;
      if (skipping_) {
        skipping_ = false;  // the tail of an oversized line ends here
      } else {
        std::string_view text = trim_cr(std::string_view(base + pos, stop - pos));
        if (text.size() > max_line_) {
          lines.push_back({text.substr(0, max_line_), true});
        } else {
          lines.push_back({text, false});
        }
      }
      pos = stop + 1;
    }
    begin_ = pos;
    const std::size_t tail = end_ - begin_;
    if (eof_ && tail > 0) {
      // Last line without a terminator.
      if (!skipping_) {
        std::string_view text = trim_cr(std::string_view(base + begin_, tail));
        lines.push_back({text.substr(0, std::min(text.size(), max_line_)), text.size() > max_line_});
      }
      skipping_ = false;
      begin_ = end_;
    } else if (tail > max_line_ && !skipping_) {
      // No terminator within the limit: report the line now, skip its rest.
      lines.push_back({std::string_view(base + begin_, max_line_), true});
      skipping_ = true;
      begin_ = end_;
    } else if (skipping_) {
      begin_ = end_;  // still inside the oversized line
    }
  }
  return true;
}

}  // namespace ebb::io
