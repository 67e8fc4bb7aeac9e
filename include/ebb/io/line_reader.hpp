#pragma once
// Reads a byte stream as lines in large chunks, with no copy per line.
//
// Everything (regular files, pipes, terminals, sockets) is read(2) into a
// buffer the caller owns: the unfinished line left from the previous call
// first, then fresh bytes; the lines are views into that buffer, so a caller
// can hand it, with every key pointing into it, to another thread while the
// next read goes into another buffer.
//
// Regular files are not memory-mapped: a mapping turns a file truncated
// while it is read (logrotate's copytruncate) into SIGBUS on whichever
// thread touches a key past the new end, and reading into buffers measured
// no slower (docs/design.md, "ebb top").
#include <cstdint>
#include <memory>
#include <optional>
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
  // How many bytes one read asks for: ~4.5k short lines, a chunk small enough
  // to stay in cache between the parsing and the counting thread (with its
  // columns, ~300 KB; 128 KiB reads ran 5-7% faster than 256 KiB ones on
  // bench/compare_top.sh's TSV, 64 KiB no faster again).
  static constexpr std::size_t kReadBytes = std::size_t{1} << 17;

  // fd is read with read(2) from its current offset and not closed. A
  // regular file is read up to `size_at_open` (the size the caller saw when
  // it opened the file; default: its size now): a file that grows while it
  // is read is read as it was.
  LineReader(int fd, std::size_t max_line_bytes, std::optional<std::uint64_t> size_at_open = std::nullopt);

  // Replaces `lines` with the next complete lines, read into `buffer`
  // (grown when it cannot hold the unfinished line carried over and one
  // read: at most max_line_bytes + 128 KiB); false at end of input (then
  // `lines` is empty). Throws std::system_error on a read error.
  bool next(std::vector<char>& buffer, std::vector<Line>& lines);
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }

  // A regular file that ended before that size: it was truncated while
  // being read (logrotate's copytruncate). Then its lines are those of the
  // bytes_read() bytes read before the cut, without the unfinished line at
  // the cut (a fragment of a line is not a key).
  bool shrank() const noexcept { return shrank_; }
  // The bytes a regular file was to give (from the reader's offset); 0 otherwise.
  std::uint64_t expected_bytes() const noexcept { return expected_; }

 private:
  std::size_t fill(char* dest, std::size_t space);

  int fd_;
  std::size_t max_line_;
  bool regular_ = false;
  std::uint64_t expected_ = 0;
  std::uint64_t remaining_ = 0;  // regular files: bytes still to read
  std::string carry_;            // the unfinished last line of the previous buffer
  bool eof_ = false;
  bool shrank_ = false;
  bool skipping_ = false;        // inside the rest of an oversized line
  std::uint64_t bytes_read_ = 0;
  std::unique_ptr<std::uint32_t[]> newlines_;  // scratch: offsets of the newlines of a buffer
  std::size_t newline_capacity_ = 0;
};

}  // namespace ebb::io
