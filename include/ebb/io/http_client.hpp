#pragma once
// A blocking HTTP/1.1 client with keep-alive (Boost.Beast): `ebb send`,
// `ebb query`, the integration tests and the load generator use it. One
// client per thread.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ebb::io {

struct HttpResult {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
};

// "http://host:port" (port default 80) -> host and port; throws
// std::invalid_argument for anything else (https is not supported).
struct HttpEndpoint {
  std::string host;
  std::uint16_t port = 80;
};
HttpEndpoint parse_http_url(const std::string& url);

// Timeouts of one client, in seconds.
struct HttpClientOptions {
  double connect_timeout = 5;    // to open a connection (name resolution is the system resolver's)
  double request_timeout = 30;   // from sending a request to the end of its answer
};

// Extra request headers, e.g. {{"Idempotency-Key", "..."}}.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// A request that failed: the message names host:port, the request and what
// went wrong or timed out.
class HttpClientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HttpClient {
 public:
  explicit HttpClient(std::uint16_t port) : HttpClient(HttpEndpoint{"127.0.0.1", port}) {}
  explicit HttpClient(HttpEndpoint endpoint, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request and returns the answer, whatever its status. Throws
  // HttpClientError when there is no answer: the server cannot be reached,
  // a timeout, or the connection closed before the answer.
  //
  // A request is sent again (once) only when that cannot count it twice: a
  // kept-alive connection found closed before writing is replaced and
  // nothing was sent; a write that failed before its first byte left is
  // redone. After that, only GET, HEAD and OPTIONS, and requests carrying an
  // Idempotency-Key header, are resent; a POST that may have reached the
  // server is never resent (its batch could count twice). Timeouts are
  // never retried.
  HttpResult request(const std::string& method, const std::string& target, const std::string& body = "",
                     const std::string& content_type = "application/json", const HttpHeaders& headers = {});
  // A GET whose answer stays open (Server-Sent Events): on 200, calls
  // `on_data` with the body's bytes as they arrive (no deadline) until it
  // returns false or the server closes the stream; returns the status and
  // headers (body empty). Any other status returns as request() would.
  // The connection is not reused afterwards. Throws HttpClientError as
  // request() does.
  using StreamReader = std::function<bool(std::string_view)>;
  HttpResult stream(const std::string& target, const HttpHeaders& headers, const StreamReader& on_data);
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ebb::io
