#pragma once
// Reads a byte stream as lines in large chunks, with no copy per line.
//
// A regular file is memory-mapped: lines are views into the mapping, which
// keepalive() shares with whoever holds views after the reader is gone.
// Anything else (pipes, terminals, sockets) is read(2) into a buffer the
// caller owns: the unfinished line left from the previous call first, then
// fresh bytes; the lines are views into that buffer, so a caller can hand
// it, with every key pointing into it, to another thread while the next
// read goes into another buffer.
#include <cstdint>
#include <memory>
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
  std::uint64_t bytes_read() const noexcept { return mapped_ ? pos_ : bytes_read_; }
  // The mapping lines point into (null when not mapped).
  const std::shared_ptr<const char>& keepalive() const noexcept { return mapped_; }
  std::string_view mapped_bytes() const noexcept { return {mapped_.get(), map_size_}; }

 private:
  bool next_mapped(std::vector<Line>& lines);

  std::shared_ptr<const char> mapped_;
  std::size_t map_size_ = 0;
  std::size_t pos_ = 0;
  int fd_;
  std::size_t max_line_;
  std::size_t buffer_bytes_;
  std::string carry_;      // the unfinished last line of the previous buffer
  bool eof_ = false;
  bool skipping_ = false;  // inside the rest of an oversized line
  std::uint64_t bytes_read_ = 0;
};

}  // namespace ebb::io
