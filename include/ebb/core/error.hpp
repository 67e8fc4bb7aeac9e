#pragma once
// Errors raised at ebb's boundaries. Every error names what was wrong and
// where, so a front end can turn it into a message or an HTTP status as is.
#include <stdexcept>
#include <string>
#include <string_view>

namespace ebb {

// A caller passed a value outside its documented domain (bad weight, bad
// sketch size, unknown view...). Front ends map it to a usage error / 400.
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A serialised blob is corrupt, truncated, of another type or of an
// unsupported version. Never produces a half-loaded object.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One event of a batch is invalid; the whole batch was rejected and nothing
// of it counted. `index` is the event's position in the batch.
class BatchError : public InvalidArgument {
 public:
  BatchError(std::size_t index, std::string field, const std::string& message)
      : InvalidArgument("event " + std::to_string(index) + ": " + field + ": " + message),
        index_(index),
        field_(std::move(field)),
        message_(message) {}
  std::size_t index() const noexcept { return index_; }
  const std::string& field() const noexcept { return field_; }
  // What is wrong with the field, without the index and field name.
  const std::string& message() const noexcept { return message_; }

 private:
  std::size_t index_;
  std::string field_;
  std::string message_;
};

// A sum of counts (a merge) would pass what the counters hold exactly;
// nothing was changed. Its own type: RESP answers it with its own text.
class CountOverflow : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// Text from the input (a JSON field name) quoted in an error message: each
// NUL byte is written as the two characters "\0", since what() ends the
// message at the first NUL (a field named "\u0000..." left it empty).
inline std::string message_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\0') out += "\\0";
    else out += c;
  }
  return out;
}

}  // namespace ebb
