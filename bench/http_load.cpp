// http_load: the load generator of bench/serve_bench.sh.
//
//   http_load ingest --port P --namespace N --events E [--batch 1000] [--connections 4]
//                    [--distinct 1000000] [--skew 1.1] [--unique] [--rate EVENTS_PER_S]
//       Posts E events (Zipf keys, or all distinct with --unique) in batches
//       over keep-alive connections, as fast as the server takes them (or
//       paced at --rate). Prints events/s. Bodies are built before the clock
//       starts.
//   http_load query --port P --target /top-k?namespace=N&k=100 --rate R --seconds S [--connections 4]
//       Open loop at R requests/s: latency is measured from each request's
//       scheduled time, so a slow server cannot hide its queueing.
//       Prints p50/p90/p99/p99.9/max.
//   http_load resp --events E [--distinct 1000000] [--skew 1.1] --key K
//       Writes the same Zipf stream as Redis ZINCRBY commands (RESP), for
//       redis-cli --pipe.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/zipf_stream.hpp"
#include "ebb/io/http_client.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::map<std::string, std::string> parse_flags(int argc, char** argv, int from) {
  std::map<std::string, std::string> flags;
  for (int i = from; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      std::fprintf(stderr, "http_load: unexpected argument '%s'\n", a.c_str());
      std::exit(2);
    }
    if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) flags[a.substr(2)] = argv[++i];
    else flags[a.substr(2)] = "1";
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
    for (std::size_t i = 0; i < events; ++i) keys.push_back("u" + std::to_string(i));
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
  auto make_body = [&](const std::vector<std::string>& keys, std::size_t i) {
    std::string body = "{\"namespace\":\"" + ns + "\",\"events\":[";
    for (std::size_t j = i; j < std::min(keys.size(), i + batch); ++j) body += (j == i ? "{\"item_id\":\"" : ",{\"item_id\":\"") + keys[j] + "\"}";
    return body + "]}";
  };
  // Unique keys are built per batch while sending (50M keys do not fit
  // comfortably as prebuilt bodies); Zipf bodies are built before the clock.
  std::vector<std::string> bodies;
  std::size_t body_bytes = 0;
  const std::size_t batches = (events + batch - 1) / batch;
  if (!unique) {
    const auto keys = stream_keys(events, std::stoull(flag(f, "distinct", "1000000")), std::stod(flag(f, "skew", "1.1")), false);
    for (std::size_t i = 0; i < keys.size(); i += batch) {
      bodies.push_back(make_body(keys, i));
      body_bytes += bodies.back().size();
    }
  }
  auto body_of = [&](std::size_t b) {
    if (!unique) return bodies[b];
    std::vector<std::string> keys;
    for (std::size_t j = b * batch; j < std::min(events, (b + 1) * batch); ++j) keys.push_back("u" + std::to_string(offset + j));
    return make_body(keys, 0);
  };
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> failed{0};
  const double rate = std::stod(flag(f, "rate", "0"));  // events/s; 0 = as fast as possible
  std::fprintf(stderr, "ingest: started\n");  // scripts wait for this before measuring alongside
  std::fflush(stderr);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&] {
      ebb::io::HttpClient client(port);
      for (std::size_t i; (i = next++) < batches;) {
        if (rate > 0) {
          std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i * batch / rate)));
        }
        if (client.request("POST", "/events", body_of(i)).status != 204) ++failed;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("ingest: %zu events in %zu batches of %zu over %d connections: %.3f s, %.2f M events/s, %.1f MB/s of JSON, %zu failed\n",
              events, batches, batch, connections, secs, events / secs / 1e6, body_bytes / secs / 1e6, failed.load());
  return failed == 0 ? 0 : 1;
}

int query(const std::map<std::string, std::string>& f) {
  const auto port = static_cast<unsigned short>(std::stoi(flag(f, "port")));
  const std::string target = flag(f, "target");
  const double rate = std::stod(flag(f, "rate"));
  const double seconds = std::stod(flag(f, "seconds"));
  const int connections = std::stoi(flag(f, "connections", "4"));
  const double per_connection = rate / connections;
  std::vector<std::vector<double>> latencies(connections);
  std::atomic<std::size_t> failed{0};
  const auto start = Clock::now() + std::chrono::milliseconds(50);
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      ebb::io::HttpClient client(port);
      const auto interval = std::chrono::duration<double>(1.0 / per_connection);
      // Stagger connections evenly inside one interval.
      auto scheduled = start + std::chrono::duration_cast<Clock::duration>(interval * (static_cast<double>(c) / connections));
      const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
      while (scheduled < end) {
        std::this_thread::sleep_until(scheduled);
        if (client.request("GET", target).status != 200) ++failed;
        latencies[c].push_back(std::chrono::duration<double>(Clock::now() - scheduled).count());
        scheduled += std::chrono::duration_cast<Clock::duration>(interval);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<std::size_t>(p * all.size()))] * 1e3; };
  std::printf("query: %zu requests at %.0f/s for %.1f s: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms, %zu failed\n",
              all.size(), rate, seconds, pct(0.5), pct(0.9), pct(0.99), pct(0.999), all.empty() ? 0 : all.back() * 1e3, failed.load());
  return failed == 0 ? 0 : 1;
}

int resp(const std::map<std::string, std::string>& f) {
  const auto keys = stream_keys(std::stoull(flag(f, "events")), std::stoull(flag(f, "distinct", "1000000")), std::stod(flag(f, "skew", "1.1")),
                                f.contains("unique"));
  const std::string key = flag(f, "key");
  std::string out;
  for (const auto& k : keys) {
    out += "*4\r\n$7\r\nZINCRBY\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n$1\r\n1\r\n$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
    if (out.size() > (1 << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
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
  if (mode == "resp") return resp(flags);
  std::fprintf(stderr, "http_load: unknown mode '%s'\n", mode.c_str());
  return 2;
}
