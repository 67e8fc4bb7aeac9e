// Service::merge (CMS.MERGE): a namespace's counts replaced by a weighted
// sum of namespaces' counts.
//
// A single node logs the result, the destination's new state: each
// namespace's checkpoint has its own log position, so a replay may start
// with a source already past the merge, and "merge a and b into c" could
// not be replayed. A cluster logs the operation instead (apply_merge): a
// partition applies every record in one order and checkpoints all its
// namespaces at one position, so the operation replays exactly, and each
// partition sums its own part of the sources (their items are its alone).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ebb/core/error.hpp"
#include "ebb/service/log_records.hpp"
#include "ebb/storage/segment_format.hpp"
#include "service_state.hpp"

namespace ebb::service {
namespace {

// The namespaces of a merge, each once, locked in name order (the lock
// order): the destination exclusively when it is written, the rest shared.
struct MergeLocks {
  // Each involved namespace's long_holds, from before its lock is taken to
  // after it is released (declared first: destroyed last).
  struct LongHold {
    EntryPtr entry;
    explicit LongHold(EntryPtr e) : entry(std::move(e)) { entry->long_holds.fetch_add(1, std::memory_order_relaxed); }
    LongHold(LongHold&& o) noexcept = default;  // (the moved-from one holds nothing)
    LongHold& operator=(LongHold&&) = delete;
    ~LongHold() {
      if (entry) entry->long_holds.fetch_sub(1, std::memory_order_relaxed);
    }
  };
  std::vector<LongHold> holds;
  std::map<std::string_view, EntryPtr> involved;
  std::vector<std::unique_lock<std::shared_mutex>> writing;
  std::vector<std::shared_lock<std::shared_mutex>> reading;
  std::string missing;  // a namespace that is not there, or deleted ("": none)

  NamespaceEntry& entry(std::string_view name) const { return *involved.at(name); }
  std::vector<const engine::Namespace*> namespaces(std::span<const std::string> names) const {
    std::vector<const engine::Namespace*> out;
    for (const auto& name : names) out.push_back(&entry(name).ns);
    return out;
  }
};

// `lookup(name, field)`: the entry, or null (then `missing` names it), or
// it throws (the caller's error for an unknown name). `redis_type`: the
// Redis key type every namespace must have (one made over HTTP has none
// and passes; else wrong_type), read under the locks: a CMS.MERGE checks
// its keys' types as it parses, and another connection may delete a key
// and make it again as a top-K before the merge runs.
template <typename Lookup>
MergeLocks lock_merge(const std::string& destination, std::span<const std::string> sources, bool write_destination,
                      std::optional<RedisKey::Type> redis_type, Lookup&& lookup) {
  MergeLocks m;
  auto add = [&](const std::string& name, const std::string& field) {
    if (m.involved.contains(name)) return true;
    EntryPtr e = lookup(name, field);
    if (!e) {
      m.missing = name;
      return false;
    }
    m.holds.emplace_back(e);
    m.involved.emplace(name, std::move(e));
    return true;
  };
  if (!add(destination, "destination")) return m;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!add(sources[i], "sources[" + std::to_string(i) + "]")) return m;
  }
  for (auto& [name, entry] : m.involved) {
    if (write_destination && name == destination) m.writing.emplace_back(entry->mu);
    else m.reading.emplace_back(entry->mu);
    if (entry->deleted) {
      m.missing = entry->name;
      break;
    }
    require_redis_type(*entry, redis_type);
  }
  return m;
}

// The engine's refusals of a sum, as the service's.
template <typename Work>
auto summing(Work&& work) {
  try {
    return work();
  } catch (const CountOverflow& e) {
    throw invalid("sum_overflow", e.what());
  } catch (const InvalidArgument& e) {
    throw invalid("not_summable", e.what());
  }
}

// Cluster mode: checked against the catalog (configurations, shapes) and
// the sources' weights as every partition counted them, as a single node
// checks, then published as a record that every partition applies to its
// own part (Service::apply_merge) if no namespace changed meanwhile.
void merge_in_cluster(Service::State& s, const std::string& destination, std::span<const std::string> sources,
                      std::span<const double> weights, std::optional<RedisKey::Type> redis_type) {
  ClusterLink& link = *s.options.cluster;
  if (const std::string down = link.failure(); !down.empty()) {
    throw ServiceError(ErrorKind::unavailable, "cluster_unreachable", down + "; nothing was merged, retry");
  }
  // The catalog's copies count nothing: what they check is the
  // configurations, and the revisions every partition will check again.
  Service::ConfigRevisions configs;
  auto check = [&](std::span<const double> totals) {
    const auto m = lock_merge(destination, sources, false, redis_type, [&](const std::string& name, const std::string& field) {
      return s.require_known(name, field);  // (created on another node a moment ago)
    });
    if (!m.missing.empty()) throw deleted_namespace(m.missing);
    summing([&] { m.entry(destination).ns.check_summable(m.namespaces(sources), weights, totals); });
    configs.clear();
    for (const auto& [name, e] : m.involved) configs.emplace(name, e->config_lsn);
  };
  check({});
  // A sum reaching 2^53 is refused before anything is logged, as on a
  // single node: the sources' weights summed over every partition.
  const std::set<std::string> distinct(sources.begin(), sources.end());
  const std::vector<std::string> names(distinct.begin(), distinct.end());
  engine::Coverage coverage;
  const auto counted = link.stats(names, coverage);
  if (coverage.partial()) throw partitions_missing(coverage.missing, "the merge cannot be checked against its counts; nothing was merged (try again)");
  std::map<std::string_view, double> weight_of;
  for (const auto& [name, stats] : counted) weight_of[name] = stats.weight;
  std::vector<double> totals;
  for (const auto& source : sources) totals.push_back(weight_of[source]);
  check(totals);

  const std::uint64_t at = link.publish_merge(destination, sources, weights, configs);
  // This node's catalog has passed the record: a namespace changed before
  // it voided the merge in every partition.
  for (const auto& [name, revision] : configs) {
    std::optional<std::uint64_t> now;
    if (const EntryPtr e = s.find(name)) {
      std::shared_lock lock(e->mu);
      if (!e->deleted) now = e->config_lsn;
    }
    if (now == revision) continue;
    if (now && *now < at) {
      throw ServiceError(ErrorKind::unavailable, "namespace_changed",
                         "namespace '" + name + "' changed before the merge was logged: nothing was merged; retry");
    }
    throw ServiceError(ErrorKind::unavailable, "outcome_unknown",
                       "namespace '" + name + "' changed while the merge was logged; it was merged only if the change came after it "
                       "(outcome unknown): check the destination before you retry");
  }
}

}  // namespace

void Service::merge(const std::string& destination, std::span<const std::string> sources, std::span<const double> weights,
                    std::optional<RedisKey::Type> redis_type) {
  State& s = *s_;
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (sources.size() != weights.size()) throw std::logic_error("merge: one weight per source");
  if (s.options.cluster) return merge_in_cluster(s, destination, sources, weights, redis_type);
  auto m = lock_merge(destination, sources, true, redis_type,
                      [&](const std::string& name, const std::string& field) { return s.require(name, field); });
  if (!m.missing.empty()) throw deleted_namespace(m.missing);
  NamespaceEntry& dest = m.entry(destination);
  // Built aside (what can fail, fails here and changes nothing), logged,
  // then adopted: the log never holds a merge the namespace did not take.
  auto sum = summing([&] { return dest.ns.summed(m.namespaces(sources), weights); });
  // The sources are read: their writers need not wait for the log.
  m.reading.clear();
  const std::string payload = encode_admin({RecordType::state, destination, {}, sum.serialize_state()});
  if (payload.size() > storage::kMaxRecordBytes) {
    throw invalid("state_too_large", "destination: its state, " + std::to_string(payload.size()) +
                                         " bytes, is more than one log record holds (1 GiB): a merge logs the whole sketch");
  }
  const std::uint64_t lsn = s.append(payload);
  dest.ns.adopt(std::move(sum));
  dest.applied_lsn = lsn;
  dest.changed();
  m.writing.clear();
  s.wait(lsn);
}

bool Service::apply_merge(std::uint64_t lsn, const std::string& destination, std::span<const std::string> sources, std::span<const double> weights,
                          const ConfigRevisions& configs) {
  State& s = *s_;
  if (sources.size() != weights.size()) throw std::logic_error("apply_merge: one weight per source");
  const bool names_all = configs.contains(destination) && std::all_of(sources.begin(), sources.end(), [&](const std::string& n) { return configs.contains(n); });
  if (!names_all) {
    s.log->error("record {}: the merge into '{}' does not name the configuration of every namespace it reads (not a record ebb wrote); skipped",
                 lsn, destination);
    return false;
  }
  if (!s.configs_hold(configs)) {
    s.log->warn("record {}: a namespace of the merge into '{}' changed since the merge was checked; nothing was merged", lsn, destination);
    return false;
  }
  auto m = lock_merge(destination, sources, true, std::nullopt,
                      [&](const std::string& name, const std::string&) { return s.find(name); });
  if (!m.missing.empty()) {
    s.log->warn("record {}: the merge into '{}' names namespace '{}', which is not here; nothing was merged", lsn, destination, m.missing);
    return false;
  }
  NamespaceEntry& dest = m.entry(destination);
  if (dest.applied_lsn >= lsn) return true;  // (counted already: a state from a checkpoint past it)
  std::optional<engine::Namespace> sum;
  try {
    sum.emplace(dest.ns.summed(m.namespaces(sources), weights));
  } catch (const InvalidArgument& e) {
    // The writer checked it; only counts that came since (past 2^53) can
    // refuse it now, in this partition alone.
    s.log->error("record {}: the merge into '{}' is refused here ({}); this part of the destination is unchanged", lsn, destination, e.what());
    return false;
  }
  dest.ns.adopt(std::move(*sum));
  dest.applied_lsn = lsn;
  dest.changed();
  return true;
}

}  // namespace ebb::service
