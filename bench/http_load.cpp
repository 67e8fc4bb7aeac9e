// http_load: the load generator of bench/serve_bench.sh.
//
//   http_load ingest --port P --namespace N --events E [--batch 1000] [--connections 4]
//                    [--distinct 1000000] [--skew 1.1] [--unique] [--rate EVENTS_PER_S] [--seconds S]
//                    [--backfill S]   (timestamps spread evenly over the last S seconds)
//       Posts E events (Zipf keys, or all distinct with --unique) in batches
//       over keep-alive connections, as fast as the server takes them (or
//       paced at --rate). Prints events/s. Bodies are built before the clock
//       starts. With --seconds, cycles over the E events' batches for S
//       seconds instead of sending them once (background load).
//   http_load query --port P --target /top-k?namespace=N&k=100 --rate R --seconds S [--connections 4] [--dump FILE: a line a request, connection, scheduled send and latency in s]
//       Open loop at R requests/s: latency is measured from each request's
//       scheduled time, so a slow server cannot hide its queueing.
//       Prints p50/p90/p99/p99.9/max.
//   http_load query --port P --target T --closed --requests N [--connections 4] [--warmup 0] [--body-file F]
//       Closed loop: each connection sends its next request as soon as the
//       answer to the last one is in, N requests in all (after --warmup
//       requests per connection that are not counted). Latency is from
//       sending to the end of the answer. Prints requests/s and
//       p50/p90/p99/p99.9/max. With --body-file every request POSTs the
//       file's JSON (e.g. POST /counts with 200 item_ids).
//   http_load incr --port P --requests N [--connections 8] [--distributions 1000000] [--bins 20] [--warmup 0]
//                  [--pipeline 1] [--seed 1]
//       Closed loop of GET /incr (distributions that forget): each request
//       adds 1 to a random field of a random distribution (uniform over
//       distributions x bins; --seed picks the draws). With --pipeline D each connection writes D
//       requests at once (HTTP/1.1 pipelining, each with its own draw; a
//       latency is the whole round's). Prints requests/s and latency percentiles.
//   http_load resp --events E [--distinct 1000000] [--skew 1.1] --key K
//                  [--command zincrby|topk|cms] [--per-command 100]
//       Writes the same Zipf stream as Redis commands (RESP), for
//       redis-cli --pipe: ZINCRBY K 1 item (one event a command, the
//       default), TOPK.ADD K item... or CMS.INCRBY K item 1 item 1 ...
//       (RedisBloom; --per-command events a command, default 100).
//       With --rate EVENTS_PER_S the stream is paced; with --seconds S it
//       cycles over the E events for S seconds (background load for a
//       server, e.g. `http_load resp ... --rate 2000000 --seconds 30 | redis-cli --pipe`);
//       both print what they wrote on stderr.
//
// SIGTERM or SIGINT ends ingest and resp early: what was sent so far is
// reported as usual (scripts stop a background load this way).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/zipf_stream.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/io/http_client.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};  // set by SIGTERM/SIGINT
extern "C" void on_stop_signal(int) { g_stop = true; }
void stop_on_signals() {
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);
}

Clock::time_point after(Clock::time_point t, double seconds) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::map<std::string, std::string> parse_flags(int argc, char** argv, int from) {
  std::map<std::string, std::string> flags;
  for (int i = from; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      std::fprintf(stderr, "http_load: unexpected argument '%s'\n", a.c_str());
      std::exit(2);
    }
    if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) flags[a.substr(2)] = argv[++i];
    else flags[a.substr(2)] = std::string(1, '1');
  }
  return flags;
}

std::string flag(const std::map<std::string, std::string>& f, const std::string& name, const std::string& fallback = "") {
  auto it = f.find(name);
  if (it != f.end()) return it->second;
  if (fallback.empty()) {
    std::fprintf(stderr, "http_load: --%s is required\n", name.c_str());
    std::exit(2);
  }
  return fallback;
}

// Event keys: the Zipf stream, or with unique=true a fresh key per event.
std::vector<std::string> stream_keys(std::size_t events, std::size_t distinct, double skew, bool unique) {
  std::vector<std::string> keys;
  keys.reserve(events);
  if (unique) {
    for (std::size_t i = 0; i < events; ++i) keys.push_back(std::string(1, 'u').append(std::to_string(i)));
    return keys;
  }
  const auto z = ebb::bench::make_zipf_stream(distinct, events, skew, 1e6);
  for (auto r : z.ranks) keys.push_back(z.keys[r]);
  return keys;
}

int ingest(const std::map<std::string, std::string>& f) {
  const auto port = static_cast<unsigned short>(std::stoi(flag(f, "port")));
  const std::string ns = flag(f, "namespace");
  const std::size_t events = std::stoull(flag(f, "events"));
  const std::size_t batch = std::stoull(flag(f, "batch", "1000"));
  const int connections = std::stoi(flag(f, "connections", "4"));
  const bool unique = f.contains("unique");
  const std::size_t offset = std::stoull(flag(f, "offset", "0"));  // --unique: first key number
  // --backfill S: event j carries a timestamp, evenly over the last S seconds
  // (a window's buckets filled as if the stream had run that long).
  const double backfill = std::stod(flag(f, "backfill", "0"));
  const double backfill_from =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() - backfill;
  auto make_body = [&](const std::vector<std::string>& keys, std::size_t i) {
    std::string body = "{\"namespace\":\"" + ns + "\",\"events\":[";
    for (std::size_t j = i; j < std::min(keys.size(), i + batch); ++j) {
      body += (j == i ? "{\"item_id\":\"" : ",{\"item_id\":\"") + keys[j] + "\"";
      if (backfill > 0) body += ",\"timestamp\":" + std::to_string(backfill_from + backfill * static_cast<double>(j) / static_cast<double>(keys.size()));
      body += "}";
    }
    return body + "]}";
  };
  // Unique keys are built per batch while sending (50M keys do not fit
  // comfortably as prebuilt bodies); Zipf bodies are built before the clock.
  std::vector<std::string> bodies;
  const std::size_t batches = (events + batch - 1) / batch;
  if (!unique) {
    const auto keys = stream_keys(events, std::stoull(flag(f, "distinct", "1000000")), std::stod(flag(f, "skew", "1.1")), false);
    for (std::size_t i = 0; i < keys.size(); i += batch) {
      bodies.push_back(make_body(keys, i));
    }
  }
  auto body_of = [&](std::size_t b) {
    if (!unique) return bodies[b];
    std::vector<std::string> keys;
    for (std::size_t j = b * batch; j < std::min(events, (b + 1) * batch); ++j) keys.push_back(std::string(1, 'u').append(std::to_string(offset + j)));
    return make_body(keys, 0);
  };
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> failed{0};
  std::atomic<std::size_t> sent_batches{0};
  std::atomic<std::size_t> sent_events{0};
  std::atomic<std::size_t> sent_bytes{0};
  const double rate = std::stod(flag(f, "rate", "0"));  // events/s; 0 = as fast as possible
  const double seconds = std::stod(flag(f, "seconds", "0"));  // > 0: cycle over the batches this long
  const std::size_t limit = seconds > 0 ? SIZE_MAX : batches;
  stop_on_signals();
  std::fprintf(stderr, "ingest: started\n");  // scripts wait for this before measuring alongside
  std::fflush(stderr);
  const auto start = Clock::now();
  const auto deadline = after(start, seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&] {
      ebb::io::HttpClient client(port);
      for (std::size_t i; !g_stop && (i = next++) < limit;) {
        if (rate > 0) std::this_thread::sleep_until(after(start, static_cast<double>(i * batch) / rate));
        if (g_stop || (seconds > 0 && Clock::now() >= deadline)) break;
        const std::size_t b = i % batches;
        const std::string body = body_of(b);
        if (client.request("POST", "/events", body).status != 204) ++failed;
        ++sent_batches;
        sent_events += std::min(batch, events - b * batch);
        sent_bytes += body.size();
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  const std::size_t n = sent_events.load();
  std::printf("ingest: %zu events in %zu batches of %zu over %d connections: %.3f s, %.2f M events/s, %.1f MB/s of JSON, %zu failed\n",
              n, sent_batches.load(), batch, connections, secs, n / secs / 1e6, sent_bytes.load() / secs / 1e6, failed.load());
  return failed == 0 ? 0 : 1;
}

// A lean keep-alive GET client for the query modes: one prepared request,
// a blocking socket, one send and (for answers under 256 KiB) one or two
// receives a request. ebb::io::HttpClient (Beast, a deadline per request)
// costs ~45 us of CPU a request; at 10k requests/s that is half of one of
// this machine's two cores, taken from the server being measured.
class GetConnection {
 public:
  // A non-empty `body` makes every request a POST of it (JSON).
  GetConnection(unsigned short port, const std::string& target, std::string body = "")
      : port_(port), body_(std::move(body)), buffer_(256 * 1024) {
    set_target(target);
    connect();
  }
  ~GetConnection() { ::close(fd_); }
  void set_target(const std::string& target) {
    request_.clear();
    depth_ = 0;
    add_target(target);
  }
  // Appends a request to the ones get_pipelined() writes together.
  void add_target(const std::string& target) {
    ++depth_;
    if (body_.empty()) {
      request_ += "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
      return;
    }
    request_ += "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(body_.size()) + "\r\n\r\n" + body_;
  }
  GetConnection(const GetConnection&) = delete;
  GetConnection& operator=(const GetConnection&) = delete;

  // The answer's status; 0 when the connection failed (then it reconnects).
  int get() { return get_pipelined(); }

  // The requests set (set_target, add_target) in one write (HTTP/1.1
  // pipelining), then their answers in order; the worst status (0: the
  // connection failed).
  int get_pipelined() {
    const std::size_t depth = depth_;
    const std::string& out = request_;
    if (::send(fd_, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) return fail();
    int worst = 200;
    std::size_t have = 0, at = 0;  // bytes in the buffer; where the current answer begins
    for (std::size_t answered = 0; answered < depth;) {
      const std::string_view got(buffer_.data() + at, have - at);
      const auto header_end = got.find("\r\n\r\n");
      std::size_t need = 0;
      if (header_end != std::string_view::npos) {
        const auto length_at = got.substr(0, header_end).find("Content-Length: ");
        const std::size_t length = length_at == std::string_view::npos ? 0 : std::strtoull(got.data() + length_at + 16, nullptr, 10);
        need = header_end + 4 + length;
      }
      if (need != 0 && got.size() >= need) {
        const int status = std::atoi(got.data() + 9);  // "HTTP/1.1 200 ..."
        if (status != 200) worst = status;
        at += need;
        ++answered;
        continue;
      }
      if (have == buffer_.size()) buffer_.resize(buffer_.size() * 2);
      const ssize_t n = ::recv(fd_, buffer_.data() + have, buffer_.size() - have, 0);
      if (n <= 0) return fail();
      have += static_cast<std::size_t>(n);
    }
    return worst;
  }

 private:
  void connect() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      std::fprintf(stderr, "http_load: cannot connect to 127.0.0.1:%u: %s\n", port_, std::strerror(errno));
      std::exit(1);
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  int fail() {
    ::close(fd_);
    connect();
    return 0;
  }

  unsigned short port_;
  std::string body_;
  std::string request_;
  std::size_t depth_ = 0;  // requests in request_
  std::vector<char> buffer_;
  int fd_ = -1;
};

// Sorted latencies in seconds -> "p50 ... max" in milliseconds.
std::string percentiles(std::vector<double>& all) {
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<std::size_t>(p * all.size()))] * 1e3; };
  char out[160];
  std::snprintf(out, sizeof out, "p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms", pct(0.5), pct(0.9), pct(0.99), pct(0.999),
                all.empty() ? 0 : all.back() * 1e3);
  return out;
}

// A closed loop of GETs: each connection sends its next request as soon as
// the answer to the last is in, `requests` in all after `warmup` a
// connection; the target of each comes from `target_of(connection)`.
int closed_loop(const char* label, unsigned short port, int connections, std::size_t requests, std::size_t warmup,
                const std::function<std::string(int)>& target_of, std::size_t pipeline = 1, const std::string& body = "") {
  std::vector<std::vector<double>> latencies(connections);
  std::atomic<std::size_t> next{0}, failed{0};
  std::atomic<int> warm{0};
  Clock::time_point start;
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      GetConnection client(port, target_of(c), body);
      for (std::size_t i = 0; i < warmup; ++i) client.get();
      // Every connection is warm before the clock starts.
      if (++warm == connections) start = Clock::now();
      while (warm.load() < connections) std::this_thread::yield();
      latencies[c].reserve(requests / connections + 1);
      while (next.fetch_add(pipeline) < requests) {
        client.set_target(target_of(c));
        for (std::size_t i = 1; i < pipeline; ++i) client.add_target(target_of(c));
        const auto sent = Clock::now();
        if (client.get_pipelined() != 200) failed += pipeline;
        const double took = std::chrono::duration<double>(Clock::now() - sent).count();
        for (std::size_t i = 0; i < pipeline; ++i) latencies[c].push_back(took);
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::printf("%s: %zu requests closed loop over %d connections (pipeline %zu): %.3f s, %.0f requests/s, %s, %zu failed\n", label, all.size(),
              connections, pipeline, secs, all.size() / secs, percentiles(all).c_str(), failed.load());
  return failed == 0 ? 0 : 1;
}

int closed_query(const std::map<std::string, std::string>& f) {
  const std::string target = flag(f, "target");
  std::string body;
  if (f.contains("body-file")) {
    std::ifstream in(flag(f, "body-file"), std::ios::binary);
    body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in || body.empty()) {
      std::fprintf(stderr, "http_load: cannot read --body-file %s\n", flag(f, "body-file").c_str());
      return 2;
    }
  }
  return closed_loop("query", static_cast<unsigned short>(std::stoi(flag(f, "port"))), std::stoi(flag(f, "connections", "4")),
                     std::stoull(flag(f, "requests")), std::stoull(flag(f, "warmup", "0")), [&](int) { return target; }, 1, body);
}

int incr(const std::map<std::string, std::string>& f) {
  const int connections = std::stoi(flag(f, "connections", "8"));
  const std::uint64_t distributions = std::stoull(flag(f, "distributions", "1000000"));
  const std::uint64_t bins = std::stoull(flag(f, "bins", "20"));
  // One splitmix64 stream a connection (each touched by its thread only),
  // each from its own random point of the sequence: started at multiples of
  // the step, the connections walked one sequence a step apart and the
  // whole run touched a few thousand distributions, all in cache.
  const std::uint64_t seed = std::stoull(flag(f, "seed", "1"));
  std::vector<std::uint64_t> state(connections);
  for (int c = 0; c < connections; ++c) state[c] = ebb::mix64(seed * 1000003 + static_cast<std::uint64_t>(c));
  return closed_loop("incr", static_cast<unsigned short>(std::stoi(flag(f, "port"))), connections, std::stoull(flag(f, "requests")),
                     std::stoull(flag(f, "warmup", "0")), [&](int c) {
                       const std::uint64_t z = ebb::mix64(state[c] += 0x9e3779b97f4a7c15ull);
                       return "/incr?distribution=d" + std::to_string(z % distributions) + "&field=f" + std::to_string((z >> 40) % bins);
                     },
                     std::stoull(flag(f, "pipeline", "1")));
}

int query(const std::map<std::string, std::string>& f) {
  if (f.contains("closed")) return closed_query(f);
  const auto port = static_cast<unsigned short>(std::stoi(flag(f, "port")));
  const std::string target = flag(f, "target");
  const double rate = std::stod(flag(f, "rate"));
  const double seconds = std::stod(flag(f, "seconds"));
  const int connections = std::stoi(flag(f, "connections", "4"));
  const double per_connection = rate / connections;
  std::vector<std::vector<double>> latencies(connections);
  std::vector<std::vector<double>> sent_at(connections);  // seconds from start, for --dump
  std::atomic<std::size_t> failed{0};
  const auto start = Clock::now() + std::chrono::milliseconds(50);
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      GetConnection client(port, target);
      const auto interval = std::chrono::duration<double>(1.0 / per_connection);
      // Stagger connections evenly inside one interval.
      auto scheduled = start + std::chrono::duration_cast<Clock::duration>(interval * (static_cast<double>(c) / connections));
      const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
      while (scheduled < end) {
        std::this_thread::sleep_until(scheduled);
        if (client.get() != 200) ++failed;
        latencies[c].push_back(std::chrono::duration<double>(Clock::now() - scheduled).count());
        sent_at[c].push_back(std::chrono::duration<double>(scheduled - start).count());
        scheduled += std::chrono::duration_cast<Clock::duration>(interval);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::printf("query: %zu requests at %.0f/s for %.1f s: %s, %zu failed\n", all.size(), rate, seconds, percentiles(all).c_str(), failed.load());
  if (f.contains("dump")) {  // one line a request: connection, scheduled send (s from start), latency (s)
    std::FILE* out = std::fopen(flag(f, "dump").c_str(), "w");
    if (out == nullptr) return 2;
    for (int c = 0; c < connections; ++c) {
      for (std::size_t i = 0; i < latencies[c].size(); ++i) std::fprintf(out, "%d %.6f %.6f\n", c, sent_at[c][i], latencies[c][i]);
    }
    std::fclose(out);
  }
  return failed == 0 ? 0 : 1;
}

int resp(const std::map<std::string, std::string>& f) {
  const auto keys = stream_keys(std::stoull(flag(f, "events")), std::stoull(flag(f, "distinct", "1000000")), std::stod(flag(f, "skew", "1.1")),
                                f.contains("unique"));
  const std::string key = flag(f, "key");
  const std::string command = flag(f, "command", "zincrby");
  if (command != "zincrby" && command != "topk" && command != "cms") {
    std::fprintf(stderr, "http_load: --command is zincrby, topk or cms, not '%s'\n", command.c_str());
    return 2;
  }
  const std::size_t per_command = command == "zincrby" ? 1 : std::stoull(flag(f, "per-command", "100"));
  if (per_command == 0) {
    std::fprintf(stderr, "http_load: --per-command must be at least 1\n");
    return 2;
  }
  auto bulk = [](std::string& out, const std::string& s) {
    out += '$';
    out += std::to_string(s.size());
    out += "\r\n";
    out += s;
    out += "\r\n";
  };
  std::string out;
  std::vector<std::size_t> starts;  // where each command begins in out, then out.size()
  for (std::size_t i = 0; i < keys.size(); i += per_command) {
    const std::size_t n = std::min(per_command, keys.size() - i);
    starts.push_back(out.size());
    if (command == "zincrby") {
      out += "*4\r\n$7\r\nZINCRBY\r\n";
      bulk(out, key);
      out += "$1\r\n1\r\n";
      bulk(out, keys[i]);
    } else if (command == "topk") {  // TOPK.ADD key item...
      out += '*';
      out += std::to_string(2 + n);
      out += "\r\n$8\r\nTOPK.ADD\r\n";
      bulk(out, key);
      for (std::size_t j = i; j < i + n; ++j) bulk(out, keys[j]);
    } else {  // CMS.INCRBY key item increment ...
      out += '*';
      out += std::to_string(2 + 2 * n);
      out += "\r\n$10\r\nCMS.INCRBY\r\n";
      bulk(out, key);
      for (std::size_t j = i; j < i + n; ++j) {
        bulk(out, keys[j]);
        out += "$1\r\n1\r\n";
      }
    }
  }
  starts.push_back(out.size());
  const double rate = std::stod(flag(f, "rate", "0"));        // events/s; 0 = unpaced
  const double seconds = std::stod(flag(f, "seconds", "0"));  // > 0: cycle over the stream this long
  if (rate <= 0 && seconds <= 0) {
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  // Paced or timed: chunks of about 1000 events, each sent on schedule.
  stop_on_signals();
  const std::size_t commands = starts.size() - 1;
  const std::size_t chunk = std::max<std::size_t>(1, 1000 / per_command);
  std::fprintf(stderr, "resp: started\n");  // scripts wait for this before measuring alongside
  std::fflush(stderr);
  const auto start = Clock::now();
  const auto deadline = after(start, seconds);
  std::size_t c = 0;
  std::size_t commands_out = 0;
  std::size_t events_out = 0;
  while (!g_stop && commands > 0 && (seconds > 0 ? Clock::now() < deadline : commands_out < commands)) {
    const std::size_t end = std::min(c + chunk, commands);
    if (std::fwrite(out.data() + starts[c], 1, starts[end] - starts[c], stdout) != starts[end] - starts[c] || std::fflush(stdout) != 0) break;
    commands_out += end - c;
    for (; c < end; ++c) events_out += std::min(per_command, keys.size() - c * per_command);
    if (c == commands) c = 0;
    if (rate > 0) std::this_thread::sleep_until(after(start, static_cast<double>(events_out) / rate));
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::fprintf(stderr, "resp: %zu events in %s commands of %zu: %.3f s, %.2f M events/s\n", events_out, command.c_str(), per_command, secs,
               events_out / secs / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: http_load ingest|query|resp --flags (see the top of bench/http_load.cpp)\n");
    return 2;
  }
  const std::string mode = argv[1];
  const auto flags = parse_flags(argc, argv, 2);
  if (mode == "ingest") return ingest(flags);
  if (mode == "query") return query(flags);
  if (mode == "incr") return incr(flags);
  if (mode == "resp") return resp(flags);
  std::fprintf(stderr, "http_load: unknown mode '%s'\n", mode.c_str());
  return 2;
}
