#include "ebb/server/http_types.hpp"

#include <new>

#include "ebb/core/error.hpp"
#include <cctype>

#include "ebb/io/json_writer.hpp"
#include "ebb/service/service_error.hpp"

namespace ebb::server {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size() || hex_value(s[i + 1]) < 0 || hex_value(s[i + 2]) < 0) {
        throw bad_request("bad_request", "malformed percent-encoding in the request target");
      }
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

// The absolute-form of a request target (RFC 9112 3.2.2), which clients
// send to proxies and servers must accept: "http://host:port/top-k?k=5" is
// "/top-k?k=5" once the scheme and authority are dropped (an empty path is
// "/"). Any other target comes back as it is.
std::string_view without_scheme_and_authority(std::string_view target, bool& absolute) {
  absolute = false;
  const std::size_t colon = target.find("://");
  if (colon == std::string_view::npos) return target;
  std::string scheme(target.substr(0, colon));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "http" && scheme != "https") return target;
  absolute = true;
  const std::string_view rest = target.substr(colon + 3);
  const std::size_t path = rest.find_first_of("/?");
  return path == std::string_view::npos ? std::string_view() : rest.substr(path);
}

}  // namespace

std::optional<std::string> Request::param(const std::string& name) const {
  auto [lo, hi] = query.equal_range(name);
  if (lo == hi) return std::nullopt;
  if (std::next(lo) != hi) throw bad_request("bad_parameter", name + ": given more than once");
  return lo->second;
}

std::optional<std::string> Request::header(const std::string& name) const {
  auto it = headers.find(name);
  if (it == headers.end()) return std::nullopt;
  return it->second;
}

Response respond(const std::function<Response()>& body, ErrorFormat format) {
  try {
    return body();
  } catch (const ApiError& e) {
    return format(e.status(), e.code(), e.what());
  } catch (const service::ServiceError& e) {
    Response r = format(service::http_status(e.kind()), e.code(), e.what());
    if (e.kind() == service::ErrorKind::overloaded || e.kind() == service::ErrorKind::unavailable) r.headers.emplace_back("Retry-After", "1");
    return r;
  } catch (const InvalidArgument& e) {
    return format(400, "invalid_argument", e.what());
  } catch (const std::bad_alloc&) {
    return format(503, "out_of_memory", "the server could not allocate memory for this request");
  } catch (const std::exception& e) {
    return format(500, "internal_error", e.what());
  }
}

Response error_response(int status, const std::string& code, const std::string& message) {
  io::JsonWriter w;
  w.begin_object().key("error").begin_object().key("code").value(code).key("message").value(message).end_object().end_object();
  Response r = text_response(status, "application/json", w.take());
  r.error_code = code;
  return r;
}

Response json_response(int status, std::string body) { return text_response(status, "application/json", std::move(body)); }

Response json_response(int status, std::shared_ptr<const std::string> body) {
  Response r = text_response(status, "application/json", "");
  r.shared_body = std::move(body);
  return r;
}

Response empty_response(int status) { return text_response(status, "", ""); }

Response text_response(int status, std::string content_type, std::string body) {
  Response r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.body = std::move(body);
  return r;
}

std::string decode_path_segment(std::string_view segment) { return decode(segment, false); }

void parse_target(std::string_view target, std::string& path, std::multimap<std::string, std::string>& query) {
  std::string raw_path;
  parse_target(target, path, raw_path, query);
}

void parse_target(std::string_view target, std::string& path, std::string& raw_path, std::multimap<std::string, std::string>& query) {
  bool absolute = false;
  target = without_scheme_and_authority(target, absolute);
  const std::size_t q = target.find('?');
  raw_path = target.substr(0, q);
  if (absolute && raw_path.empty()) raw_path.push_back('/');
  path = decode(target.substr(0, q), false);
  if (absolute && path.empty()) path.push_back('/');  // (not = "/": g++ 12 -O2 warns of a false overlap)
  query.clear();
  if (q == std::string_view::npos) return;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const std::size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    if (!pair.empty()) {
      const std::size_t eq = pair.find('=');
      query.emplace(decode(pair.substr(0, eq), true), eq == std::string_view::npos ? "" : decode(pair.substr(eq + 1), true));
    }
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
}

}  // namespace ebb::server
