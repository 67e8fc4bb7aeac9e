#pragma once
// A Server-Sent Events stream read by a test (GET /hot-keys/stream): a GET
// held open, read message by message (blank-line separated), with a
// receive timeout so a missing message fails the test instead of hanging
// it; and a hot-key notice parsed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ebb::testing {

class SseReader {
 public:
  SseReader(std::uint16_t port, const std::string& target) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("connect failed");
    const std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
    if (::send(fd_, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) throw std::runtime_error("send failed");
    head_ = next("\r\n\r\n");
  }
  ~SseReader() { close(fd_); }
  const std::string& head() const { return head_; }
  // The next message ("event: hot\ndata: {...}"); "" when the server closed
  // the connection (or nothing came within 10 s: `closed()` tells which).
  std::string message() {
    for (;;) {
      std::string m = next("\n\n");
      if (m.empty() || m[0] != ':') return m;  // comments (heartbeats) are skipped
    }
  }
  bool closed() const { return closed_; }

 private:
  std::string next(const std::string& end) {
    for (;;) {
      if (auto at = buffer_.find(end); at != std::string::npos) {
        std::string out = buffer_.substr(0, at);
        buffer_.erase(0, at + end.size());
        return out;
      }
      char chunk[4096];
      const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) {
        closed_ = n == 0;
        return "";
      }
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  int fd_ = -1;
  std::string buffer_, head_;
  bool closed_ = false;
};

// "event: hot\ndata: {...}" -> (event, item_id, rate)
struct Notice {
  std::string event, item_id;
  double rate = 0, since = 0;
};
inline Notice parse_notice(const std::string& m) {
  Notice n;
  std::istringstream in(m);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("event: ")) n.event = line.substr(7);
    if (line.starts_with("data: ")) {
      simdjson::dom::parser p;
      simdjson::dom::element e;
      if (p.parse(line.substr(6)).get(e) == simdjson::SUCCESS && e.is_object()) {
        std::string_view id;
        if (e["item_id"].get(id) == simdjson::SUCCESS) n.item_id = id;
        if (e["rate"].get(n.rate) != simdjson::SUCCESS) n.rate = NAN;
        if (e["since"].get(n.since) != simdjson::SUCCESS) n.since = NAN;
      }
    }
  }
  return n;
}

}  // namespace ebb::testing
