#include "ebb/resp/reply.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

namespace ebb::resp {

void ReplyWriter::header(char type, std::size_t n) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, n).ptr;
  out_ += type;
  out_.append(buf, end);
  out_ += "\r\n";
}

void ReplyWriter::simple(std::string_view text) {
  out_ += '+';
  out_ += text;
  out_ += "\r\n";
}

void ReplyWriter::error(std::string_view text) {
  out_ += '-';
  for (const char c : text) out_ += (c == '\r' || c == '\n') ? ' ' : c;
  out_ += "\r\n";
}

void ReplyWriter::integer(long long v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out_ += ':';
  out_.append(buf, end);
  out_ += "\r\n";
}

void ReplyWriter::bulk(std::string_view data) {
  header('$', data.size());
  out_ += data;
  out_ += "\r\n";
}

void ReplyWriter::null() { out_ += protocol_ >= 3 ? "_\r\n" : "$-1\r\n"; }

namespace {

// n copies of a null of N bytes at p, each a fixed-size copy (a pipelined
// TOPK.ADD answers ~100 nulls a command: appended one by one, each paid
// the string's size checks).
template <std::size_t N>
void fill_nulls(char* p, const char (&one)[N + 1], std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i, p += N) std::memcpy(p, one, N);
}

}  // namespace

void ReplyWriter::nulls(std::size_t n) {
  const std::size_t at = out_.size();
  if (protocol_ >= 3) {
    out_.resize(at + 3 * n);
    fill_nulls<3>(out_.data() + at, "_\r\n", n);
  } else {
    out_.resize(at + 5 * n);
    fill_nulls<5>(out_.data() + at, "$-1\r\n", n);
  }
}

void ReplyWriter::array(std::size_t n) { header('*', n); }

void ReplyWriter::map(std::size_t pairs) {
  if (protocol_ >= 3) return header('%', pairs);
  header('*', 2 * pairs);
}

void ReplyWriter::boolean(bool v) {
  if (protocol_ >= 3) {
    out_ += v ? "#t\r\n" : "#f\r\n";
    return;
  }
  integer(v ? 1 : 0);
}

void ReplyWriter::number(double v) {
  char buf[32];
  std::string_view text;
  if (std::isnan(v)) text = "nan";
  else if (std::isinf(v)) text = v > 0 ? "inf" : "-inf";
  else text = std::string_view(buf, static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
  if (protocol_ >= 3) {
    out_ += ',';
    out_ += text;
    out_ += "\r\n";
    return;
  }
  bulk(text);
}

void ReplyWriter::verbatim(std::string_view text) {
  if (protocol_ < 3) return bulk(text);
  header('=', text.size() + 4);
  out_ += "txt:";
  out_ += text;
  out_ += "\r\n";
}

}  // namespace ebb::resp
