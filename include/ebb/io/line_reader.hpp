#pragma once
// Reads a byte stream as lines in large chunks, with no copy per line. Each
// call fills a buffer the caller owns (the unfinished line left from the
// previous call first, then fresh bytes) and returns views of the complete
// lines in it, so a caller can hand the buffer, and every key pointing into
// it, to another thread while the next read goes into another buffer.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::io {

struct Line {
  std::string_view text;   // without the terminator (LF or CRLF)
  bool oversized = false;  // longer than the limit: text is its first bytes, the rest was skipped
};

class LineReader {
 public:
  // fd is read with read(2) and not closed.
  LineReader(int fd, std::size_t max_line_bytes);

  // Replaces `lines` with the next complete lines, read into `buffer`
  // (grown to buffer_bytes() when smaller); false at end of input (then
  // `lines` is empty). Throws std::system_error on a read error.
  bool next(std::vector<char>& buffer, std::vector<Line>& lines);
  std::size_t buffer_bytes() const noexcept { return buffer_bytes_; }
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }

 private:
  int fd_;
  std::size_t max_line_;
  std::size_t buffer_bytes_;
  std::string carry_;      // the unfinished last line of the previous buffer
  bool eof_ = false;
  bool skipping_ = false;  // inside the rest of an oversized line
  std::uint64_t bytes_read_ = 0;
};

}  // namespace ebb::io
