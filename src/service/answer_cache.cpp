#include "answer_cache.hpp"

#include <algorithm>

namespace ebb::service {

AnswerCache::AnswerCache(double ttl_seconds, std::size_t capacity)
    : ttl_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, ttl_seconds)))),
      capacity_(std::max<std::size_t>(1, capacity)) {}

AnswerCache::Body AnswerCache::find(std::string_view question, std::uint64_t version, Clock::time_point now) const {
  if (!enabled()) return nullptr;
  std::lock_guard lock(mu_);
  for (const auto& e : entries_) {
    if (e.question != question) continue;
    if (e.version == version && now - e.computed_at < ttl_) return e.body;
    return nullptr;
  }
  return nullptr;
}

void AnswerCache::store(std::string_view question, std::uint64_t version, Clock::time_point computed_at, Body body) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.question == question; });
  if (it != entries_.end()) {
    // Two requests raced on a stale answer: keep the newer computation.
    if (it->version > version || (it->version == version && it->computed_at >= computed_at)) return;
    entries_.erase(it);
  } else if (entries_.size() >= capacity_) {
    entries_.erase(entries_.begin());
  }
  entries_.push_back({std::string(question), version, computed_at, std::move(body)});
}

}  // namespace ebb::service
