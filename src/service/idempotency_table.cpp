#include "idempotency_table.hpp"

namespace ebb::service {

void IdempotencyTable::expire(double now) {
  while (!order_.empty()) {
    auto it = keys_.find(order_.front().first);
    // A deque entry whose key was re-inserted later (another LSN) is stale.
    if (it != keys_.end() && it->second.lsn == order_.front().second) {
      if (keys_.size() <= max_keys_ && it->second.received_at >= now - window_) break;
      keys_.erase(it);
    }
    order_.pop_front();
  }
}

std::optional<IdempotencyTable::Seen> IdempotencyTable::find(std::string_view key, double now) {
  expire(now);
  auto it = keys_.find(std::string(key));
  if (it == keys_.end() || it->second.received_at < now - window_) return std::nullopt;
  return Seen{it->second.body_hash, it->second.lsn};
}

void IdempotencyTable::insert(std::string_view key, std::uint64_t body_hash, std::uint64_t lsn, double received_at) {
  std::string k(key);
  keys_[k] = Entry{body_hash, lsn, received_at};
  order_.emplace_back(std::move(k), lsn);
  if (keys_.size() > max_keys_) expire(received_at);
}

std::vector<storage::ManifestKey> IdempotencyTable::snapshot(double now) {
  std::lock_guard lock(mu_);
  expire(now);
  std::vector<storage::ManifestKey> out;
  out.reserve(keys_.size());
  for (const auto& [k, e] : keys_) out.push_back({k, e.body_hash, e.lsn, e.received_at});
  return out;
}

std::size_t IdempotencyTable::size() {
  std::lock_guard lock(mu_);
  return keys_.size();
}

}  // namespace ebb::service
