#pragma once
// A real HTTP/1.1 client (Boost.Beast, blocking) with keep-alive, for the
// integration tests. One client per thread.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <optional>
#include <string>

namespace ebb::testing {

struct HttpResult {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
};

class HttpClient {
 public:
  explicit HttpClient(unsigned short port) : port_(port), stream_(ioc_) {}

  // Sends one request; reconnects if the server closed the connection.
  // Throws boost::system::system_error when the server cannot be reached.
  HttpResult request(const std::string& method, const std::string& target, const std::string& body = "",
                     const std::string& content_type = "application/json") {
    namespace http = boost::beast::http;
    for (int attempt = 0;; ++attempt) {
      try {
        if (!connected_) connect();
        http::request<http::string_body> req{http::string_to_verb(method), target, 11};
        req.set(http::field::host, "127.0.0.1");
        if (!body.empty()) req.set(http::field::content_type, content_type);
        req.body() = body;
        req.keep_alive(true);
        req.prepare_payload();
        http::write(stream_, req);
        boost::beast::flat_buffer buffer;
        http::response_parser<http::string_body> parser;
        parser.body_limit(1u << 30);
        http::read(stream_, buffer, parser);
        auto& res = parser.get();
        HttpResult out;
        out.status = static_cast<int>(res.result_int());
        out.body = res.body();
        for (const auto& f : res) out.headers[std::string(f.name_string())] = std::string(f.value());
        if (!res.keep_alive()) close();
        return out;
      } catch (const boost::system::system_error&) {
        close();
        if (attempt >= 1) throw;  // a stale keep-alive connection gets one retry
      }
    }
  }

  void close() {
    boost::system::error_code ignored;
    stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.close();
    connected_ = false;
  }

 private:
  void connect() {
    stream_.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_));
    connected_ = true;
  }

  unsigned short port_;
  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_;
  bool connected_ = false;
};

}  // namespace ebb::testing
