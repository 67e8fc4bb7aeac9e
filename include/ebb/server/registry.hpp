#pragma once
// The server's namespaces. Concurrency lives here and nowhere below:
// - the name -> entry map has a reader-writer lock taken briefly (lookups
//   share it; only create and delete write);
// - each namespace has its own reader-writer lock: ingest and patches are
//   exclusive, queries shared, so different namespaces never wait on each
//   other and queries of one namespace run side by side;
// - each namespace has an I/O mutex ordering its file writes, so a
//   checkpoint can never resurrect a deleted namespace's files.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/engine/namespace.hpp"
#include "ebb/server/namespace_spec.hpp"
#include "ebb/server/server_limits.hpp"

namespace ebb::storage {
class CheckpointStore;
}

namespace ebb::server {

struct NamespaceEntry {
  explicit NamespaceEntry(NamespaceSpec s) : name(s.config.name), spec(std::move(s)), ns(spec.config) {}

  const std::string name;
  mutable std::shared_mutex mu;  // guards spec and ns
  NamespaceSpec spec;
  engine::Namespace ns;
  std::atomic<bool> deleted{false};  // set under mu, then io_mu, by Registry::remove

  std::mutex io_mu;  // orders this namespace's file writes
  std::atomic<std::uint64_t> ingest_bytes{0};
  std::atomic<bool> dirty{false};  // counted since the last checkpoint
};

class Registry {
 public:
  // store may be null: nothing is persisted (tests, --data-dir none).
  Registry(const ServerLimits& limits, storage::CheckpointStore* store) : limits_(limits), store_(store) {}

  std::shared_ptr<NamespaceEntry> find(std::string_view name) const;
  // ApiError 409 when it exists, 400 past the namespace limit.
  std::shared_ptr<NamespaceEntry> create(NamespaceSpec spec);
  // Applies a PATCH body under the namespace's lock: the new configuration
  // is on disk before it takes effect. ApiError 400 naming the field.
  void patch(NamespaceEntry& entry, std::string_view json);
  // ApiError 404 when missing.
  void remove(const std::string& name);
  std::vector<std::shared_ptr<NamespaceEntry>> list() const;
  std::size_t size() const;

  // Startup: every stored namespace with its last checkpoint. Throws
  // std::runtime_error naming the file when one cannot be loaded: starting
  // without it would silently lose acknowledged data.
  std::size_t load();
  // Writes the state of every namespace counted since its last checkpoint;
  // returns how many. Failures are thrown after the others were written.
  std::size_t checkpoint();

 private:
  const ServerLimits& limits_;
  storage::CheckpointStore* store_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<NamespaceEntry>, std::less<>> entries_;
};

}  // namespace ebb::server
