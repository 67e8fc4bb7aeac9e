// `ebb top` / `ebb send` line splitting (io/line_reader.hpp), against a
// plain reference split of the same bytes. Input: four option digits
// (fuzz::Input::digit: '0' is 0), then the stream. Digit 0: max_line_bytes
// (1 + d % 32). Digit 1, bit 0: a regular file (memfd) read in one go, whose
// size at open is off by digit 2's low 6 bits (bit 6: claimed larger than
// it is, as when the file was truncated while it was read; else smaller, as
// when it grew); else a SOCK_SEQPACKET socket that delivers the stream in
// reads of digits 2 and 3's lengths (1 + d % 32) in turn, so line and CRLF
// boundaries fall between reads, deterministically.
// Checks: the lines, their oversized flags and shrank() are the reference's:
// every '\n'-terminated line without its '\r', cut to max_line_bytes and
// flagged when longer; a last unterminated line likewise, unless the file
// shrank and it is a fragment within the limit.
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "ebb/io/line_reader.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb;

struct Expected {
  std::string text;
  bool oversized;
  friend bool operator==(const Expected&, const Expected&) = default;
};

std::vector<Expected> reference(std::string_view bytes, std::size_t max_line, bool shrank) {
  std::vector<Expected> out;
  auto add = [&](std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back({std::string(line.substr(0, max_line)), line.size() > max_line});
  };
  for (;;) {
    const std::size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) break;
    add(bytes.substr(0, nl));
    bytes.remove_prefix(nl + 1);
  }
  // The last line when it has no '\n': a line at the end of the input; a
  // fragment at the cut when the file shrank, which is no line, unless it
  // is already too long (without a last '\r', maybe half a CRLF): then the
  // reader has reported it as oversized before it saw the cut, truthfully.
  if (!bytes.empty() && (!shrank || bytes.size() - (bytes.back() == '\r' ? 1 : 0) > max_line)) add(bytes);
  return out;
}

std::vector<Expected> read_all(int fd, std::size_t max_line, std::optional<std::uint64_t> size_at_open, bool& shrank) {
  io::LineReader reader(fd, max_line, size_at_open);
  // Reused across runs, as `ebb top` reuses its buffers: stale bytes from
  // the last input must never show up in a line (and a fresh read-sized
  // buffer per run would cost more than the reading).
  static std::vector<char> buffer;
  std::vector<io::Line> lines;
  std::vector<Expected> out;
  while (reader.next(buffer, lines)) {
    FUZZ_CHECK(!lines.empty());
    for (const auto& l : lines) out.push_back({std::string(l.text), l.oversized});
  }
  shrank = reader.shrank();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const std::size_t max_line = 1 + in.digit() % 32;
  const bool regular = in.digit() & 1;
  const std::uint8_t a = in.digit(), b = in.digit();
  const std::string_view stream = in.rest();

  std::vector<Expected> got;
  bool shrank = false;
  std::string_view seen = stream;  // what the reader should see
  bool expect_shrank = false;
  if (regular) {
    const int fd = memfd_create("fuzz_line_reader", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(write(fd, stream.data(), stream.size()) == static_cast<ssize_t>(stream.size()));
    FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
    const std::size_t off = a & 0x3f;
    std::uint64_t claimed = stream.size();
    if (a & 0x40) {
      claimed += off;
      expect_shrank = off > 0;
    } else {
      claimed -= std::min<std::size_t>(off, stream.size());
      seen = stream.substr(0, claimed);
    }
    got = read_all(fd, max_line, claimed, shrank);
    close(fd);
  } else {
    int fds[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0);
    const int sndbuf = 4 << 20;
    setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    const std::size_t lengths[2] = {1 + std::size_t{a} % 32, 1 + std::size_t{b} % 32};
    std::string_view rest = stream;
    for (std::size_t i = 0; !rest.empty(); ++i) {
      // Few messages: past 64, the rest goes in one (a socket's buffer is finite).
      const std::size_t n = i >= 64 ? rest.size() : std::min(rest.size(), lengths[i % 2]);
      FUZZ_CHECK(send(fds[0], rest.data(), n, MSG_DONTWAIT) == static_cast<ssize_t>(n));
      rest.remove_prefix(n);
    }
    close(fds[0]);
    got = read_all(fds[1], max_line, std::nullopt, shrank);
    close(fds[1]);
  }
  FUZZ_CHECK(shrank == expect_shrank);
  const auto want = reference(seen, max_line, expect_shrank);
  FUZZ_CHECK(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) FUZZ_CHECK_MSG(got[i] == want[i], got[i].text);
  return 0;
}
