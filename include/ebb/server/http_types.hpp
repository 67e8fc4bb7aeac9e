#pragma once
// What the API handlers see and return, independent of the HTTP library:
// the transport (server/http_server) converts to and from the wire.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::server {

struct Request {
  std::string method;        // "GET", "POST", ...
  std::string path;          // decoded path, without the query
  std::string raw_path;      // the same as sent (a route's {name} is decoded on its own: it may hold "%2F")
  std::multimap<std::string, std::string> query;  // decoded parameters
  std::string content_type;  // media type only, lower case ("application/json")
  std::string body;
  double received_at = 0;    // wall clock, Unix seconds
  std::multimap<std::string, std::string> headers;  // the few a handler reads (lower-case names)

  // The single value of a parameter; ApiError 400 when it is repeated.
  std::optional<std::string> param(const std::string& name) const;
  std::optional<std::string> header(const std::string& lower_case_name) const;
};

// A response that stays open (Server-Sent Events): the handler's producer
// sends text as things happen, from any thread.
class EventStream {
 public:
  virtual ~EventStream() = default;
  // Queues bytes for the client; false once the stream has closed (the
  // client left, read too slowly, or the server is shutting down). A
  // client too slow to take what it is sent is cut off; bytes sent with
  // `opening` (the state a stream starts with, however large) are not held
  // against it.
  virtual bool send(std::string bytes, bool opening = false) = 0;
  // Ends the stream (the connection closes once queued bytes are sent).
  virtual void close() = 0;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // A body held elsewhere (a cached answer, shared by every request that
  // gets it), sent in place of `body` when set: not copied into each
  // Response (only into the connection's write buffer).
  std::shared_ptr<const std::string> shared_body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string error_code;  // set by error_response(), for metrics and logs

  // Set by a handler whose answer is not ready yet (a batch waiting for its
  // fsync, an admin operation run off the event loop): the transport calls
  // it once with a function that sends the final response; that function
  // may be called from any thread.
  using Send = std::function<void(Response&&)>;
  std::function<void(Send)> deferred;

  // Set by a handler that answers with a stream (status 200, its
  // content_type, no length: the connection closes when it ends). The
  // transport sends the status and headers, then calls it once with the
  // stream; what it returns is kept alive while the stream is open (a
  // subscription, whose release stops the producer).
  std::function<std::shared_ptr<void>(std::shared_ptr<EventStream>)> stream;
};

// A failed request: the status, a stable snake_case code and a message that
// says what and where. Rendered as {"error": {"code", "message"}}.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string code, const std::string& message)
      : std::runtime_error(message), status_(status), code_(std::move(code)) {}
  int status() const noexcept { return status_; }
  const std::string& code() const noexcept { return code_; }

 private:
  int status_;
  std::string code_;
};

inline ApiError bad_request(const std::string& code, const std::string& message) { return ApiError(400, code, message); }

Response error_response(int status, const std::string& code, const std::string& message);

// Runs a handler body, turning its exceptions into error responses:
// ApiError and service::ServiceError keep their status and code. `format`
// writes one (error_response by default; forgettable's routes wrap it in
// their envelope).
using ErrorFormat = Response (*)(int status, const std::string& code, const std::string& message);
Response respond(const std::function<Response()>& body, ErrorFormat format = error_response);

Response json_response(int status, std::string body);
Response json_response(int status, std::shared_ptr<const std::string> body);
// The body as sent: shared_body's when set, else body.
inline std::string_view body_of(const Response& r) noexcept { return r.shared_body ? std::string_view(*r.shared_body) : std::string_view(r.body); }
Response empty_response(int status);  // 204s
Response text_response(int status, std::string content_type, std::string body);

// Splits "/top-k?namespace=a%20b&k=5" into a decoded path and parameters;
// an absolute-form target ("http://host:port/top-k?...") reads the same.
// Throws ApiError 400 on malformed percent-encoding.
void parse_target(std::string_view target, std::string& path, std::multimap<std::string, std::string>& query);
void parse_target(std::string_view target, std::string& path, std::string& raw_path, std::multimap<std::string, std::string>& query);
// Percent-decodes one path segment ('+' stays '+'); ApiError 400 when malformed.
std::string decode_path_segment(std::string_view segment);

}  // namespace ebb::server
