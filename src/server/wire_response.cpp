#include "wire_response.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/status.hpp>
#include <charconv>

namespace ebb::server {

namespace {

void append_status_line(std::string& out, int status, unsigned version) {
  out += version >= 11 ? "HTTP/1.1 " : "HTTP/1.0 ";
  char digits[8];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, status).ptr);
  out += ' ';
  const auto reason = boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  out.append(reason.data(), reason.size());
  out += "\r\nServer: ebb/0.1\r\n";
}

void append_header(std::string& out, const std::string& name, const std::string& value) {
  out += name;
  out += ": ";
  out += value;
  out += "\r\n";
}

// The headers the transport writes itself: a handler's own would
// contradict them (two lengths, a keep-alive the transport does not keep).
bool transport_header(const std::string& name) {
  for (const char* own : {"content-length", "connection", "content-type", "server", "transfer-encoding"}) {
    if (boost::beast::iequals(name, own)) return true;
  }
  return false;
}

void append_handler_headers(std::string& out, const Response& r) {
  for (const auto& [name, value] : r.headers) {
    if (!transport_header(name)) append_header(out, name, value);
  }
}

}  // namespace

void append_wire_response(std::string& out, const Response& r, unsigned version, bool keep_alive, bool with_body) {
  const std::string_view body = body_of(r);
  append_status_line(out, r.status, version);
  if (!body.empty()) append_header(out, "Content-Type", r.content_type);
  append_handler_headers(out, r);
  // HTTP/1.1 keeps a connection unless told; HTTP/1.0 closes it unless told.
  if (version >= 11 && !keep_alive) out += "Connection: close\r\n";
  if (version < 11 && keep_alive) out += "Connection: keep-alive\r\n";
  const bool no_content = r.status < 200 || r.status == 204 || r.status == 304;
  if (!no_content) {
    out += "Content-Length: ";
    char digits[24];
    out.append(digits, std::to_chars(digits, digits + sizeof digits, body.size()).ptr);
    out += "\r\n";
  }
  out += "\r\n";
  if (!no_content && with_body) out += body;
}

std::string stream_head(const Response& r, unsigned version) {
  std::string out;
  append_status_line(out, r.status, version);
  append_header(out, "Content-Type", r.content_type);
  // X-Accel-Buffering: a proxy (nginx) must pass events on as they come.
  out += "Cache-Control: no-cache\r\nConnection: close\r\nX-Accel-Buffering: no\r\n";
  append_handler_headers(out, r);
  out += "\r\n";
  return out;
}

}  // namespace ebb::server
