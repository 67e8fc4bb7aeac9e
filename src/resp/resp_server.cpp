#include "ebb/resp/resp_server.hpp"

#include <spdlog/spdlog.h>

#include <deque>
#include <boost/asio.hpp>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ebb/core/buffer_reuse.hpp"
#include "ebb/resp/reply.hpp"
#include "input_buffer.hpp"

namespace ebb::resp {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// One io_context per thread (as the HTTP server): a session lives on one.
class RespServer::Impl {
 public:
  class Session;
  Impl(RespServerOptions o, Commands& c, std::shared_ptr<spdlog::logger> l)
      : options(std::move(o)), commands(c), log(std::move(l)), blocking(std::max(1u, options.blocking_threads)), lock_waiters(2) {
    const unsigned n = std::max(1u, options.threads);
    for (unsigned i = 0; i < n; ++i) {
      contexts.push_back(std::make_unique<net::io_context>(1));
      guards.emplace_back(contexts.back()->get_executor());
    }
    acceptor.emplace(*contexts[0]);
  }
  void accept();
  void add(Session* s, const std::shared_ptr<Session>& sp) {
    std::lock_guard lock(sessions_mu);
    sessions.emplace(s, sp);
  }
  void remove(Session* s) {
    std::lock_guard lock(sessions_mu);
    sessions.erase(s);
  }

  // Declared first, destroyed last: a session still queued in a context
  // when the contexts go removes itself from here.
  std::mutex sessions_mu;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;
  RespServerOptions options;
  Commands& commands;
  std::shared_ptr<spdlog::logger> log;
  std::vector<std::unique_ptr<net::io_context>> contexts;
  std::vector<net::executor_work_guard<net::io_context::executor_type>> guards;
  std::optional<tcp::acceptor> acceptor;
  std::size_t next_context = 0;
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<bool> stopping{false};
  // Work off the event loops (RespServerOptions::blocking_threads).
  net::thread_pool blocking;
  // Commands on a key a merge holds, which wait the merge out: apart from
  // the admin commands (a CMS.QUERY of a merged key must not hold up every
  // client's TOPK.RESERVE).
  net::thread_pool lock_waiters;
};

class RespServer::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Impl& server) : socket_(std::move(socket)), server_(server), reader_(server.options.limits) {
    client_.id = server.next_id.fetch_add(1);
    server_.commands.figures().connected.fetch_add(1);
    server_.commands.figures().connections_total.fetch_add(1);
  }
  ~Session() {
    server_.commands.figures().connected.fetch_sub(1);
    server_.remove(this);
  }

  void start() {
    server_.add(this, shared_from_this());
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->pump(); });
  }

  // On shutdown: run no further command; close once every reply owed is
  // written (one waiting for the disk included).
  void stop() {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      self->pump();
    });
  }

 private:
  // A reply in command order: ready at once, or once its write is durable.
  struct Pending {
    std::string reply;
    bool ready = false;
  };

  // Runs the complete commands in the buffer, in order, until the client
  // quits or the replies not yet written pass the backlog limit (then the
  // rest waits for the write). A write's reply waits in `pending_` for its
  // record to be durable while the commands after it run (so pipelined
  // writes share fsyncs); replies leave in command order.
  void process() {
    try {
      while (!client_.quit && !broken_ && !closing_ && !blocked_ && backlog() < server_.options.max_reply_backlog) {
        reader_.set_limits(reader_limits());
        const auto status = reader_.read(in_.unread());
        if (status == CommandReader::Status::incomplete) break;
        if (status == CommandReader::Status::error) {
          // Redis's way: the error, then the connection closes (what follows
          // cannot be framed).
          server_.commands.figures().protocol_errors.fetch_add(1);
          std::string reply;
          ReplyWriter(reply, client_.protocol).error("ERR " + reader_.error());
          queue(std::move(reply));
          broken_ = true;
          break;
        }
        in_.consume(reader_.consumed());
        if (reader_.args().empty()) continue;
        if (const auto entry = Commands::batch_entry(reader_.args()); entry && run_batch(*entry)) continue;
        std::string reply;
        Outcome outcome = server_.commands.execute(client_, reader_.args(), reply);
        if (outcome.deferred) {
          defer(std::move(outcome.deferred), outcome.waits_for_a_merge);
          break;
        }
        if (outcome.commit.lsn == 0) {
          queue(std::move(reply));
          continue;
        }
        await_durable(outcome.commit, {hold(std::move(reply))});
      }
    } catch (const std::exception& e) {
      // Not a client's doing (execute() answers those): out of memory, mostly.
      server_.log->error("resp: connection {} closed: {}", client_.id, e.what());
      broken_ = true;
    }
    if (!reading_) in_.shrink();  // (a read under way lands in the buffer as it is)
  }

  // Pipelined TOPK.ADD / INCRBY (the command just read, `first`): the ones
  // after it on the same key, already in the buffer, join it in one batch
  // (at most kMaxRunCommands commands and the service's batch size in
  // items). False when none does: the command runs alone as any other.
  bool run_batch(const BatchEntry& first) {
    static constexpr std::size_t kMaxRunCommands = 1024;
    // Looking ahead reads small commands only: one larger than this is
    // read by the main reader alone (never scanned twice at length).
    static constexpr std::size_t kMaxLookAheadBytes = 64u << 10;
    // What the run's argument table keeps for the next run: the ~11k
    // arguments of a 256 KiB read of 100-item ADDs fit.
    static constexpr std::size_t kKeptRunWords = 1u << 15;
    const std::string_view data = in_.unread();
    if (data.empty() || data[0] != '*') return false;  // nothing (framed) follows yet
    const std::size_t max_items = server_.commands.max_batch_items();
    std::size_t items = first.items;
    if (items >= max_items) return false;
    // The run's arguments end to end in one table of the loop's (command
    // j's up to ends[j]): a table of its own for each command was an
    // allocation a command. Used only before this returns.
    thread_local std::vector<std::string_view> words;
    thread_local std::vector<std::size_t> ends;
    struct KeepLittle {
      ~KeepLittle() {
        clear_keeping_at_most(words, kKeptRunWords);
        clear_keeping_at_most(ends, kMaxRunCommands);
      }
    } const keep_little;
    words.assign(reader_.args().begin(), reader_.args().end());
    ends.assign(1, words.size());
    auto limits = reader_limits();
    limits.max_command_bytes = std::min(limits.max_command_bytes, kMaxLookAheadBytes);
    CommandReader ahead(limits);
    std::size_t at = 0;
    while (ends.size() < kMaxRunCommands && at < data.size() && data[at] == '*') {
      if (ahead.read(data.substr(at)) != CommandReader::Status::complete) break;
      const auto next = Commands::batch_entry(ahead.args());
      if (!next || next->key != first.key || items + next->items > max_items) break;
      items += next->items;
      words.insert(words.end(), ahead.args().begin(), ahead.args().end());
      ends.push_back(words.size());
      at += ahead.consumed();
    }
    if (ends.size() == 1) return false;
    in_.consume(at);
    const auto run = commands_of(words, ends);
    const bool held = !server_.commands.clustered() && server_.commands.held_long(first.key);
    if (server_.commands.clustered() || held) {
      defer(server_.commands.deferred_batch(client_, run), held);  // its replies in one slot: they leave together anyway
      return true;
    }
    std::vector<BatchReply> replies;
    server_.commands.execute_batch(client_, run, replies);
    // In command order: a ready reply queues, the others wait for their
    // record (the run's one, or each command's own when they ran one by one).
    std::vector<std::pair<std::uint64_t, std::vector<Pending*>>> waits;
    try {
      for (auto& r : replies) {
        if (r.commit.lsn == 0) {
          queue(std::move(r.text));
          continue;
        }
        Pending* slot = hold(std::move(r.text));
        if (waits.empty() || waits.back().first != r.commit.lsn) waits.emplace_back(r.commit.lsn, std::vector<Pending*>{});
        waits.back().second.push_back(slot);
      }
      for (auto& [lsn, slots] : waits) await_durable(service::Commit{lsn}, std::exchange(slots, {}));  // handed over
    } catch (...) {
      // Out of memory: replies still held would never go; say so instead.
      for (auto& [lsn, slots] : waits) {
        for (Pending* slot : slots) settle(slot, "the reply could not be queued (out of memory)");
      }
      release();
      throw;
    }
    return true;
  }

  // Work off the loop (admin work allocates and waits for the disk; in
  // cluster mode every read and write waits on the network): this
  // connection runs nothing else until it is done (a pipelined ADD after a
  // RESERVE needs the key), the others go on. `work` writes the reply.
  // `waits_for_a_merge`: on the pool of its own (Impl::lock_waiters).
  void defer(std::function<void(std::string&)> work, bool waits_for_a_merge = false) {
    Pending* slot = hold({});
    blocked_ = true;
    net::post(waits_for_a_merge ? server_.lock_waiters : server_.blocking, [self = shared_from_this(), slot, guard = keep_running(), work = std::move(work)] {
      std::string done;
      try {
        work(done);  // (it answers a client's errors itself)
      } catch (const std::exception& e) {
        // Not the client's doing (out of memory, mostly): the reply says so,
        // and the connection goes on rather than wait for it forever.
        done.clear();
        ReplyWriter(done, self->client_.protocol).error(std::string("ERR ") + e.what());
      }
      net::post(self->socket_.get_executor(), [self, slot, guard, done = std::move(done)]() mutable {
        self->blocked_ = false;
        self->fill(slot, std::move(done));
      });
    });
  }

  // Held replies that stand once `commit`'s record is durable (else the
  // write's error in their place); then what waited behind them may go.
  void await_durable(service::Commit commit, std::vector<Pending*> slots) {
    server_.commands.service().when_durable(commit, [self = shared_from_this(), slots = std::move(slots), guard = keep_running()](const std::string& error) {
      net::post(self->socket_.get_executor(), [self, slots, error, guard] {
        for (Pending* slot : slots) self->settle(slot, error);
        self->resume();
      });
    });
  }

  // A held reply is ready: as it was, or the write's error in its place.
  void settle(Pending* slot, const std::string& error) {
    if (!error.empty()) {
      std::string failed;
      ReplyWriter(failed, client_.protocol).error("ERR " + error);
      replace(slot, std::move(failed));
    }
    slot->ready = true;
  }

  ProtocolLimits reader_limits() const {
    const bool guarded = server_.commands.tokens().protects_reads() && !client_.authenticated;
    return guarded ? unauthenticated(server_.options.limits) : server_.options.limits;
  }

  // A reply slot that is not ready yet (deque: its address stays valid
  // while slots are added and removed at the ends).
  Pending* hold(std::string reply) {
    pending_bytes_ += reply.size();
    pending_.push_back({std::move(reply), false});
    return &pending_.back();
  }

  // Keeps run() from returning while a reply is owed.
  std::shared_ptr<net::executor_work_guard<tcp::socket::executor_type>> keep_running() {
    return std::make_shared<net::executor_work_guard<tcp::socket::executor_type>>(socket_.get_executor());
  }

  // On the session's thread: a held reply is ready (replaced, when given),
  // and what waited behind it may go.
  void fill(Pending* slot, std::optional<std::string> reply) {
    if (reply) replace(slot, std::move(*reply));
    slot->ready = true;
    resume();
  }

  // Replies ready at the head go out; commands held back by them run.
  void resume() {
    release();
    process();
    pump();
  }

  void replace(Pending* slot, std::string reply) {
    pending_bytes_ -= slot->reply.size();
    slot->reply = std::move(reply);
    pending_bytes_ += slot->reply.size();
  }

  // A reply that is ready: out at once, unless earlier ones are still held.
  void queue(std::string reply) {
    if (pending_.empty()) {
      out_ += reply;
      return;
    }
    hold(std::move(reply))->ready = true;
  }

  // Replies ready at the head of the queue move to the output, in order.
  void release() {
    while (!pending_.empty() && pending_.front().ready) {
      pending_bytes_ -= pending_.front().reply.size();
      out_ += pending_.front().reply;
      pending_.pop_front();
    }
  }

  std::size_t backlog() const noexcept { return out_.size() + sending_.size() + pending_bytes_; }

  // Starts what can start: a write of the replies gathered, a read when
  // nothing holds reading back, or the close.
  void pump() {
    if (closed_) return;
    if (!writing_ && !out_.empty()) {
      writing_ = true;
      sending_.swap(out_);
      out_.clear();
      net::async_write(socket_, net::buffer(sending_), [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
        self->writing_ = false;
        // A large batch of replies' buffer is not kept by the connection
        // (it would hold its peak, up to the backlog limit, while idle).
        clear_keeping_at_most(self->sending_, kKeptReplyBytes);
        if (ec) return self->close();
        self->process();
        self->pump();
      });
    }
    if (client_.quit || broken_ || closing_ || eof_) {
      // (After the client's end, commands held back by a backlog or an
      // admin command still run: process() goes on until the buffer holds
      // no complete command.)
      if (!writing_ && out_.empty() && pending_.empty() && !blocked_) close();
      return;
    }
    // While a command runs off the loop, the commands behind it wait in the
    // buffer: read on only while they are few (a pipeline of a million is
    // read as it is run, not held whole).
    const bool waiting_full = blocked_ && in_.size() >= server_.options.max_reply_backlog;
    if (!reading_ && !waiting_full && backlog() < server_.options.max_reply_backlog) {
      std::span<char> space;
      try {
        space = in_.space();
      } catch (const std::exception& e) {
        // Out of memory for the next read: as process() does, this
        // connection goes (the others are not its doing).
        server_.log->error("resp: connection {} closed: {}", client_.id, e.what());
        broken_ = true;
        return close();
      }
      reading_ = true;
      socket_.async_read_some(net::buffer(space.data(), space.size()), [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
        self->reading_ = false;
        if (ec == net::error::eof) {
          // The client has sent all it will (a half-close: `nc -N`, a
          // script's shutdown(SHUT_WR)), and may still read: the commands
          // it sent run and every reply owed goes out (one waiting for the
          // disk included) before the connection closes. (Redis frees the
          // client at the zero read, but has written its replies by then:
          // the same answers.)
          self->in_.commit(n);
          self->eof_ = true;
          self->process();
          return self->pump();
        }
        if (ec) {
          // The connection failed (or shutdown closed the socket): replies
          // still owed have nowhere to go; their writes stand.
          self->closing_ = true;
          return self->close();
        }
        self->in_.commit(n);
        self->process();
        self->pump();
      });
    }
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  // What a connection's reply buffers keep between writes: a pipelined
  // run's replies (~55 KiB for a 256 KiB read of TOPK.ADD x100) fit.
  static constexpr std::size_t kKeptReplyBytes = 64u << 10;

  tcp::socket socket_;
  Impl& server_;
  CommandReader reader_;
  ClientState client_;
  InputBuffer in_;
  std::string out_, sending_;
  std::deque<Pending> pending_;
  std::size_t pending_bytes_ = 0;
  bool reading_ = false, writing_ = false, closing_ = false, broken_ = false, closed_ = false, blocked_ = false;
  bool eof_ = false;  // the client sent its end: nothing more is read
};

void RespServer::Impl::accept() {
  auto& context = *contexts[next_context];
  next_context = (next_context + 1) % contexts.size();
  acceptor->async_accept(context, [this](const boost::system::error_code& ec, tcp::socket socket) {
    if (stopping) return;
    if (!ec) {
      boost::system::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Session>(std::move(socket), *this)->start();
      return accept();
    }
    if (ec == net::error::operation_aborted) return;
    // Out of descriptors, mostly: try again in a moment instead of spinning.
    log->warn("resp: accept failed: {}", ec.message());
    auto timer = std::make_shared<net::steady_timer>(*contexts[0], std::chrono::milliseconds(100));
    timer->async_wait([this, timer](const boost::system::error_code&) {
      if (!stopping) accept();
    });
  });
}

RespServer::RespServer(RespServerOptions options, Commands& commands, std::shared_ptr<spdlog::logger> log)
    : impl_(std::make_unique<Impl>(std::move(options), commands, std::move(log))) {}

RespServer::~RespServer() = default;

void RespServer::listen() {
  auto& o = impl_->options;
  boost::system::error_code ec;
  const auto address = net::ip::make_address(o.bind, ec);
  if (ec) throw std::runtime_error("--resp-bind: '" + o.bind + "' is not an IP address");
  const tcp::endpoint endpoint(address, o.port);
  auto& a = *impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot listen for RESP on " + o.bind + ":" + std::to_string(o.port) + ": " + ec.message());
}

std::uint16_t RespServer::port() const { return impl_->acceptor->local_endpoint().port(); }

void RespServer::run() {
  impl_->accept();
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < impl_->contexts.size(); ++i) threads.emplace_back([this, i] { impl_->contexts[i]->run(); });
  impl_->contexts[0]->run();
  for (auto& t : threads) t.join();
  impl_->blocking.join();
  impl_->lock_waiters.join();
}

void RespServer::shutdown() {
  net::post(*impl_->contexts[0], [this] {
    if (impl_->stopping.exchange(true)) return;
    boost::system::error_code ignored;
    impl_->acceptor->close(ignored);
    std::vector<std::shared_ptr<Impl::Session>> live;
    {
      std::lock_guard lock(impl_->sessions_mu);
      for (auto& [_, weak] : impl_->sessions) {
        if (auto s = weak.lock()) live.push_back(std::move(s));
      }
    }
    for (auto& s : live) s->stop();
    // Each context runs out of work once its sessions are gone.
    for (auto& g : impl_->guards) g.reset();
  });
}

}  // namespace ebb::resp
