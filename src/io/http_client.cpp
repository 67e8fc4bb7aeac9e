#include "ebb/io/http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>

namespace ebb::io {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

HttpEndpoint parse_http_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) throw std::invalid_argument("url must start with http:// (got '" + url + "')");
  std::string rest = url.substr(kScheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.find('/') != std::string::npos) throw std::invalid_argument("url must be http://HOST[:PORT] (got '" + url + "')");
  HttpEndpoint e;
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) {
    e.host = rest;
    return e;
  }
  e.host = rest.substr(0, colon);
  const std::string port = rest.substr(colon + 1);
  try {
    const long p = std::stol(port);
    if (p < 1 || p > 65535 || std::to_string(p) != port) throw std::out_of_range("port");
    e.port = static_cast<std::uint16_t>(p);
  } catch (const std::exception&) {
    throw std::invalid_argument("url has a bad port '" + port + "'");
  }
  return e;
}

struct HttpClient::Impl {
  explicit Impl(HttpEndpoint e) : endpoint(std::move(e)), resolver(ioc), stream(ioc) {}
  void connect() {
    stream.connect(resolver.resolve(endpoint.host, std::to_string(endpoint.port)));
    connected = true;
  }
  HttpEndpoint endpoint;
  net::io_context ioc;
  net::ip::tcp::resolver resolver;
  beast::tcp_stream stream;
  bool connected = false;
};

HttpClient::HttpClient(HttpEndpoint endpoint) : impl_(std::make_unique<Impl>(std::move(endpoint))) {}
HttpClient::~HttpClient() = default;

HttpResult HttpClient::request(const std::string& method, const std::string& target, const std::string& body,
                               const std::string& content_type, const Headers& headers) {
  for (int attempt = 0;; ++attempt) {
    try {
      if (!impl_->connected) impl_->connect();
      http::request<http::string_body> req{http::string_to_verb(method), target, 11};
      req.set(http::field::host, impl_->endpoint.host);
      req.set(http::field::user_agent, "ebb/0.1");
      if (!body.empty()) req.set(http::field::content_type, content_type);
      for (const auto& [name, value] : headers) req.set(name, value);
      req.body() = body;
      req.keep_alive(true);
      req.prepare_payload();
      http::write(impl_->stream, req);
      beast::flat_buffer buffer;
      http::response_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t{1} << 32);
      http::read(impl_->stream, buffer, parser);
      auto& res = parser.get();
      HttpResult out;
      out.status = static_cast<int>(res.result_int());
      out.body = std::move(res.body());
      for (const auto& f : res) out.headers[std::string(f.name_string())] = std::string(f.value());
      if (!res.keep_alive()) close();
      return out;
    } catch (const boost::system::system_error&) {
      close();
      if (attempt >= 1) throw;  // a stale keep-alive connection gets one retry
    }
  }
}

void HttpClient::close() {
  boost::system::error_code ignored;
  impl_->stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  impl_->stream.close();
  impl_->connected = false;
}

}  // namespace ebb::io
