// Hot keys (seed 004): the evaluator thread, GET /hot-keys, and the
// listeners of GET /hot-keys/stream. The detection itself is the engine's
// (engine/hot_key_detector.hpp); here it is scheduled and delivered.
#include <algorithm>
#include <chrono>

#include "ebb/core/hash.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/service/service.hpp"
#include "service_cluster.hpp"
#include "service_state.hpp"

namespace ebb::service {
namespace {

// Transitions logged one by one per evaluation, and the bytes of a key a
// log line shows.
constexpr std::size_t kLoggedChanges = 20, kLoggedKeyBytes = 256;

void notify(NamespaceEntry& e, const HotKeyNotice& notice) {
  std::erase_if(e.subscribers, [](const auto& sub) { return sub->cancelled.load(); });
  for (const auto& sub : e.subscribers) sub->listener(notice);
}

// Evaluates one namespace's detector (the caller holds notice_mu); false
// when detection is off.
bool evaluate(Service::State& s, NamespaceEntry& e) {
  std::vector<engine::HotKeyEvent> changes;
  {
    std::unique_lock lock(e.mu);
    const auto* d = e.ns.hot_keys();
    if (e.deleted || !d) return false;
    // Rates only fall between batches: with nothing new counted and no key
    // hot, nothing can change (an idle namespace costs no evaluation).
    const std::uint64_t version = e.version.load(std::memory_order_acquire);
    if (version == e.evaluated_version && d->hot().empty() && d->evaluated_at() > 0) return true;
    changes = e.ns.evaluate_hot_keys();
    e.evaluated_version = version;
  }
  deliver_hot_keys(s, e, changes);
  return true;
}

// The namespace's detector, for a caller holding e.mu: not_found once the
// namespace is deleted, invalid "hot_keys_off" while detection is off.
const engine::HotKeyDetector& detector_of(const NamespaceEntry& e) {
  if (e.deleted) throw ServiceError(ErrorKind::not_found, "namespace_not_found", "namespace: no namespace '" + e.name + "'");
  const auto* d = e.ns.hot_keys();
  if (!d) {
    throw invalid("hot_keys_off", "namespace: '" + e.name + "' has no hot-key detection; set one with PATCH /namespaces/" + e.name +
                                      " {\"hot_key_threshold\": <events/s>}");
  }
  return *d;
}

// Cluster mode (the caller holds e.notice_mu): what changed in the
// partitions' merged hot keys since the namespace's streams were last told.
// A key of a partition that did not answer stays as it was; one that left
// the list cooled, with its rate now. Throws what asking them throws.
std::vector<HotKeyNotice> cluster_changes(Service::State& s, NamespaceEntry& e) {
  std::vector<std::string> watch;
  for (const auto& [key, _] : e.cluster_hot) watch.push_back(key);
  const HotKeysAnswer now = s.options.cluster->hot_keys(e.name, watch);
  const std::set<std::uint32_t> missing(now.coverage.missing.begin(), now.coverage.missing.end());
  std::vector<HotKeyNotice> notices;
  std::set<std::string_view> hot;
  for (const auto& k : now.items) {
    hot.insert(k.key);
    auto it = e.cluster_hot.find(k.key);
    if (it == e.cluster_hot.end()) {
      notices.push_back({HotKeyNotice::Kind::hot, k});
      e.cluster_hot.emplace(k.key, k);
    } else {
      it->second.rate = k.rate;
    }
  }
  for (auto it = e.cluster_hot.begin(); it != e.cluster_hot.end();) {
    if (hot.contains(it->first) || missing.contains(partition_of(hash_key(it->first), now.coverage.partitions))) {
      ++it;
      continue;
    }
    engine::HotKey cooled = it->second;
    for (const auto& w : now.watched) {
      if (w.key == cooled.key) cooled.rate = w.rate;
    }
    notices.push_back({HotKeyNotice::Kind::cool, std::move(cooled)});
    it = e.cluster_hot.erase(it);
  }
  e.cluster_hot_known = true;
  return notices;
}

// Cluster mode, the evaluator thread (holding e.notice_mu): the streams
// hear the changes, or the end of a deleted namespace. False once nobody
// listens.
bool poll_cluster(Service::State& s, NamespaceEntry& e) {
  std::erase_if(e.subscribers, [](const auto& sub) { return sub->cancelled.load(); });
  bool deleted = false, detecting = false;
  {
    std::shared_lock lock(e.mu);  // (the catalog follower changes them)
    deleted = e.deleted;
    detecting = e.ns.hot_keys() != nullptr;
  }
  if (!detecting && !deleted) {
    // Detection turned off (PATCH): every key cools, as on a single node;
    // the streams stay open, hearing heartbeats, until it is on again.
    for (const auto& [_, k] : e.cluster_hot) notify(e, {HotKeyNotice::Kind::cool, k});
    e.cluster_hot.clear();
    return !e.subscribers.empty();
  }
  if (e.subscribers.empty() || deleted) {
    if (deleted) notify(e, {HotKeyNotice::Kind::closed, {}});
    e.subscribers.clear();
    e.cluster_hot.clear();
    e.cluster_hot_known = false;
    return false;
  }
  try {
    for (const auto& n : cluster_changes(s, e)) notify(e, n);
  } catch (const std::exception& err) {
    s.log->warn("hot-key streams of namespace '{}': the partitions could not be asked ({}); next time", e.name, err.what());
  }
  return true;
}

HotKeysAnswer answer_of(const NamespaceEntry& e, const engine::HotKeyDetector& d) {
  return {e.name, d.options().threshold, d.options().half_life, d.options().cool_fraction, d.evaluated_at(), d.complete(), d.hot(), {}, {}};
}

}  // namespace

void deliver_hot_keys(Service::State& s, NamespaceEntry& e, const std::vector<engine::HotKeyEvent>& changes) {
  std::size_t logged = 0;
  for (const auto& c : changes) {
    (c.hot ? e.turned_hot : e.cooled).fetch_add(1, std::memory_order_relaxed);
    // The key itself goes to the log (JSON-quoted: a key may hold anything;
    // its first kLoggedKeyBytes, the hash names it whole), the metrics
    // carry its hash. A burst logs its first few changes and a count.
    if (logged < kLoggedChanges) {
      ++logged;
      std::string_view shown = c.key.key;
      if (shown.size() > kLoggedKeyBytes) {
        shown = shown.substr(0, kLoggedKeyBytes);
        while (!shown.empty() && (static_cast<unsigned char>(shown.back()) & 0xC0) == 0x80) shown.remove_suffix(1);  // a whole UTF-8 character
        if (!shown.empty() && static_cast<unsigned char>(shown.back()) >= 0xC0) shown.remove_suffix(1);
      }
      io::JsonWriter key;
      key.value(shown);
      s.log->info("hot key {}: namespace={} key={}{} key_hash={} rate={:.6g}/s", c.hot ? "hot" : "cooled", e.name, key.str(),
                  shown.size() < c.key.key.size() ? " (cut)" : "", key_hash_hex(c.key.key), c.key.rate);
    }
    notify(e, {c.hot ? HotKeyNotice::Kind::hot : HotKeyNotice::Kind::cool, c.key});
  }
  if (changes.size() > logged) {
    s.log->info("hot key: namespace={}: {} more keys turned hot or cooled in the same evaluation (not logged one by one; see the metrics)",
                e.name, changes.size() - logged);
  }
}


HotKeysAnswer Service::hot_keys(const std::string& name, std::span<const std::string> watch, std::optional<RedisKey::Type> redis_type) const {
  State& s = *s_;
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (s.options.cluster) {
    auto e = s.require_known(name, "namespace");
    require_redis_type(*e, redis_type);
    HotKeysAnswer frame;
    {
      // The catalog's detector counts nothing: it says whether detection is
      // on, and with what threshold.
      std::shared_lock lock(e->mu);
      frame = answer_of(*e, detector_of(*e));
    }
    auto merged = s.options.cluster->hot_keys(name);
    if (merged.coverage.missing.size() < merged.coverage.partitions) return merged;
    frame.coverage = std::move(merged.coverage);
    frame.complete = false;  // no partition answered: nothing is known
    return frame;
  }
  auto e = s.require(name, "namespace");
  require_redis_type(*e, redis_type);
  bool fresh = false;
  {
    std::shared_lock lock(e->mu);
    // Stale past the evaluator's interval (it is not running, or behind):
    // evaluated first, below.
    fresh = e->ns.now() - detector_of(*e).evaluated_at() <= s.options.hot_key_interval;
  }
  if (!fresh) {
    std::lock_guard notice(e->notice_mu);
    evaluate(s, *e);
  }
  std::shared_lock lock(e->mu);
  const auto& d = detector_of(*e);
  HotKeysAnswer answer = answer_of(*e, d);
  for (const auto& key : watch) {
    const bool hot = std::any_of(answer.items.begin(), answer.items.end(), [&](const engine::HotKey& k) { return k.key == key; });
    if (!hot) answer.watched.push_back({key, d.rate_of(key), 0});
  }
  return answer;
}

std::shared_ptr<void> Service::subscribe_hot_keys(const std::string& name, HotKeyListener listener) {
  State& s = *s_;
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto e = s.require_known(name, "namespace");
  {
    // hot_keys_off before too_many_streams: a stream asking for anomalies
    // alone goes on without hot keys, whatever the count.
    std::shared_lock lock(e->mu);
    detector_of(*e);
  }
  if (s.hot_key_streams.fetch_add(1) >= s.options.limits.max_hot_key_streams) {
    --s.hot_key_streams;
    throw ServiceError(ErrorKind::overloaded, "too_many_streams",
                       "the server holds its limit of " + std::to_string(s.options.limits.max_hot_key_streams) +
                           " hot-key and anomaly subscriptions (--max-hot-key-streams); retry later");
  }
  auto sub = std::make_shared<HotKeySubscriber>();
  sub->listener = std::move(listener);
  try {
    std::lock_guard notice(e->notice_mu);
    std::vector<engine::HotKey> now_hot;
    {
      std::shared_lock lock(e->mu);
      now_hot = detector_of(*e).hot();
    }
    if (s.options.cluster) {
      // The partitions' keys, as the namespace's streams were last told
      // (asked now when it has no stream yet: a failure is this request's);
      // the evaluator thread follows them.
      if (!e->cluster_hot_known) {
        for (const auto& n : cluster_changes(s, *e)) notify(*e, n);
      }
      e->subscribers.push_back(sub);
      now_hot.clear();
      for (const auto& [_, k] : e->cluster_hot) now_hot.push_back(k);
      std::sort(now_hot.begin(), now_hot.end(), [](const auto& a, const auto& b) { return a.rate != b.rate ? a.rate > b.rate : a.key < b.key; });
      std::lock_guard streams(s.cluster_streams_mu);
      if (std::find(s.cluster_streams.begin(), s.cluster_streams.end(), e) == s.cluster_streams.end()) s.cluster_streams.push_back(e);
    } else {
      e->subscribers.push_back(sub);
    }
    for (const auto& k : now_hot) sub->listener({HotKeyNotice::Kind::hot, k});
  } catch (...) {
    --s.hot_key_streams;
    throw;
  }
  // The handle: dropping it cancels the subscription (pruned at the next
  // delivery; never under the lock a listener may be called with).
  std::atomic<std::size_t>* streams = &s.hot_key_streams;
  return std::shared_ptr<void>(nullptr, [sub, streams](void*) {
    sub->cancelled = true;
    --*streams;
  });
}

std::size_t Service::evaluate_hot_keys() {
  State& s = *s_;
  if (!s.recovered) return 0;
  const double now = steady_seconds();
  const bool heartbeat = now - s.last_heartbeat >= kStreamHeartbeatSeconds;
  if (heartbeat) s.last_heartbeat = now;
  std::size_t evaluated = 0;
  if (s.options.cluster) {
    // The partitions evaluate; here, the namespaces with streams follow them.
    std::vector<EntryPtr> streamed;
    {
      std::lock_guard lock(s.cluster_streams_mu);
      streamed = s.cluster_streams;
    }
    for (const auto& e : streamed) {
      std::lock_guard notice(e->notice_mu);
      if (poll_cluster(s, *e)) {
        ++evaluated;
        if (heartbeat) notify(*e, {HotKeyNotice::Kind::heartbeat, {}});
        continue;
      }
      std::lock_guard lock(s.cluster_streams_mu);
      std::erase(s.cluster_streams, e);
    }
    return evaluated;
  }
  for (const auto& e : s.all_entries()) {
    std::lock_guard notice(e->notice_mu);
    if (evaluate(s, *e)) ++evaluated;
    if (heartbeat && !e->subscribers.empty()) notify(*e, {HotKeyNotice::Kind::heartbeat, {}});
  }
  return evaluated;
}

void Service::start_hot_keys() {
  State& s = *s_;
  if (s.options.hot_key_interval <= 0 || s.hot_key_evaluator.joinable()) return;
  s.hot_key_evaluator = s.every(s.options.hot_key_interval, "hot-key evaluation", [this] { evaluate_hot_keys(); });
  // At most once a second: a pass reads two windows per distinct question.
  s.anomaly_evaluator = s.every(std::max(1.0, s.options.hot_key_interval), "anomaly streams", [this] { evaluate_anomaly_watches(); });
}

}  // namespace ebb::service
