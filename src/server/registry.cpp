#include "ebb/server/registry.hpp"

#include <stdexcept>

#include "ebb/core/error.hpp"
#include "ebb/server/http_types.hpp"
#include "ebb/storage/checkpoint_store.hpp"

namespace ebb::server {

std::shared_ptr<NamespaceEntry> Registry::find(std::string_view name) const {
  std::shared_lock lock(mu_);
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second;
}

std::shared_ptr<NamespaceEntry> Registry::create(NamespaceSpec spec) {
  std::unique_lock lock(mu_);
  const std::string name = spec.config.name;
  if (entries_.contains(name)) throw ApiError(409, "namespace_exists", "name: namespace '" + name + "' already exists");
  if (entries_.size() >= limits_.max_namespaces) {
    throw bad_request("namespace_limit", "name: the server holds its limit of " + std::to_string(limits_.max_namespaces) +
                                             " namespaces (--max-namespaces)");
  }
  auto entry = std::make_shared<NamespaceEntry>(std::move(spec));
  if (store_ != nullptr) {
    std::lock_guard io(entry->io_mu);
    store_->remove(name);  // a state file left by an earlier namespace of that name is not this one's
    store_->save_config(name, write_namespace_spec(entry->spec, true));
  }
  entries_.emplace(name, entry);
  return entry;
}

void Registry::patch(NamespaceEntry& entry, std::string_view json) {
  std::unique_lock lock(entry.mu);
  if (entry.deleted) throw ApiError(404, "namespace_not_found", "namespace '" + entry.name + "' was deleted");
  const NamespaceSpec next = patch_namespace_spec(entry.spec, json, limits_);
  // The engine must accept the whole new configuration before anything is
  // written, so disk and memory cannot disagree.
  try {
    next.config.validate();
  } catch (const InvalidArgument& e) {
    throw bad_request("invalid_field", e.what());
  }
  if (store_ != nullptr) {
    std::lock_guard io(entry.io_mu);
    store_->save_config(next.config.name, write_namespace_spec(next, true));
  }
  entry.ns.set_k(next.config.k);
  entry.ns.set_exclude(next.config.exclude);
  entry.spec = next;
}

void Registry::remove(const std::string& name) {
  std::shared_ptr<NamespaceEntry> entry;
  {
    std::unique_lock lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) throw ApiError(404, "namespace_not_found", "no namespace '" + name + "'");
    entry = it->second;
    entries_.erase(it);
  }
  std::unique_lock ns_lock(entry->mu);
  entry->deleted = true;
  if (store_ != nullptr) {
    std::lock_guard io(entry->io_mu);
    store_->remove(name);
  }
}

std::vector<std::shared_ptr<NamespaceEntry>> Registry::list() const {
  std::shared_lock lock(mu_);
  std::vector<std::shared_ptr<NamespaceEntry>> out;
  out.reserve(entries_.size());
  for (const auto& [_, e] : entries_) out.push_back(e);
  return out;
}

std::size_t Registry::size() const {
  std::shared_lock lock(mu_);
  return entries_.size();
}

std::size_t Registry::load() {
  if (store_ == nullptr) return 0;
  std::size_t n = 0;
  for (auto& stored : store_->load_all()) {
    NamespaceSpec spec;
    try {
      spec = parse_namespace_spec(stored.config_json, limits_);
    } catch (const std::exception& e) {
      throw std::runtime_error("cannot load namespace configuration " + stored.config_path.string() + ": " + e.what());
    }
    if (spec.config.name != stored.name) {
      throw std::runtime_error("namespace configuration " + stored.config_path.string() + " names '" + spec.config.name + "'");
    }
    auto entry = std::make_shared<NamespaceEntry>(std::move(spec));
    if (stored.state) {
      try {
        entry->ns.restore_state(*stored.state);
      } catch (const std::exception& e) {
        throw std::runtime_error("cannot restore namespace state " + stored.state_path.string() + ": " + e.what());
      }
    }
    std::unique_lock lock(mu_);
    entries_[stored.name] = std::move(entry);
    ++n;
  }
  return n;
}

std::size_t Registry::checkpoint() {
  if (store_ == nullptr) return 0;
  std::size_t written = 0;
  std::string first_error;
  for (const auto& entry : list()) {
    if (!entry->dirty.exchange(false)) continue;
    std::string blob;
    {
      std::shared_lock lock(entry->mu);
      if (entry->deleted) continue;
      blob = entry->ns.serialize_state();
    }
    try {
      std::lock_guard io(entry->io_mu);
      if (entry->deleted) continue;  // set under io_mu by remove()
      store_->save_state(entry->name, blob);
      ++written;
    } catch (const std::exception& e) {
      entry->dirty = true;  // try again next time
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (!first_error.empty()) throw std::runtime_error(first_error);
  return written;
}

}  // namespace ebb::server
