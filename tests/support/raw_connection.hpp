#pragma once
// A plain TCP connection to 127.0.0.1 for sending exactly the bytes a test
// wants (malformed requests, pipelines) and reading what comes back.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ebb::testing {

class RawConnection {
 public:
  explicit RawConnection(unsigned short port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("connect failed");
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // False once the peer has closed (no SIGPIPE).
  bool send(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Half-closes: the server reads the end of what was sent (as after
  // `nc -N` or a script's shutdown(SHUT_WR)), and this side can still read.
  void finish_sending() { ::shutdown(fd_, SHUT_WR); }
  bool readable(int timeout_ms) const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) > 0;
  }
  // Everything until the server closes (eof() then true) or nothing arrives
  // for `quiet_ms`.
  std::string read_until_close(int quiet_ms = 10000) {
    std::string out;
    char buf[4096];
    while (readable(quiet_ms)) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
        break;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  // One response with a Content-Length body (or none).
  std::string read_response(int timeout_ms = 10000) {
    std::string out;
    char buf[4096];
    for (;;) {
      const auto end = out.find("\r\n\r\n");
      if (end != std::string::npos) {
        const auto cl = out.find("Content-Length: ");
        const std::size_t length = cl != std::string::npos && cl < end ? std::stoul(out.substr(cl + 16)) : 0;
        if (out.size() >= end + 4 + length) return out;
      }
      if (!readable(timeout_ms)) return out;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  // Exactly n bytes (fewer if the server closes or nothing comes for timeout_ms).
  std::string read_bytes(std::size_t n, int timeout_ms = 10000) {
    std::string out;
    char buf[65536];
    while (out.size() < n && readable(timeout_ms)) {
      const ssize_t got = ::recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
      if (got <= 0) {
        eof_ = true;
        break;
      }
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }
  bool eof() const { return eof_; }

 private:
  int fd_ = -1;
  bool eof_ = false;
};

}  // namespace ebb::testing
