#pragma once
// Reads a byte stream as lines in large chunks with no copy per line. The
// views handed out stay valid until the next call to next(), which is when
// a caller flushes any batch that points into them.
#include <cstdint>
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

  // Replaces `lines` with the next complete lines; false at end of input
  // (then `lines` is empty). Throws std::system_error on a read error.
  bool next(std::vector<Line>& lines);
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }

 private:
  int fd_;
  std::size_t max_line_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;  // unconsumed bytes
  bool eof_ = false;
  bool skipping_ = false;  // inside the rest of an oversized line
  std::uint64_t bytes_read_ = 0;
};

}  // namespace ebb::io
