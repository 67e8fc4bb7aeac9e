// Cluster mode's admin and query paths (service_cluster.hpp).
#include "service_cluster.hpp"

#include <algorithm>
#include <cstdio>
#include <future>
#include <map>
#include <random>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"

namespace ebb::service::cluster_mode {
namespace {

ServiceError exists(const std::string& name) {
  return {ErrorKind::conflict, "namespace_exists", "name: namespace '" + name + "' already exists"};
}

// What a node holding every partition of a namespace plans for it: each
// partition a share of its sketches, but all of its candidates (and all of
// a `memory` budget, which keys may fill).
std::uint64_t planned_on_one_node(const Service::State& s, const engine::NamespaceConfig& config) {
  const std::uint32_t parts = std::max<std::uint32_t>(1, s.options.sketch_share);
  return parts * Service::State::planned_bytes(engine::partition_share(config, parts));
}

// --max-memory in cluster mode: a node must be able to hold every partition
// of every namespace (the others may die). `need` more than `freed` must fit
// with what the catalog's namespaces plan; 507 otherwise, as on a single
// node. (Two creates on two nodes at once may both pass.)
void check_budget(const Service::State& s, std::uint64_t need, std::uint64_t freed = 0) {
  const std::uint64_t budget = s.options.limits.max_memory;
  if (budget == 0 || need <= freed) return;
  std::uint64_t have = 0;
  for (const auto& e : s.all_entries()) {
    std::shared_lock lock(e->mu);
    if (!e->deleted) have += planned_on_one_node(s, e->spec.config);
  }
  have -= std::min(have, freed);
  if (have + need > budget) {
    throw ServiceError(ErrorKind::insufficient_storage, "insufficient_storage",
                       "the namespace needs " + std::to_string(need >> 20) + " MiB more; " + std::to_string(have >> 20) + " MiB of the " +
                           std::to_string(budget >> 20) + " MiB budget (--max-memory) are taken");
  }
}

// While a node below protocol `level` is live (a rolling upgrade), a
// change it `cannot` read waits: 503 cluster_upgrading, nothing `what`.
void refuse_while_older(ClusterLink& link, int level, const std::string& cannot, const char* what, const std::string& advice = "") {
  if (const std::string older = link.older_nodes(level); !older.empty()) {
    throw ServiceError(ErrorKind::unavailable, "cluster_upgrading",
                       "node(s) " + older + " run an older ebb, which cannot " + cannot + ": nothing was " + what +
                           "; retry once every node runs this build" + advice);
  }
}

// A configuration with an accuracy audit is written with fields an older
// build refuses: during a rolling upgrade it waits.
void refuse_audit_while_upgrading(ClusterLink& link, const engine::NamespaceConfig& c, const char* what) {
  if (c.audit_resize) refuse_while_older(link, ClusterLink::kLevelResize, "read audit_resize", what);
  if (!engine::AccuracyAudit::enabled(c)) return;
  refuse_while_older(link, ClusterLink::kLevelAudit, "read a namespace with an accuracy audit", what,
                     " (or create it with \"audit_sample\": 0 and \"audit_top\": 0)");
}

}  // namespace

NamespaceSpec create(Service::State& s, NamespaceSpec spec) {
  ClusterLink& link = *s.options.cluster;
  const std::string name = spec.config.name;
  link.catch_up();
  if (s.find(name)) throw exists(name);
  {
    std::shared_lock lock(s.map_mu);
    if (s.live_entries() >= s.options.limits.max_namespaces) {
      throw invalid("namespace_limit",
                    "name: the cluster holds its limit of " + std::to_string(s.options.limits.max_namespaces) + " namespaces (--max-namespaces)");
    }
  }
  check_budget(s, planned_on_one_node(s, spec.config));
  refuse_audit_while_upgrading(link, spec.config, "created");
  const std::uint64_t position = link.publish_admin(encode_admin({RecordType::create, {}, write_namespace_spec(spec, true), {}}));
  // Applied here before publish_admin returned. Another node's create of the
  // same name that came first in the log is the one that holds.
  auto e = s.find(name);
  if (!e) throw ServiceError(ErrorKind::unavailable, "not_applied", "name: namespace '" + name + "' was deleted as it was created; retry");
  std::shared_lock lock(e->mu);
  if (e->created_lsn != position) throw exists(name);  // (not applied_lsn: a batch or a patch since moves it)
  return e->spec;
}

NamespaceSpec patch(Service::State& s, const std::string& name, const std::function<NamespaceSpec(const NamespaceSpec&)>& edit) {
  ClusterLink& link = *s.options.cluster;
  link.catch_up();
  auto e = s.require(name, "name");
  NamespaceSpec next;
  std::uint64_t before = 0;
  NamespaceSpec current;
  {
    std::shared_lock lock(e->mu);
    next = checked_patch(*e, edit);  // checked whole before it is logged: every partition applies it
    before = planned_on_one_node(s, e->spec.config);
    current = e->spec;
  }
  // Nothing to change: nothing published (a new revision would answer
  // batches in flight 503; two nodes' audits asking for one width).
  if (write_namespace_spec(next, true) == write_namespace_spec(current, true)) return current;
  const engine::NamespaceConfig& was = current.config;
  check_budget(s, planned_on_one_node(s, next.config), before);
  refuse_audit_while_upgrading(link, next.config, "changed");
  if (next.config.sketch.width != was.sketch.width || next.config.window_sketch_width != was.window_sketch_width) {
    refuse_while_older(link, ClusterLink::kLevelResize, "widen a namespace's sketches", "changed");
  }
  link.publish_admin(encode_admin({RecordType::patch, name, write_namespace_spec(next, true), {}}));
  auto now = s.require(name, "name");
  std::shared_lock lock(now->mu);
  return now->spec;
}

void remove(Service::State& s, const std::string& name) {
  ClusterLink& link = *s.options.cluster;
  link.catch_up();
  s.require(name, "name");
  link.publish_admin(encode_admin({RecordType::remove, name, {}, {}}));
}

engine::TopKAnswer top(const Service::State& s, const std::string& name, const std::optional<engine::ViewSpec>& view,
                       std::optional<std::size_t> k, std::optional<double> as_of, std::optional<RedisKey::Type> redis_type) {
  auto e = s.require_known(name, "namespace");
  require_redis_type(*e, redis_type);
  engine::TopKAnswer frame;
  std::size_t namespace_k = 0;
  {
    // The catalog's copy holds no counts: asking it checks the view, k and
    // the timestamp as a single node would, before any partition is asked.
    std::shared_lock lock(e->mu);
    frame = on_query([&] { return e->ns.top(view, k); });
    if (as_of) on_query([&] { return e->ns.top_at(view, k, *as_of); });
    namespace_k = e->spec.config.k;
  }
  // Every partition is asked for the namespace's k when none is given, and
  // the merge cuts there too.
  auto merged = s.options.cluster->top(name, view, k ? *k : namespace_k, as_of);
  if (merged.coverage.missing.size() < merged.coverage.partitions) return merged;
  // No partition answered: the view's frame, empty, and saying so.
  frame.coverage = std::move(merged.coverage);
  return frame;
}

std::vector<engine::PointAnswer> counts(const Service::State& s, const std::string& name, std::span<const std::string> items,
                                        const std::optional<engine::ViewSpec>& view, engine::TopKAnswer& view_answer,
                                        std::optional<double> as_of, std::optional<RedisKey::Type> redis_type) {
  auto e = s.require_known(name, "namespace");
  {
    std::shared_lock lock(e->mu);
    require_redis_type(*e, redis_type);  // (as this node's catalog has it)
    check_item_ids(e->ns.config(), items);
    on_query([&] { return e->ns.top(view, 1); });
    if (as_of) on_query([&] { return e->ns.top_at(view, 1, *as_of); });
  }
  auto answers = s.options.cluster->counts(name, items, view, as_of);
  view_answer = std::move(answers.view_answer);
  return std::move(answers.answers);
}

std::vector<engine::PointAnswer> counts_or_missing(const Service::State& s, const std::string& name, const std::vector<std::string>& items,
                                                   const std::optional<engine::ViewSpec>& view, std::optional<double> as_of,
                                                   engine::Coverage& coverage) {
  if (items.empty()) return {};
  try {
    engine::TopKAnswer view_answer;
    return counts(s, name, items, view, view_answer, as_of);
  } catch (const ServiceError& e) {
    if (e.kind() != ErrorKind::unavailable) throw;
  }
  // Some partition did not answer: ask each partition's items apart, so
  // that those answered count and only the others are missing.
  std::vector<engine::PointAnswer> points(items.size());
  const std::uint32_t parts = std::max<std::uint32_t>(1, s.options.sketch_share);
  std::map<std::uint32_t, std::vector<std::size_t>> by_partition;
  for (std::size_t i = 0; i < items.size(); ++i) by_partition[partition_of(hash_key(items[i]), parts)].push_back(i);
  for (const auto& [partition, indices] : by_partition) {
    std::vector<std::string> own;
    for (auto i : indices) own.push_back(items[i]);
    try {
      engine::TopKAnswer view_answer;
      auto answered = counts(s, name, own, view, view_answer, as_of);
      for (std::size_t j = 0; j < indices.size() && j < answered.size(); ++j) points[indices[j]] = std::move(answered[j]);
    } catch (const ServiceError& again) {
      if (again.kind() != ErrorKind::unavailable) throw;
      engine::Coverage one;
      one.missing.push_back(partition);
      add_missing(coverage, one);
    }
  }
  return points;
}

std::vector<engine::PointAnswer> top_and_counts(const Service::State& s, const std::string& name, const std::optional<engine::ViewSpec>& view,
                                                std::size_t depth, const std::vector<std::string>& items, std::optional<double> as_of,
                                                engine::TopKAnswer& list, engine::Coverage& item_coverage) {
  auto counted = std::async(std::launch::async, [&] { return counts_or_missing(s, name, items, view, as_of, item_coverage); });
  std::exception_ptr failed;
  try {
    list = top(s, name, view, depth, as_of);
  } catch (...) {
    failed = std::current_exception();
  }
  std::vector<engine::PointAnswer> points;
  try {
    points = counted.get();
  } catch (...) {
    if (!failed) throw;
  }
  if (failed) std::rethrow_exception(failed);
  return points;
}

void add_missing(engine::Coverage& into, const engine::Coverage& from) {
  auto& missing = into.missing;
  missing.insert(missing.end(), from.missing.begin(), from.missing.end());
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
}

engine::TrendingAnswer trending(const Service::State& s, const std::string& name, std::optional<double> short_half_life,
                                std::optional<double> long_half_life, std::optional<std::size_t> k, double min_count,
                                std::optional<RedisKey::Type> redis_type) {
  auto e = s.require_known(name, "namespace");
  require_redis_type(*e, redis_type);
  engine::TrendingAnswer frame;
  std::size_t want = 0;
  {
    // The catalog's copy checks the half-lives, k and min_count as a single
    // node would, and says which half-lives the defaults are.
    std::shared_lock lock(e->mu);
    frame = on_query([&] { return e->ns.trending(short_half_life, long_half_life, k, min_count); });
    want = k ? *k : e->spec.config.k;
  }
  auto merged = s.options.cluster->trending(name, frame.short_view.half_life, frame.long_view.half_life, want, min_count);
  if (merged.coverage.missing.size() < merged.coverage.partitions) return merged;
  frame.coverage = std::move(merged.coverage);
  return frame;
}

Commit incr(Service::State& s, std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at) {
  s.refuse_when_overloaded("writes");
  if (const std::string down = s.options.cluster->failure(); !down.empty()) {
    throw ServiceError(ErrorKind::unavailable, "cluster_unreachable", down + "; nothing was written, retry");
  }
  // A new distribution's rate and decay go with the record, as a single
  // node logs them: every partition replica creates it alike.
  const DistributionIncrRecord record{received_at, distribution, n, s.options.distributions.default_rate, {fields.begin(), fields.end()},
                                      s.options.distributions.default_decay};
  // The distribution lives in its partition, not here: this store is
  // empty, so what it checks is the increment itself (names, N, time);
  // the partition's owner checks the bins it would have.
  s.check_increment(distribution, fields, n, received_at);
  s.options.cluster->check_incr(distribution, fields, n, received_at);
  std::string payload;
  encode_distribution_incr(payload, record);
  thread_local std::mt19937_64 random{std::random_device{}()};
  char id[40];
  std::snprintf(id, sizeof id, "d%016llx%016llx", static_cast<unsigned long long>(random()), static_cast<unsigned long long>(random()));
  const std::uint64_t ticket = s.options.cluster->publish_record(hash_key(distribution), std::move(payload), id);
  ++s.distribution_increments;
  return Commit{ticket};
}

}  // namespace ebb::service::cluster_mode
