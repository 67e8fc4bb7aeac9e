#pragma once
// The HTTP/1.1 transport (Boost.Beast over Asio): a listener, keep-alive
// sessions, one event loop per thread (a session stays on one). It turns
// wire requests into server::Request, asks the Router, and records every
// request in Metrics. Graceful shutdown on SIGINT/SIGTERM: stop accepting,
// finish the requests being handled, close idle connections, return from
// run() (or stop hard after the shutdown timeout).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace spdlog {
class logger;
}

namespace ebb::server {

class Router;
class Metrics;

struct HttpServerOptions {
  std::string bind = "127.0.0.1";
  std::uint16_t port = 8080;  // 0: an ephemeral port (see port())
  unsigned threads = 2;
  std::size_t max_body_bytes = 16u << 20;
  double idle_timeout = 60;       // seconds a keep-alive connection may wait for the first byte of a request
  double header_timeout = 10;     // seconds from that byte to the end of the request header (408)
  double request_timeout = 30;    // seconds to receive the body once the header is in (408); also to send an answer
  double shutdown_timeout = 30;   // seconds to finish in-flight requests
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, const Router& router, Metrics& metrics, std::shared_ptr<spdlog::logger> log);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; throws std::runtime_error with the address and reason.
  void listen();
  std::uint16_t port() const;
  // Serves until shutdown; blocks (using `threads` threads, this one included).
  void run();
  // Starts a graceful shutdown; safe from any thread. Signals call it too.
  void shutdown();
  // Called once when shutdown begins (e.g. to mark the server not ready).
  void on_shutdown(std::function<void()> callback);

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ebb::server
