// The namespaces' configurations mirrored in a key-value bucket
// (cluster/namespace_mirror.hpp).
#include "ebb/cluster/namespace_mirror.hpp"

#include <charconv>

#include "ebb/core/percent_encoding.hpp"
#include "ebb/service/log_records.hpp"
#include "ebb/service/namespace_spec.hpp"

namespace ebb::cluster {
namespace {

constexpr std::string_view kRevisionPrefix = R"({"revision":)";
constexpr int kAttempts = 5;  // compare-and-set races with other nodes' mirrors, or a failing bucket
constexpr const char* kStreamKey = "=stream";  // '=' in a name is "=3D": no name's key

}  // namespace

std::string namespace_key(std::string_view name) { return percent_encode(name, "-_", '='); }

std::optional<std::uint64_t> mirrored_revision(std::string_view value) {
  if (!value.starts_with(kRevisionPrefix)) return std::nullopt;
  value.remove_prefix(kRevisionPrefix.size());
  std::uint64_t r = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), r);
  if (ec != std::errc() || end == value.data() + value.size() || *end != ',') return std::nullopt;
  return r;
}

NamespaceMirror::NamespaceMirror(NatsClient& client, const std::string& bucket, int replicas, std::int64_t stream_created_ns,
                                 std::shared_ptr<spdlog::logger> log)
    : bucket_(client.bucket(bucket, replicas, std::chrono::milliseconds(0))), log_(std::move(log)) {
  const std::string stream = std::to_string(stream_created_ns);
  kvEntry* entry = nullptr;
  const natsStatus s = kvStore_Get(&entry, bucket_.get(), kStreamKey);
  std::string held;
  if (s == NATS_OK) {
    held = std::string(static_cast<const char*>(kvEntry_Value(entry)), static_cast<std::size_t>(kvEntry_ValueLen(entry)));
    kvEntry_Destroy(entry);
  } else if (s != NATS_NOT_FOUND) {
    nats_check(s, "reading key-value bucket " + bucket);
  }
  if (held != stream) {
    // Another stream's revisions (or a new bucket): they would outrank this
    // stream's, whose sequences start again at 1. Every node's catalog
    // mirrors the whole log as it replays it, so emptying loses nothing.
    if (!held.empty()) log_->warn("key-value bucket {} mirrors another stream: emptied", bucket);
    jsErrCode code = static_cast<jsErrCode>(0);
    nats_check(js_PurgeStream(client.js(), ("KV_" + bucket).c_str(), nullptr, &code), "emptying key-value bucket " + bucket, code);
    std::uint64_t rev = 0;
    nats_check(kvStore_PutString(&rev, bucket_.get(), kStreamKey, stream.c_str()), "writing key-value bucket " + bucket);
  }
  writer_ = std::thread([this] { run(); });
}

NamespaceMirror::~NamespaceMirror() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

void NamespaceMirror::applied(std::uint64_t sequence, std::string_view record, const service::Service& catalog) {
  Change c;
  c.revision = sequence;
  std::string prefix = std::string(kRevisionPrefix) + std::to_string(sequence);
  try {
    const auto type = service::record_type(record);
    if (type != service::RecordType::create && type != service::RecordType::patch && type != service::RecordType::remove) return;
    const service::AdminRecord r = service::decode_admin(record);
    std::string name(r.name);
    if (type == service::RecordType::create) {
      name = service::parse_namespace_spec(r.config_json, service::ServiceLimits{}, service::SpecSource::stored).config.name;
    }
    // What the catalog did with it: a create of a name that exists, or a
    // patch or delete of one that does not, changed nothing.
    const auto now = catalog.config_revision(name);
    if (type == service::RecordType::remove ? now.has_value() : now != sequence) return;
    c.key = namespace_key(name);
    if (type == service::RecordType::remove) {
      c.value = prefix + R"(,"deleted":true})";
    } else {
      c.value = prefix + R"(,"config":)";
      c.value += r.config_json;
      c.value += '}';
    }
  } catch (const std::exception& e) {
    log_->warn("namespace mirror: record {} is not mirrored ({})", sequence, e.what());
    return;
  }
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(c));
  }
  cv_.notify_all();
}

bool NamespaceMirror::stopping() {
  std::lock_guard lock(mu_);
  return stop_;
}

void NamespaceMirror::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    // Stopping: what is still queued is left to the other nodes' mirrors
    // (or this one's next start), not waited for on a NATS that may be gone.
    if (stop_) break;
    Change c = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    write(c);
    lock.lock();
  }
}

void NamespaceMirror::write(const Change& c) {
  for (int attempt = 0; attempt < kAttempts && !stopping(); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
    kvEntry* entry = nullptr;
    natsStatus s = kvStore_Get(&entry, bucket_.get(), c.key.c_str());
    std::uint64_t last = 0;  // the entry's revision in the bucket (0: none, or deleted)
    if (s == NATS_OK) {
      const auto held = mirrored_revision(std::string_view(static_cast<const char*>(kvEntry_Value(entry)), kvEntry_ValueLen(entry)));
      last = kvEntry_Revision(entry);
      kvEntry_Destroy(entry);
      if (held && *held >= c.revision) return;  // it holds this change or a newer one
    } else if (s != NATS_NOT_FOUND) {
      log_->warn("namespace mirror: reading {} failed ({}); retrying", c.key, natsStatus_GetText(s));
      continue;
    }
    std::uint64_t rev = 0;
    const auto* data = c.value.data();
    const int len = static_cast<int>(c.value.size());
    s = last == 0 ? kvStore_Create(&rev, bucket_.get(), c.key.c_str(), data, len)
                  : kvStore_Update(&rev, bucket_.get(), c.key.c_str(), data, len, last);
    if (s == NATS_OK) return;
    // Another node wrote first (the entry's revision moved), or the bucket
    // failed: read it again.
  }
  if (stopping()) return;  // left to the other nodes and to this one's next start
  log_->warn("namespace mirror: {} not mirrored at revision {} after {} attempts (another node may have; the log is the source)", c.key,
             c.revision, kAttempts);
}

}  // namespace ebb::cluster
