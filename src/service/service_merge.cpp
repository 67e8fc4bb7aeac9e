// Service::merge (CMS.MERGE): a namespace's counts replaced by a weighted
// sum of namespaces' counts, logged as its new state.
//
// Why a state record and not "merge a and b into c": each namespace's
// checkpoint has its own log position, so a replay may start with a source
// already past the merge. The record carries the result instead.
#include <map>
#include <optional>

#include "ebb/core/error.hpp"
#include "ebb/service/log_records.hpp"
#include "ebb/storage/segment_format.hpp"
#include "service_cluster.hpp"
#include "service_state.hpp"

namespace ebb::service {

void Service::merge(const std::string& destination, std::span<const std::string> sources, std::span<const double> weights) {
  if (s_->options.cluster) cluster_mode::not_served("CMS.MERGE");
  State& s = *s_;
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (sources.size() != weights.size()) throw std::logic_error("merge: one weight per source");
  // Every namespace once, in name order: the lock order.
  std::map<std::string_view, EntryPtr> involved;
  involved.emplace(destination, s.require(destination, "destination"));
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!involved.contains(sources[i])) involved.emplace(sources[i], s.require(sources[i], "sources[" + std::to_string(i) + "]"));
  }
  std::vector<std::unique_lock<std::shared_mutex>> writing;
  std::vector<std::shared_lock<std::shared_mutex>> reading;
  for (auto& [name, entry] : involved) {
    if (name == destination) writing.emplace_back(entry->mu);
    else reading.emplace_back(entry->mu);
    if (entry->deleted) throw ServiceError(ErrorKind::not_found, "namespace_not_found", "namespace '" + entry->name + "' was deleted");
  }
  NamespaceEntry& dest = *involved.at(destination);
  std::vector<const engine::Namespace*> from;
  for (const auto& name : sources) from.push_back(&involved.at(name)->ns);
  // Built aside (what can fail, fails here and changes nothing), logged,
  // then adopted: the log never holds a merge the namespace did not take.
  std::optional<engine::Namespace> sum;
  try {
    sum.emplace(dest.ns.summed(from, weights));
  } catch (const CountOverflow& e) {
    throw invalid("sum_overflow", e.what());
  } catch (const InvalidArgument& e) {
    throw invalid("not_summable", e.what());
  }
  // The sources are read: their writers need not wait for the log.
  reading.clear();
  const std::string payload = encode_admin({RecordType::state, destination, {}, sum->serialize_state()});
  if (payload.size() > storage::kMaxRecordBytes) {
    throw invalid("state_too_large", "destination: its state, " + std::to_string(payload.size()) +
                                         " bytes, is more than one log record holds (1 GiB): a merge logs the whole sketch");
  }
  const std::uint64_t lsn = s.append(payload);
  dest.ns.adopt(std::move(*sum));
  dest.applied_lsn = lsn;
  dest.changed();
  writing.clear();
  s.wait(lsn);
}

}  // namespace ebb::service
