#include "ebb/io/http_client.hpp"

#include <poll.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <stdexcept>

#include "ebb/core/duration.hpp"

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

namespace {

bool has_header(const HttpHeaders& headers, const char* name) {
  for (const auto& [k, v] : headers) {
    if (beast::iequals(k, name)) return true;
  }
  return false;
}

constexpr std::size_t kReadBytes = 64 * 1024;  // Beast's largest read

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

struct HttpClient::Impl {
  Impl(HttpEndpoint e, HttpClientOptions o) : endpoint(std::move(e)), options(o), resolver(ioc), stream(ioc) {}

  std::string where() const { return endpoint.host + ":" + std::to_string(endpoint.port); }

  // The blocking calls are asynchronous operations run to completion, so
  // the stream's deadline (expires_after) applies to them.
  void run() {
    ioc.restart();
    ioc.run();
  }

  void connect() {
    boost::system::error_code ec;
    const auto endpoints = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
    if (ec) throw HttpClientError("cannot resolve " + where() + ": " + ec.message());
    stream.expires_after(seconds(options.connect_timeout));
    stream.async_connect(endpoints, [&ec](boost::system::error_code e, const net::ip::tcp::endpoint&) { ec = e; });
    run();
    if (ec == beast::error::timeout) {
      throw HttpClientError("connecting to " + where() + " timed out after " + format_duration(options.connect_timeout) + " (connect timeout)");
    }
    if (ec) throw HttpClientError("cannot connect to " + where() + ": " + ec.message());
    connected = true;
  }

  // A kept-alive connection the server has closed since (idle timeout,
  // restart) is readable: end of stream, a reset, or an answer nobody asked
  // for (a 408). Found before writing, it is replaced and nothing was sent.
  bool unusable() {
    pollfd p{stream.socket().native_handle(), POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) != 0;
  }

  HttpEndpoint endpoint;
  HttpClientOptions options;
  net::io_context ioc;
  net::ip::tcp::resolver resolver;
  beast::tcp_stream stream;
  bool connected = false;
};

HttpClient::HttpClient(HttpEndpoint endpoint, HttpClientOptions options) : impl_(std::make_unique<Impl>(std::move(endpoint), options)) {}
HttpClient::~HttpClient() = default;

HttpResult HttpClient::request(const std::string& method, const std::string& target, const std::string& body,
                               const std::string& content_type, const HttpHeaders& headers) {
  auto& impl = *impl_;
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, impl.endpoint.host);
  req.set(http::field::user_agent, "ebb/0.1");
  if (!body.empty()) req.set(http::field::content_type, content_type);
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.keep_alive(true);
  req.prepare_payload();
  const bool may_resend = method == "GET" || method == "HEAD" || method == "OPTIONS" || has_header(headers, "Idempotency-Key");
  const std::string what = method + " " + target + " to " + impl.where();
  for (int attempt = 0;; ++attempt) {
    if (impl.connected && impl.unusable()) close();
    if (!impl.connected) impl.connect();
    // Sent and answered in one run of the event loop, under one deadline
    // (--request-timeout covers both): each run and each deadline armed
    // costs system calls, and a load generator's requests add up.
    boost::system::error_code write_ec, read_ec;
    bool written = false;
    std::size_t sent = 0;
    // Room to read into: Beast reads at most what the buffer has room for
    // (at least 512 bytes), and a parser moves body bytes out as they come,
    // so an empty buffer never grows: a 14 KB answer took 28 reads, each
    // with its own wait and timer.
    beast::flat_buffer buffer;
    buffer.reserve(kReadBytes);
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::uint64_t{1} << 32);
    parser.skip(method == "HEAD");  // a HEAD's answer has a Content-Length but no body
    impl.stream.expires_after(seconds(impl.options.request_timeout));
    http::async_write(impl.stream, req, [&](boost::system::error_code e, std::size_t n) {
      write_ec = e;
      sent = n;
      if (e) return;
      written = true;
      http::async_read(impl.stream, buffer, parser, [&read_ec](boost::system::error_code re, std::size_t) { read_ec = re; });
    });
    impl.run();
    if (!written) {
      close();
      if (write_ec == beast::error::timeout) {
        throw HttpClientError(what + " timed out after " + format_duration(impl.options.request_timeout) + " sending it (request timeout)");
      }
      if (attempt == 0 && (sent == 0 || may_resend)) continue;  // sent == 0: nothing of it reached the server
      throw HttpClientError(what + " failed while sending: " + write_ec.message());
    }
    if (read_ec) {
      close();
      if (read_ec == beast::error::timeout) {
        throw HttpClientError(what + " timed out: no answer within " + format_duration(impl.options.request_timeout) + " (request timeout)");
      }
      if (attempt == 0 && may_resend) continue;
      throw HttpClientError(impl.where() + " closed the connection without answering " + method + " " + target + " (" + read_ec.message() +
                            ")" + (may_resend ? "" : "; not sent again, as the server may have received it"));
    }
    auto& res = parser.get();
    HttpResult out;
    out.status = static_cast<int>(res.result_int());
    out.body = std::move(res.body());
    for (const auto& f : res) out.headers[std::string(f.name_string())] = std::string(f.value());
    if (!res.keep_alive()) close();
    return out;
  }
}

HttpResult HttpClient::stream(const std::string& target, const HttpHeaders& headers, const StreamReader& on_data) {
  auto& impl = *impl_;
  if (impl.connected) close();  // a fresh connection: this one ends with the stream
  impl.connect();
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, impl.endpoint.host);
  req.set(http::field::user_agent, "ebb/0.1");
  req.set(http::field::accept, "text/event-stream");
  for (const auto& [k, v] : headers) req.set(k, v);
  const std::string what = "GET " + target + " to " + impl.where();
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  boost::system::error_code ec;
  impl.stream.expires_after(seconds(impl.options.request_timeout));
  http::async_write(impl.stream, req, [&](boost::system::error_code e, std::size_t) {
    ec = e;
    if (!e) http::async_read_header(impl.stream, buffer, parser, [&ec](boost::system::error_code re, std::size_t) { ec = re; });
  });
  impl.run();
  if (ec) {
    close();
    throw HttpClientError(what + " failed: " + ec.message());
  }
  HttpResult out;
  out.status = static_cast<int>(parser.get().result_int());
  for (const auto& f : parser.get()) out.headers[std::string(f.name_string())] = std::string(f.value());
  if (out.status != 200) {
    // An error answer has a length: read it whole.
    http::async_read(impl.stream, buffer, parser, [&ec](boost::system::error_code re, std::size_t) { ec = re; });
    impl.run();
    out.body = std::move(parser.get().body());
    close();
    if (ec) throw HttpClientError(what + " failed while reading the answer: " + ec.message());
    return out;
  }
  // The stream's body has no length and no chunking: the bytes on the
  // connection after the header, until it closes.
  impl.stream.expires_never();
  bool more = true;
  if (buffer.size() > 0) {
    more = on_data(std::string_view(static_cast<const char*>(buffer.data().data()), buffer.size()));
    buffer.consume(buffer.size());
  }
  char chunk[16384];
  while (more) {
    std::size_t n = 0;
    impl.stream.async_read_some(net::buffer(chunk), [&](boost::system::error_code e, std::size_t got) {
      ec = e;
      n = got;
    });
    impl.run();
    if (n > 0) more = on_data(std::string_view(chunk, n));
    if (ec) break;
  }
  close();
  if (ec && ec != net::error::eof && ec != net::error::connection_reset) throw HttpClientError(what + ": the stream broke: " + ec.message());
  return out;
}

void HttpClient::close() {
  boost::system::error_code ignored;
  impl_->stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  impl_->stream.close();
  impl_->connected = false;
}

}  // namespace ebb::io
