#pragma once
// Rendered answers of one namespace, kept until the namespace changes.
//
// A dashboard or a fleet of clients polling the same top-K would otherwise
// make the server select and render the same answer thousands of times a
// second. An answer is reused while (a) the namespace's version is the one
// it was computed at (every counted batch and every patch bumps it, under
// the namespace's exclusive lock, so a client reads its own acknowledged
// writes), and (b) it is younger than the TTL: a decayed answer is only
// exact at its as_of, which the answer states, so time passing with no new
// events makes it stale slowly (half-life 5m: 0.02% per 100 ms).
//
// Memory: at most `capacity` answers and `max_bytes` of them (1 MiB: a
// top-1000 of long keys is ~300 KB), so 1000 namespaces pin at most 1 GiB
// in the worst case and a few MiB in practice; an answer larger than that
// is not kept. A stale answer is dropped when it is next looked up.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::service {

class AnswerCache {
 public:
  using Body = std::shared_ptr<const std::string>;
  using Clock = std::chrono::steady_clock;

  // ttl <= 0 keeps nothing. At most `capacity` distinct questions are kept
  // (the least recently stored one makes room): the question includes the
  // view, k and the front end's format, so a handful cover real traffic.
  explicit AnswerCache(double ttl_seconds, std::size_t capacity = 32, std::size_t max_bytes = 1 << 20);

  // The answer to `question` computed at `version`, when it is still fresh.
  Body find(std::string_view question, std::uint64_t version, Clock::time_point now);
  void store(std::string_view question, std::uint64_t version, Clock::time_point computed_at, Body body);

  bool enabled() const noexcept { return ttl_.count() > 0; }

 private:
  struct Entry {
    std::string question;
    std::uint64_t version;
    Clock::time_point computed_at;
    Body body;
  };
  const Clock::duration ttl_;
  const std::size_t capacity_, max_bytes_;
  std::mutex mu_;
  std::vector<Entry> entries_;  // in store order, oldest first
  std::size_t bytes_ = 0;       // of the bodies in entries_
};

}  // namespace ebb::service
