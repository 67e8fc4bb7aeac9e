#include "ebb/resp/protocol.hpp"

#include <algorithm>
#include <charconv>

#include "ebb/core/buffer_reuse.hpp"

namespace ebb::resp {
namespace {

// A decimal after a type byte, up to CRLF; false when malformed.
bool parse_length(std::string_view text, long long& out) {
  if (text.empty() || text.size() > 20) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::size_t CommandReader::bulk_start(std::string_view data, std::size_t at) noexcept {
  // Digits after the '$' at `at`, at most 9 (no overflow), then CRLF.
  const std::size_t limit = std::min(data.size(), at + 1 + 9 + 2);
  std::size_t i = at + 1, len = 0;
  while (i < limit && data[i] >= '0' && data[i] <= '9') len = len * 10 + static_cast<std::size_t>(data[i++] - '0');
  if (i == at + 1 || i + 1 >= limit || data[i] != '\r' || data[i + 1] != '\n') return 0;
  bulk_length_ = len;
  return i + 2;
}

namespace {

// Argument tables larger than this are given back once their command is
// done, not kept for the next: a command of a million arguments takes 16
// MiB in each (spans and views), which an idle connection would hold.
constexpr std::size_t kKeptArguments = 4096;

}  // namespace

void CommandReader::reset() {
  expected_ = -1;
  clear_keeping_at_most(spans_, kKeptArguments);
  pos_ = 0;
}

CommandReader::Status CommandReader::fail(std::string message) {
  reset();
  error_ = "Protocol error: " + std::move(message);
  return Status::error;
}

CommandReader::Status CommandReader::read(std::string_view data) {
  clear_keeping_at_most(args_, kKeptArguments);
  clear_keeping_at_most(inline_words_, kKeptArguments);  // (args_ pointed into them)
  consumed_ = 0;
  if (data.empty()) return Status::incomplete;
  if (expected_ < 0) {
    if (data[0] != '*') return read_inline(data);
    const std::size_t eol = data.find("\r\n");
    if (eol == std::string_view::npos) {
      if (data.size() > 32) return fail("too big mbulk count string");
      return Status::incomplete;
    }
    if (eol > 32) return fail("too big mbulk count string");  // (as when the line's end is still to come)
    long long n = 0;
    if (!parse_length(data.substr(1, eol - 1), n) || n > static_cast<long long>(limits_.max_arguments)) {
      return fail("invalid multibulk length");
    }
    if (n <= 0) {  // an empty command: nothing to run (as Redis does)
      consumed_ = eol + 2;
      return Status::complete;
    }
    expected_ = n;
    pos_ = eol + 2;
    spans_.reserve(static_cast<std::size_t>(std::min<long long>(n, 1024)));
  }
  while (static_cast<long long>(spans_.size()) < expected_) {
    if (pos_ >= data.size()) return Status::incomplete;
    if (data[pos_] != '$') return fail(std::string("expected '$', got '") + data[pos_] + "'");
    // The usual bulk, read in one pass: "$", 1-9 digits, CRLF, the bytes,
    // CRLF, all in the buffer and within the limits. Anything else (a sign,
    // a longer number, a line or bulk not all there yet, a limit passed)
    // takes the general path below, which says what is wrong.
    if (const std::size_t start = bulk_start(data, pos_); start != 0) {
      const std::size_t len = bulk_length_;
      const std::size_t end = start + len;
      if (len <= limits_.max_bulk_bytes && end + 2 <= limits_.max_command_bytes && end + 2 <= data.size() && data[end] == '\r' &&
          data[end + 1] == '\n') {
        spans_.emplace_back(start, len);
        pos_ = end + 2;
        continue;
      }
    }
    const std::size_t eol = data.find("\r\n", pos_);
    if (eol == std::string_view::npos) {
      if (data.size() - pos_ > 32) return fail("invalid bulk length");
      return Status::incomplete;
    }
    long long len = 0;
    if (!parse_length(data.substr(pos_ + 1, eol - pos_ - 1), len) || len < 0) return fail("invalid bulk length");
    if (static_cast<std::size_t>(len) > limits_.max_bulk_bytes) {
      return fail("invalid bulk length (" + std::to_string(len) + " bytes; the limit is " + std::to_string(limits_.max_bulk_bytes) + ")");
    }
    const std::size_t start = eol + 2, end = start + static_cast<std::size_t>(len);
    if (end + 2 > limits_.max_command_bytes) {
      return fail("a command of more than " + std::to_string(limits_.max_command_bytes) + " bytes");
    }
    if (end + 2 > data.size()) return Status::incomplete;
    if (data[end] != '\r' || data[end + 1] != '\n') return fail("a bulk string is longer than its stated length");
    spans_.emplace_back(start, static_cast<std::size_t>(len));
    pos_ = end + 2;
  }
  args_.reserve(spans_.size());
  for (const auto& [start, len] : spans_) args_.push_back(data.substr(start, len));
  consumed_ = pos_;
  reset();
  return Status::complete;
}

// An inline command: words separated by spaces, with double quotes (and
// the escapes \n \r \t \b \a \\ \" \xHH) or single quotes (\') around a
// word that holds spaces. The words are copied into buffers the reader
// owns, since unescaping changes them.
CommandReader::Status CommandReader::read_inline(std::string_view data) {
  const std::size_t eol = data.find('\n');
  if (eol == std::string_view::npos) {
    if (data.size() > limits_.max_inline_bytes) return fail("too big inline request");
    return Status::incomplete;
  }
  if (eol > limits_.max_inline_bytes) return fail("too big inline request");
  std::string_view line = data.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    std::string word;
    if (line[i] == '"' || line[i] == '\'') {
      const char quote = line[i++];
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i];
        if (c == quote) {
          closed = true;
          ++i;
          break;
        }
        if (c == '\\' && i + 1 < line.size()) {
          const char e = line[i + 1];
          if (quote == '\'') {
            word += e == '\'' ? '\'' : '\\';
            i += e == '\'' ? 2 : 1;
            continue;
          }
          if (e == 'x' && i + 3 < line.size() && hex_digit(line[i + 2]) >= 0 && hex_digit(line[i + 3]) >= 0) {
            word += static_cast<char>(hex_digit(line[i + 2]) * 16 + hex_digit(line[i + 3]));
            i += 4;
            continue;
          }
          switch (e) {
            case 'n': word += '\n'; break;
            case 'r': word += '\r'; break;
            case 't': word += '\t'; break;
            case 'b': word += '\b'; break;
            case 'a': word += '\a'; break;
            default: word += e;
          }
          i += 2;
          continue;
        }
        word += c;
        ++i;
      }
      // A closing quote must end the word.
      if (!closed || (i < line.size() && line[i] != ' ' && line[i] != '\t')) return fail("unbalanced quotes in request");
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') word += line[i++];
    }
    if (inline_words_.size() >= limits_.max_arguments) return fail("invalid multibulk length");
    inline_words_.push_back(std::move(word));
  }
  for (const auto& w : inline_words_) args_.push_back(w);
  consumed_ = eol + 1;
  return Status::complete;
}

}  // namespace ebb::resp
