#pragma once
// Idempotency keys seen within the window: key -> (hash of the body it
// named, the LSN of the batch it logged). A retry with the same key and
// the same body is answered from here instead of counting again.
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ebb/storage/checkpoint_store.hpp"

namespace ebb::service {

class IdempotencyTable {
 public:
  IdempotencyTable(double window, std::size_t max_keys) : window_(window), max_keys_(max_keys) {}

  struct Seen {
    std::uint64_t body_hash;
    std::uint64_t lsn;
  };
  // The caller holds lock() from find() through insert(), so two requests
  // with one key cannot both log.
  std::mutex& mutex() { return mu_; }
  std::optional<Seen> find(std::string_view key, double now);  // mu held
  void insert(std::string_view key, std::uint64_t body_hash, std::uint64_t lsn, double received_at);  // mu held

  std::vector<storage::ManifestKey> snapshot(double now);
  std::size_t size();

 private:
  void expire(double now);  // mu held
  struct Entry {
    std::uint64_t body_hash;
    std::uint64_t lsn;
    double received_at;
  };
  double window_;
  std::size_t max_keys_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> keys_;
  std::deque<std::pair<std::string, std::uint64_t>> order_;  // (key, lsn) oldest first
};

}  // namespace ebb::service
