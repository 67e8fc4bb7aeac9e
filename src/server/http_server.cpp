#include "ebb/server/http_server.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <csignal>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "ebb/core/buffer_reuse.hpp"
#include "ebb/core/clock.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/server/metrics.hpp"
#include "ebb/server/router.hpp"
#include "wire_response.hpp"

namespace ebb::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }

std::chrono::milliseconds ms(double seconds) { return std::chrono::milliseconds(static_cast<long long>(seconds * 1000)); }

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A request refused for its framing: 400 with this code and message, then
// the connection is closed.
struct FramingProblem {
  std::string code, message;
};

FramingProblem conflicting_framing() {
  return {"conflicting_framing", "Transfer-Encoding and Content-Length together make the body length ambiguous (RFC 9112 6.3); send one of them"};
}

// RFC 9112 6.3: the body length of a request must be unambiguous, or a
// proxy in front of us and this server may disagree about where the next
// request starts (request smuggling). Only "chunked" is supported as a
// transfer coding, alone, and never together with Content-Length.
std::optional<FramingProblem> framing_problem(const http::fields& fields, unsigned version) {
  const auto [first, last] = fields.equal_range(http::field::transfer_encoding);
  if (first == last) return std::nullopt;
  if (fields.count(http::field::content_length) > 0) return conflicting_framing();
  if (version < 11) return FramingProblem{"unsupported_transfer_encoding", "Transfer-Encoding is not allowed in an HTTP/1.0 request"};
  std::vector<std::string> codings;
  std::string given;
  for (auto it = first; it != last; ++it) {
    const std::string_view value = sv(it->value());
    given += (given.empty() ? "" : ", ") + std::string(value);
    std::size_t start = 0;
    while (start <= value.size()) {
      const std::size_t comma = std::min(value.find(',', start), value.size());
      std::string_view coding = value.substr(start, comma - start);
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
      if (!coding.empty()) codings.emplace_back(coding);  // the list syntax allows empty elements
      start = comma + 1;
    }
  }
  if (codings.size() != 1 || !beast::iequals(codings[0], "chunked")) {
    return FramingProblem{"unsupported_transfer_encoding",
                          "Transfer-Encoding: only \"chunked\" is supported, once and alone (got '" + given + "')"};
  }
  return std::nullopt;
}

std::string media_type(std::string_view header) {
  std::string out(header.substr(0, header.find(';')));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

// One io_context per thread, each run by exactly one thread: a session
// lives on one context for its whole life, so it needs no strand, the
// contexts need no internal locking, and executors are concrete types
// (no type-erased executor on every operation).
class HttpServer::Impl {
 public:
  class Session;
  using Executor = net::io_context::executor_type;
  using Stream = beast::basic_stream<tcp, Executor, beast::unlimited_rate_policy>;
  using Timer = net::basic_waitable_timer<std::chrono::steady_clock, net::wait_traits<std::chrono::steady_clock>, Executor>;

  Impl(HttpServerOptions o, const Router& r, Metrics& m, std::shared_ptr<spdlog::logger> l)
      : options(std::move(o)), router(r), metrics(m), log(std::move(l)) {
    const unsigned n = std::max(1u, options.threads);
    for (unsigned i = 0; i < n; ++i) {
      contexts.push_back(std::make_unique<net::io_context>(1));
      guards.emplace_back(contexts.back()->get_executor());
    }
    acceptor.emplace(contexts[0]->get_executor());
    signals.emplace(*contexts[0], SIGINT, SIGTERM);
    deadline.emplace(*contexts[0]);
    watchdog.emplace(*contexts[0]);
    accept_backoff.emplace(*contexts[0]);
  }

  net::io_context& main() { return *contexts[0]; }
  void accept();
  void on_accept_error(const beast::error_code& ec);
  void begin_shutdown();
  void finish();  // on the main context: let every context run out of work
  void add(Session* s, const std::shared_ptr<Session>& sp);
  void watch();  // the sessions' deadlines, checked a few times a second
  void remove(Session* s);

  HttpServerOptions options;
  const Router& router;
  Metrics& metrics;
  std::shared_ptr<spdlog::logger> log;
  std::vector<std::unique_ptr<net::io_context>> contexts;
  std::vector<net::executor_work_guard<Executor>> guards;
  std::size_t next_context = 0;  // round-robin for new sessions (main context only)
  std::optional<net::basic_socket_acceptor<tcp, Executor>> acceptor;
  std::optional<net::basic_signal_set<Executor>> signals;
  std::optional<Timer> deadline;
  std::optional<Timer> watchdog;
  // Accept errors (out of file descriptors, mostly) persist until something
  // frees resources: retrying at once spins a core and floods the log.
  // So the listener waits (10 ms doubling to 1 s, reset by a success) and
  // warns at most every kAcceptWarnEvery, with a count of the rest.
  std::optional<Timer> accept_backoff;
  std::chrono::milliseconds accept_delay{0};
  std::chrono::steady_clock::time_point last_accept_warning{};
  std::uint64_t accept_errors_unlogged = 0;
  std::atomic<bool> stopping{false};
  bool finished = false;
  std::function<void()> shutdown_callback;
  std::mutex sessions_mu;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;
};

// A deferred answer's way back (see Session::on_read): given while the
// handler's deferred call is still running, it is left here.
struct DeferredHandoff {
  std::mutex mu;
  bool in_call = true;
  std::optional<Response> answer;
};

class HttpServer::Impl::Session : public std::enable_shared_from_this<Session>, public EventStream {
 public:
  Session(net::basic_stream_socket<tcp, Executor>&& socket, Impl& server) : stream_(std::move(socket)), server_(server) {}
  ~Session() { server_.remove(this); }

  // The watchdog's question, from any thread: is this session's deadline past?
  bool overdue(std::int64_t now) const noexcept { return due_.load(std::memory_order_relaxed) <= now; }

  // On the session's thread: acts on a deadline that is (still) past.
  void check_due() {
    if (!overdue(steady_ns())) return;  // the operation finished, or a later deadline replaced it
    due_.store(kNever, std::memory_order_relaxed);
    if (phase_ == Phase::header || phase_ == Phase::body) {
      // Answered 408: cancel the read; shutting the receive side as well
      // ends it even if the read was between two reads of a composed
      // operation (nothing to cancel at this instant). Sending the 408
      // still works.
      timed_out_ = true;
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
      stream_.socket().shutdown(net::socket_base::shutdown_receive, ignored);
    } else {
      close_socket();  // idle past --idle-timeout, a reader too slow to take our answer, or a linger's end
    }
  }

  void executor_post_check() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->check_due(); });
  }

  void start() {
    server_.add(this, shared_from_this());
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

  // On shutdown: a connection waiting for its next request is closed now;
  // one with a request in hand closes after answering it.
  void close_if_idle() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->close_socket();
    });
  }

 private:
  // Four deadlines: a keep-alive connection may wait --idle-timeout for the
  // first byte of its next request (then it is closed quietly); from that
  // byte, the whole header must arrive within --header-timeout (a client
  // trickling a byte a second must not hold a connection for the idle
  // timeout); then the body within --request-timeout (both answered 408);
  // and our answer must be taken within --request-timeout (else closed).
  //
  // A deadline is a time stored in the session, checked by the server's
  // watchdog a few times a second: no timer is armed and cancelled per
  // request (each of those was a timerfd_settime system call, about a
  // quarter of the system calls of a small request).
  enum class Phase : std::uint8_t { idle, header, body, write, linger };
  static constexpr std::int64_t kNever = INT64_MAX;

  void set_due(Phase phase, double seconds) {
    phase_ = phase;
    // Past ~30 years (durations go to 11574074d) a deadline is never.
    due_.store(seconds < 1e9 ? steady_ns() + static_cast<std::int64_t>(seconds * 1e9) : kNever, std::memory_order_relaxed);
  }
  void clear_due() { due_.store(kNever, std::memory_order_relaxed); }

  // Pipelining: requests already in the buffer are parsed and answered
  // at once, their answers gathered in answers_; they are written when the
  // session must wait on the socket (no complete request left), before an
  // answer that comes later (deferred, streamed, 100 Continue), or every
  // kMaxGathered answers. One write for a round of pipelined requests, not
  // one each: on this VM a write and the wake-up it causes cost more than
  // a small request's work. Answers stay in request order throughout.
  //
  // The rule that keeps a client from waiting forever: never wait on the
  // socket with answers unwritten (every wait goes through flush_then).
  void read() {
    // A connection closed meanwhile (the client left while an answer was
    // deferred, a write timed out) serves nothing more of its buffer.
    if (stream_closed_.load(std::memory_order_relaxed)) return;
    // Shutting down: a request already here (pipelined) is still answered,
    // with Connection: close (reply() sees the shutdown), so the client
    // knows what it must resend; with none here the connection ends now.
    if (server_.stopping && buffer_.size() == 0) return flush_then([this] { linger_close(); });
    parser_.emplace();
    parser_->body_limit(server_.options.max_body_bytes);
    parser_->header_limit(64 * 1024);
    if (buffer_.size() > 0) return read_header();  // the next request (pipelined) has begun
    flush_then([this] {
      if (!ready_to_wait()) return;
      // A large body's buffer is not kept by an idle connection.
      if (buffer_.capacity() > kIdleBufferBytes) buffer_.shrink_to_fit();
      set_due(Phase::idle, server_.options.idle_timeout);
      stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
        self->clear_due();
        if (ec) return self->close_socket();  // idle timeout, the client left, or shutdown
        self->buffer_.commit(n);
        self->read_header();
      });
    });
  }

  void read_header() {
    timed_out_ = false;
    deadline_part_ = "header";
    deadline_option_ = "--header-timeout";
    deadline_seconds_ = server_.options.header_timeout;
    // RFC 9112 2.2: empty lines before a request line are ignored (a
    // client may end a body with a stray CRLF).
    while (buffer_.size() > 0) {
      const char first = *static_cast<const char*>(buffer_.data().data());
      if (first != '\r' && first != '\n') break;
      buffer_.consume(1);
    }
    // A whole header in the buffer needs no wait. (With need_more, put()
    // may still have consumed the start line and whole fields: what it
    // returns is always consumed.)
    beast::error_code ec = http::error::need_more;
    if (buffer_.size() > 0) buffer_.consume(parser_->put(buffer_.data(), ec));
    if (ec != http::error::need_more) return on_header(ec);
    flush_then([this] {
      if (!ready_to_wait()) return;
      set_due(Phase::header, deadline_seconds_);
      // The header first: a client that sent "Expect: 100-continue" (curl
      // does for bodies over 1 MB) waits for our go-ahead before sending the body.
      http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        self->clear_due();
        self->on_header(ec);
      });
    });
  }

  // Before a wait for the client's bytes, with the answers written: from
  // here a shutdown closes the connection (close_if_idle), and one that
  // began while the answers were being written closes it now (false: do
  // not wait).
  bool ready_to_wait() {
    busy_ = false;
    if (!server_.stopping) return true;
    linger_close();  // what the client sent meanwhile must not reset the answers away
    return false;
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read(ec);
    auto& req = parser_->get();
    if (auto problem = framing_problem(req, req.version())) return refuse_framing(*problem);
    // HTTP/1.0 has no 1xx answers (RFC 9110 10.1.1): its Expect is ignored.
    if (req.version() >= 11 && beast::iequals(req[http::field::expect], "100-continue")) {
      return flush_then([this] {
        continue_ = {http::status::continue_, parser_->get().version()};
        set_due(Phase::write, server_.options.request_timeout);
        http::async_write(stream_, continue_, [self = shared_from_this()](beast::error_code wec, std::size_t) {
          self->clear_due();
          if (wec) return self->close_socket();
          self->read_body();
        });
      });
    }
    read_body();
  }

  void read_body() {
    if (parser_->is_done()) return on_read({});  // no body, or all of it came with the header
    timed_out_ = false;
    deadline_part_ = "body";
    deadline_option_ = "--request-timeout";
    deadline_seconds_ = server_.options.request_timeout;
    if (const auto length = parser_->content_length()) {
      // Slack past the body lets a block-wise JSON parser read it in place
      // (see parse_event_body); Beast reserves the exact length otherwise.
      parser_->get().body().reserve(*length + kBodySlackBytes);
    }
    // The part of the body already in the buffer (all of it, for a
    // pipelined request) is parsed without a wait.
    beast::error_code ec;
    while (buffer_.size() > 0 && !parser_->is_done() && !ec) {
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (used == 0) break;
    }
    if (ec == http::error::need_more) ec = {};
    if (ec || parser_->is_done()) return on_read(ec);
    flush_then([this] {
      // A request whose header is in is in progress: a shutdown lets it
      // finish (its body has --request-timeout to come) and answers it.
      busy_ = true;
      set_due(Phase::body, deadline_seconds_);
      // Room for the body (up to 64 KiB a read, Beast's most): without it
      // each read takes what the 4 KiB buffer has left, and a 30 KB batch
      // costs eight reads and as many waits.
      if (const auto length = parser_->content_length()) {
        if (*length > buffer_.size()) buffer_.reserve(std::min<std::uint64_t>(*length, kBodyReadBytes));
      }
      http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        self->clear_due();
        self->on_read(ec);
      });
    });
  }

  // Beast stops at some framing conflicts itself (a Transfer-Encoding after
  // Content-Length, a Content-Length after chunked, chunked twice); those
  // get the same answer as the ones framing_problem() finds.
  std::optional<FramingProblem> framing_error(beast::error_code ec) {
    const auto& req = parser_->get();
    const bool has_length = req.count(http::field::content_length) > 0, has_coding = req.count(http::field::transfer_encoding) > 0;
    if (ec == http::error::bad_transfer_encoding) {
      if (has_length) return conflicting_framing();
      return FramingProblem{"unsupported_transfer_encoding", "Transfer-Encoding: chunked may be applied only once"};
    }
    if (ec == http::error::bad_content_length && has_coding) return conflicting_framing();
    return std::nullopt;
  }

  void refuse_framing(const FramingProblem& problem) {
    busy_ = true;
    reply(error_response(400, problem.code, problem.message), "unmatched", std::chrono::steady_clock::now(), 11, true);
  }

  void on_read(beast::error_code ec) {
    const auto started = std::chrono::steady_clock::now();
    head_request_ = false;
    if (ec && timed_out_) {
      busy_ = true;
      return reply(error_response(408, "request_timeout", std::string("the request ") + deadline_part_ + " did not arrive within " +
                                                              format_duration(deadline_seconds_) + " (" + deadline_option_ + ")"),
                   "unmatched", started, 11, true);
    }
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset || ec == net::error::eof || ec == net::error::bad_descriptor) {
      return close_socket();
    }
    busy_ = true;
    if (ec == http::error::body_limit) {
      return reply(error_response(413, "body_too_large", "request body exceeds " + std::to_string(server_.options.max_body_bytes) +
                                                             " bytes (--max-body-bytes)"),
                   "unmatched", started, 11, true);
    }
    if (ec) {
      if (auto problem = framing_error(ec)) return refuse_framing(*problem);
      return reply(error_response(400, "malformed_http", "malformed HTTP request: " + ec.message()), "unmatched", started, 11, true);
    }
    // `req` lives in parser_, which reply() -> read() replaces for the next
    // request: it is read only before those calls (their arguments).
    auto& req = parser_->get();
    head_request_ = req.method() == http::verb::head;
    Request request;
    request.method = std::string(sv(req.method_string()));
    request.received_at = wall_clock_now();
    try {
      parse_target(sv(req.target()), request.path, request.raw_path, request.query);
    } catch (const ApiError& e) {
      return reply(error_response(e.status(), e.code(), e.what()), "unmatched", started, req.version(), true);
    }
    request.content_type = media_type(sv(req[http::field::content_type]));
    if (auto key = req.find("Idempotency-Key"); key != req.end()) request.headers.emplace("idempotency-key", std::string(sv(key->value())));
    if (auto auth = req.find(http::field::authorization); auth != req.end()) request.headers.emplace("authorization", std::string(sv(auth->value())));
    if (auto tag = req.find(http::field::if_none_match); tag != req.end()) request.headers.emplace("if-none-match", std::string(sv(tag->value())));
    request.body = std::move(req.body());
    auto result = server_.router.dispatch(request);
    if (result.response.deferred) {
      // The answer comes later (e.g. after the batch's fsync), possibly from
      // another thread: it is handed back to this session's event loop. An
      // answer given during the call itself (--fsync off or interval: it is
      // durable as soon as it is logged) is answered in place, gathered
      // with the others, at no cost of a hand-off and a write of its own.
      auto handoff = std::make_shared<DeferredHandoff>();
      std::move(result.response.deferred)([self = shared_from_this(), handoff, route = result.route, started, version = req.version(),
                                           close = !req.keep_alive(), method = request.method, path = request.path,
                                           bytes_in = request.body.size()](Response&& r) {
        // A failed persist is already logged once by the log; per batch it would flood a full disk.
        self->log_request(method, path, bytes_in, r, /*warn_on_5xx=*/false);
        {
          std::lock_guard lock(handoff->mu);
          if (handoff->in_call) {
            handoff->answer = std::move(r);
            return;
          }
        }
        net::post(self->stream_.get_executor(), [self, r = std::move(r), route, started, version, close]() mutable {
          self->reply(std::move(r), route, started, version, close);
        });
      });
      std::optional<Response> answer;
      {
        std::lock_guard lock(handoff->mu);
        handoff->in_call = false;
        answer = std::move(handoff->answer);
      }
      if (answer) return reply(std::move(*answer), result.route, started, req.version(), !req.keep_alive());
      flush_then(nullptr);  // the answers before it go now, not after its fsync
      return;
    }
    log_request(request.method, request.path, request.body.size(), result.response);
    if (result.response.stream) {
      streamed_ = std::move(result.response);
      return flush_then([this, route = result.route, started, version = req.version()] {
        // The session was not idle while the answers before it were
        // written: a shutdown that began meanwhile skipped it.
        if (server_.stopping) return close_socket();
        start_stream(std::exchange(streamed_, Response{}), route, started, version);
      });
    }
    reply(std::move(result.response), result.route, started, req.version(), !req.keep_alive());
  }

 public:
  // EventStream, from any thread: the bytes go to the session's loop.
  bool send(std::string bytes, bool opening) override {
    if (stream_closed_.load(std::memory_order_relaxed)) return false;
    net::post(stream_.get_executor(),
              [self = shared_from_this(), bytes = std::move(bytes), opening]() mutable { self->enqueue(std::move(bytes), !opening); });
    return true;
  }
  void close() override {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->end_after_write_ = true;
      if (!self->writing_) self->close_socket();
    });
  }

 private:
  // A stream (Server-Sent Events): the status line and headers, then
  // whatever the producer sends until it ends it, the client leaves, the
  // client reads too slowly (more than kMaxStreamQueue bytes waiting, or a
  // write not taken within --request-timeout), or the server shuts down.
  // The connection is not reused: without a length, its close ends the body.
  void start_stream(Response&& r, const std::string& route, std::chrono::steady_clock::time_point started, unsigned version) {
    busy_ = false;  // a shutdown closes it as it closes an idle connection
    std::string head = stream_head(r, version);
    server_.metrics.observe_request(route, r.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    enqueue(std::move(head), false);
    try {
      stream_keep_ = r.stream(std::static_pointer_cast<EventStream>(shared_from_this()));
    } catch (const std::exception& e) {
      server_.log->warn("stream on route {} failed to start: {}", route, e.what());
      end_after_write_ = true;
    }
    watch_for_close();
  }

  // `counted` bytes count against kMaxStreamQueue; a client already that
  // far behind is cut off (so one message larger than the limit still goes).
  void enqueue(std::string bytes, bool counted = true) {
    if (stream_closed_.load(std::memory_order_relaxed)) return;
    if (counted && queued_bytes_ > kMaxStreamQueue) {
      server_.log->info("closing a stream: the client has not taken {} bytes", queued_bytes_);
      return close_socket();
    }
    if (counted) queued_bytes_ += bytes.size();
    out_.push_back({std::move(bytes), counted});
    if (!writing_) write_next();
  }

  void write_next() {
    if (out_.empty()) {
      writing_ = false;
      if (end_after_write_) close_socket();
      return;
    }
    writing_ = true;
    set_due(Phase::write, server_.options.request_timeout);
    net::async_write(stream_, net::buffer(out_.front().first), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->clear_due();
      if (self->out_.front().second) self->queued_bytes_ -= self->out_.front().first.size();
      self->out_.pop_front();
      if (ec) return self->close_socket();
      self->write_next();
    });
  }

  // A stream's client sends nothing more; a read that ends means it left
  // (anything it does send is dropped).
  void watch_for_close() {
    stream_.async_read_some(buffer_.prepare(1024), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->close_socket();
      self->buffer_.clear();
      self->watch_for_close();
    });
  }

  // Every answer, deferred or not: debug logs each request, a 5xx is a warning.
  void log_request(const std::string& method, const std::string& path, std::size_t bytes_in, const Response& r, bool warn_on_5xx = true) const {
    if (server_.log->should_log(spdlog::level::debug)) {
      server_.log->debug("request method={} path={} status={} bytes_in={} bytes_out={}", method, path, r.status, bytes_in, body_of(r).size());
    }
    if (warn_on_5xx && r.status >= 500) server_.log->warn("request failed method={} path={} status={} error={}", method, path, r.status, r.body);
  }

  // Gathers the answer, then goes on to the next request (see read()).
  void reply(Response&& r, const std::string& route, std::chrono::steady_clock::time_point started, unsigned version, bool close_after) {
    const bool close_now = close_after || server_.stopping;
    if (!r.error_code.empty()) server_.metrics.count_error(r.error_code);
    append_wire_response(answers_, r, version, !close_now, /*with_body=*/!head_request_);
    ++gathered_;
    server_.metrics.observe_request(route, r.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    if (close_now) return flush_then([this] { linger_close(); });
    // The cap also bounds the recursion (reply -> read -> ... -> reply)
    // while the buffer holds requests.
    if (gathered_ >= kMaxGathered || answers_.size() >= kMaxGatheredBytes) return flush_then([this] { read(); });
    read();
  }

  // Writes the gathered answers, then runs `next` (at once when there are
  // none). `next` captures the session raw: while a write is in flight its
  // handler keeps the session alive, and otherwise `next` runs here. One
  // chain of work runs per session, so one `next` waits at a time; a
  // deferred answer's flush (nullptr) is the only one replaced, by the
  // chain that its answer resumes.
  void flush_then(std::function<void()> next) {
    assert(!after_flush_ || !next);  // one chain: only a deferred answer's flush is replaced
    after_flush_ = std::move(next);
    if (!flushing_) write_answers();
  }

  void write_answers() {
    if (answers_.empty()) {
      flushing_ = false;
      if (auto next = std::exchange(after_flush_, nullptr)) next();
      return;
    }
    flushing_ = true;
    gathered_ = 0;
    sending_.swap(answers_);
    answers_.clear();
    set_due(Phase::write, server_.options.request_timeout);
    net::async_write(stream_, net::buffer(sending_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->clear_due();
      // A large answer's buffer is not kept by the connection.
      clear_keeping_at_most(self->sending_, kIdleBufferBytes);
      if (ec) {
        self->flushing_ = false;
        self->after_flush_ = nullptr;
        return self->close_socket();
      }
      self->write_answers();
    });
  }

  // Closing with the client's pipelined bytes unread makes the kernel
  // reset the connection, which discards answers still on their way to it
  // (RFC 9112 9.6). So the sending side is shut first (the client reads
  // every answer, then the end), and what it still sends is read and
  // dropped until it closes too or kLingerSeconds pass.
  void linger_close() {
    if (stream_closed_.load(std::memory_order_relaxed)) return;
    beast::error_code ignored;
    stream_.socket().shutdown(net::socket_base::shutdown_send, ignored);
    set_due(Phase::linger, kLingerSeconds);
    drain();
  }

  void drain() {
    buffer_.clear();
    stream_.socket().async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (!ec) return self->drain();
      self->clear_due();
      self->close_socket();
    });
  }

  void close_socket() {
    stream_closed_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(net::socket_base::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  static constexpr std::size_t kIdleBufferBytes = 16 * 1024, kBodyReadBytes = 64 * 1024, kBodySlackBytes = 64;
  static constexpr std::size_t kMaxStreamQueue = 1 << 20;
  static constexpr std::size_t kMaxGathered = 32, kMaxGatheredBytes = 256 * 1024;
  static constexpr double kLingerSeconds = 2;

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::empty_body> continue_;
  Impl& server_;
  // Pipelining (see read()): answers gathered, the bytes being written, what runs after.
  std::string answers_, sending_;
  std::size_t gathered_ = 0;
  bool flushing_ = false;
  std::function<void()> after_flush_;
  Response streamed_;  // a streamed answer, while the answers before it are written
  bool busy_ = false;
  bool timed_out_ = false;
  bool head_request_ = false;  // the answer being made is to a HEAD: no body
  // Streaming (see start_stream).
  bool writing_ = false, end_after_write_ = false;
  std::atomic<bool> stream_closed_{false};
  std::deque<std::pair<std::string, bool>> out_;  // bytes, counted against kMaxStreamQueue
  std::size_t queued_bytes_ = 0;
  std::shared_ptr<void> stream_keep_;
  Phase phase_ = Phase::idle;
  std::atomic<std::int64_t> due_{kNever};  // steady_ns() past which phase_ has timed out
  const char* deadline_part_ = "";
  const char* deadline_option_ = "";
  double deadline_seconds_ = 0;
};

void HttpServer::Impl::add(Session* s, const std::shared_ptr<Session>& sp) {
  std::lock_guard lock(sessions_mu);
  sessions.emplace(s, sp);
}

void HttpServer::Impl::remove(Session* s) {
  std::lock_guard lock(sessions_mu);
  sessions.erase(s);
  if (stopping && sessions.empty()) {
    net::post(main(), [this] {
      deadline->cancel();
      finish();
    });
  }
}

void HttpServer::Impl::watch() {
  // A quarter of the shortest timeout (10 ms to 250 ms): a deadline fires
  // at most that late.
  const double shortest = std::min({options.idle_timeout, options.header_timeout, options.request_timeout});
  watchdog->expires_after(std::clamp(ms(shortest / 4), std::chrono::milliseconds(10), std::chrono::milliseconds(250)));
  watchdog->async_wait([this](beast::error_code ec) {
    if (ec || finished) return;
    const std::int64_t now = steady_ns();
    std::vector<std::shared_ptr<Session>> overdue;
    {
      std::lock_guard lock(sessions_mu);
      // The deadline is read through the raw pointer (a session is alive
      // while it is in the map: its destructor erases it under this lock),
      // and only an overdue session is locked. Locking every one would be
      // a bug: the last reference dropped here runs ~Session, which takes
      // sessions_mu again.
      for (auto& [p, w] : sessions) {
        if (!p->overdue(now)) continue;
        if (auto s = w.lock()) overdue.push_back(std::move(s));
      }
    }
    for (auto& s : overdue) s->executor_post_check();
    watch();
  });
}

void HttpServer::Impl::accept() {
  auto& target = *contexts[next_context];
  next_context = (next_context + 1) % contexts.size();
  acceptor->async_accept(target.get_executor(), [this](beast::error_code ec, net::basic_stream_socket<tcp, Executor> socket) {
    if (!ec) {
      accept_delay = std::chrono::milliseconds(0);
      socket.set_option(tcp::no_delay(true), ec);
      std::make_shared<Session>(std::move(socket), *this)->start();
    } else if (ec != net::error::operation_aborted) {
      return on_accept_error(ec);
    }
    if (acceptor->is_open() && !stopping) accept();
  });
}

void HttpServer::Impl::on_accept_error(const beast::error_code& ec) {
  metrics.count_accept_error();
  if (stopping || !acceptor->is_open()) return;
  // A client that reset its connection before we took it: nothing is short
  // of anything, so take the next one at once.
  if (ec == net::error::connection_aborted) {
    log->debug("accept: {}", ec.message());
    return accept();
  }
  constexpr std::chrono::milliseconds kFirstDelay(10), kMaxDelay(1000);
  constexpr std::chrono::seconds kAcceptWarnEvery(5);
  accept_delay = accept_delay.count() == 0 ? kFirstDelay : std::min(accept_delay * 2, kMaxDelay);
  const auto now = std::chrono::steady_clock::now();
  if (last_accept_warning == std::chrono::steady_clock::time_point{} || now - last_accept_warning >= kAcceptWarnEvery) {
    if (accept_errors_unlogged > 0) {
      log->warn("accept failed: {}; retrying in {} ms ({} more failures since the last warning were not logged)", ec.message(),
                accept_delay.count(), accept_errors_unlogged);
    } else {
      log->warn("accept failed: {}; retrying in {} ms", ec.message(), accept_delay.count());
    }
    last_accept_warning = now;
    accept_errors_unlogged = 0;
  } else {
    ++accept_errors_unlogged;
  }
  accept_backoff->expires_after(accept_delay);
  accept_backoff->async_wait([this](beast::error_code wec) {
    if (wec || stopping || !acceptor->is_open()) return;
    accept();
  });
}

void HttpServer::Impl::finish() {
  if (finished) return;
  finished = true;
  watchdog->cancel();
  for (auto& g : guards) g.reset();
}

void HttpServer::Impl::begin_shutdown() {
  net::post(main(), [this] {
    if (stopping.exchange(true)) return;
    log->info("shutting down: finishing in-flight requests (timeout {}s)", options.shutdown_timeout);
    if (shutdown_callback) shutdown_callback();
    beast::error_code ignored;
    acceptor->close(ignored);
    accept_backoff->cancel();
    signals->cancel(ignored);
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard lock(sessions_mu);
      for (auto& [_, w] : sessions) {
        if (auto s = w.lock()) live.push_back(std::move(s));
      }
    }
    for (auto& s : live) s->close_if_idle();
    if (live.empty()) return finish();
    deadline->expires_after(ms(options.shutdown_timeout));
    deadline->async_wait([this](beast::error_code ec) {
      if (ec == net::error::operation_aborted) return;
      log->warn("shutdown timeout: closing the remaining connections");
      for (auto& c : contexts) c->stop();
    });
  });
}

HttpServer::HttpServer(HttpServerOptions options, const Router& router, Metrics& metrics, std::shared_ptr<spdlog::logger> log)
    : impl_(std::make_unique<Impl>(std::move(options), router, metrics, std::move(log))) {}

HttpServer::~HttpServer() = default;

void HttpServer::listen() {
  beast::error_code ec;
  const auto address = net::ip::make_address(impl_->options.bind, ec);
  if (ec) throw std::runtime_error("--bind: '" + impl_->options.bind + "' is not an IP address: " + ec.message());
  const tcp::endpoint endpoint(address, impl_->options.port);
  auto& a = *impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on " + impl_->options.bind + ":" + std::to_string(impl_->options.port) + ": " + ec.message());
  }
}

std::uint16_t HttpServer::port() const { return impl_->acceptor->local_endpoint().port(); }

void HttpServer::on_shutdown(std::function<void()> callback) { impl_->shutdown_callback = std::move(callback); }

void HttpServer::shutdown() { impl_->begin_shutdown(); }

void HttpServer::run() {
  auto& impl = *impl_;
  std::signal(SIGPIPE, SIG_IGN);
  impl.signals->async_wait([&impl](beast::error_code ec, int signo) {
    if (ec) return;
    impl.log->info("received {}", signo == SIGTERM ? "SIGTERM" : "SIGINT");
    impl.begin_shutdown();
  });
  impl.accept();
  impl.watch();
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < impl.contexts.size(); ++i) threads.emplace_back([&impl, i] { impl.contexts[i]->run(); });
  impl.contexts[0]->run();
  for (auto& t : threads) t.join();
}

}  // namespace ebb::server
