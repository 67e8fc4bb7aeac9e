#pragma once
// A blocking HTTP/1.1 client with keep-alive (Boost.Beast): `ebb send`,
// `ebb query`, the integration tests and the load generator use it. One
// client per thread.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
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

class HttpClient {
 public:
  explicit HttpClient(std::uint16_t port) : HttpClient(HttpEndpoint{"127.0.0.1", port}) {}
  explicit HttpClient(HttpEndpoint endpoint);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request; a connection the server closed is reopened once.
  // Throws boost::system::system_error (a std::runtime_error) when the
  // server cannot be reached.
  using Headers = std::vector<std::pair<std::string, std::string>>;
  HttpResult request(const std::string& method, const std::string& target, const std::string& body = "",
                     const std::string& content_type = "application/json", const Headers& headers = {});
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ebb::io
