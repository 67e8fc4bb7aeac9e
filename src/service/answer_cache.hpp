#pragma once
// Rendered answers of one namespace, kept until the namespace changes.
//
// A dashboard or a fleet of clients polling the same top-K would otherwise
// make the server select and render the same answer thousands of times a
// second. An answer is reused while (a) the namespace's version is the one
// it was computed at (every batch, patch or restore bumps it, under the
// namespace's exclusive lock, so a client reads its own acknowledged
// writes), and (b) it is younger than the TTL: a decayed answer is only
// exact at its as_of, which the answer states, so time passing with no new
// events makes it stale slowly (half-life 5m: 0.02% per 100 ms).
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
  explicit AnswerCache(double ttl_seconds, std::size_t capacity = 32);

  // The answer to `question` computed at `version`, when it is still fresh.
  Body find(std::string_view question, std::uint64_t version, Clock::time_point now) const;
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
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // in store order, oldest first
};

}  // namespace ebb::service
