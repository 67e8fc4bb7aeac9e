#include "answer_cache.hpp"

#include <algorithm>

namespace ebb::service {

AnswerCache::AnswerCache(double ttl_seconds, std::size_t capacity, std::size_t max_bytes)
    // Past ~30 years a TTL is forever (durations go to 11574074d, which
    // would overflow the clock's nanoseconds).
    : ttl_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::clamp(ttl_seconds, 0.0, 1e9)))),
      capacity_(std::max<std::size_t>(1, capacity)),
      max_bytes_(max_bytes) {}

AnswerCache::Body AnswerCache::find(std::string_view question, std::uint64_t version, Clock::time_point now) {
  if (!enabled()) return nullptr;
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->question != question) continue;
    if (it->version == version && now - it->computed_at < ttl_) return it->body;
    // Stale for good (versions only grow, time only passes): let it go now.
    bytes_ -= it->body->size();
    entries_.erase(it);
    return nullptr;
  }
  return nullptr;
}

void AnswerCache::store(std::string_view question, std::uint64_t version, Clock::time_point computed_at, Body body) {
  if (!enabled() || body->size() > max_bytes_) return;
  std::lock_guard lock(mu_);
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.question == question; });
  if (it != entries_.end()) {
    // Two requests raced on a stale answer: keep the newer computation.
    if (it->version > version || (it->version == version && it->computed_at >= computed_at)) return;
    bytes_ -= it->body->size();
    entries_.erase(it);
  }
  while (!entries_.empty() && (entries_.size() >= capacity_ || bytes_ + body->size() > max_bytes_)) {
    bytes_ -= entries_.front().body->size();
    entries_.erase(entries_.begin());
  }
  bytes_ += body->size();
  entries_.push_back({std::string(question), version, computed_at, std::move(body)});
}

}  // namespace ebb::service
