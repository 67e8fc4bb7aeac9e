#pragma once
// What the service needs of a cluster (ebb serve --nats; docs/cluster.md).
// In cluster mode the service keeps its rules (a batch is checked whole
// against the namespace's configuration before anything is written; admin
// changes are ordered with the events) but neither logs nor counts locally:
// an accepted batch goes to the cluster's log (JetStream), split by
// partition, and is counted by the owners of those partitions; queries are
// answered by them and merged here. The service layer knows this interface
// only; the cluster layer implements it on NATS.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/engine/answers.hpp"
#include "ebb/engine/distribution_store.hpp"
#include "ebb/engine/namespace.hpp"
#include "ebb/engine/trending.hpp"
#include "ebb/service/log_records.hpp"

namespace ebb::service {

struct HotKeysAnswer;  // service.hpp
struct HistorySeries;  // service.hpp

// POST /counts over the partitions: each item from its own partition.
struct ClusterPoints {
  std::vector<engine::PointAnswer> answers;  // request order, each with its coverage
  engine::TopKAnswer view_answer;            // the view block, when there are no items; its coverage covers all
};

// A namespace's clock at a batch: the event clock the batch was checked
// against (NaN: no event yet; for a wall-clock namespace with windows the
// newest event time before the batch, which only an event clock reads) and
// the newest event time once it is counted. The commit carries it for event-clock
// namespaces and namespaces with windows: every partition checks its part
// against `before`, as the writing node did, and moves its newest time to
// `after` (its event clock, its windows' buckets), whether it has a part or
// not, so that all of them keep the one clock a single node would.
struct EventClockCheck {
  std::string ns;
  double before = 0, after = 0;
  // An event clock (not written: the namespace's configuration says it):
  // a node of an older build, which cannot read clocks, cannot count it.
  bool event_clock = false;
  friend bool operator==(const EventClockCheck& a, const EventClockCheck& b) {
    auto same = [](double x, double y) { return x == y || (x != x && y != y); };
    return a.ns == b.ns && same(a.before, b.before) && same(a.after, b.after);
  }
};

class ClusterLink {
 public:
  virtual ~ClusterLink() = default;

  // Publishes a batch the service accepted: `hashes[g][i]` is hash_key()
  // of group g's event i, `configs` the configuration revision each group
  // was checked against. Returns a ticket for when_published (never 0).
  // `batch_id` names the batch in the log (retries of one idempotency key
  // share it, so the log counts them once). Must not block on the network.
  // `clocks`: the batch's event-clock namespaces' clocks (EventClockCheck).
  virtual std::uint64_t publish_batch(const BatchRecord& record, const std::vector<std::vector<std::uint64_t>>& hashes,
                                      const std::map<std::string, std::uint64_t, std::less<>>& configs, const std::string& batch_id,
                                      std::vector<EventClockCheck> clocks = {}) = 0;
  // Publishes one record (a distribution's increment) in the partition of
  // `key_hash`, committed like a batch of one part; a ticket as above.
  virtual std::uint64_t publish_record(std::uint64_t key_hash, std::string payload, const std::string& batch_id) = 0;
  // done("") once every part and the commit of the batch are acknowledged
  // by the log, or done(reason): a whole sentence for the client, saying
  // whether the batch may yet count; may run on another thread.
  virtual void when_published(std::uint64_t ticket, std::function<void(const std::string& error)> done) = 0;

  // Publishes an admin record (create / patch / remove, log_records.hpp)
  // and returns once this node's catalog has applied it: its position in
  // the log. Throws ServiceError unavailable when the log cannot take it.
  virtual std::uint64_t publish_admin(std::string_view payload) = 0;
  // The live nodes of a build below `level`, comma-separated ("": none): a
  // record they cannot read (a namespace with an accuracy audit: level 2;
  // a resize or audit_resize: 3) is refused meanwhile.
  static constexpr int kLevelAudit = 2, kLevelResize = 3;
  virtual std::string older_nodes(int level = kLevelAudit) const = 0;
  // CMS.MERGE: publishes the merge of `sources` (each with its weight) into
  // `destination` on the commit subject, ordered with the batches, checked
  // against `configs` (the configuration revision of every namespace it
  // names); every partition sums its own part of the sources into its part
  // of the destination, if those configurations still hold there. Returns
  // once this node's catalog has passed it: its position in the log.
  // ServiceError unavailable when the log does not take it (outcome unknown).
  virtual std::uint64_t publish_merge(const std::string& destination, std::span<const std::string> sources, std::span<const double> weights,
                                      const std::map<std::string, std::uint64_t, std::less<>>& configs) = 0;
  // Waits (bounded) until the catalog has applied the log as it stands
  // now, so a namespace another node just created is known here. Returns
  // false when the deadline passed first.
  virtual bool catch_up() = 0;

  // Queries, read-your-writes: every owner first applies the log up to
  // where it stands when the question arrives (bounded by the deadline).
  // Answers carry their Coverage (engine/answers.hpp): a partition that
  // could not answer makes them partial, never silently short.
  // `as_of`: as the partitions held it then (their memory, else their
  // history's snapshots).
  virtual engine::TopKAnswer top(const std::string& ns, const std::optional<engine::ViewSpec>& view, std::optional<std::size_t> k,
                                 std::optional<double> as_of = std::nullopt) = 0;
  virtual ClusterPoints counts(const std::string& ns, std::span<const std::string> items, const std::optional<engine::ViewSpec>& view,
                               std::optional<double> as_of = std::nullopt) = 0;
  // GET /trending over the partitions: each scores its items from the
  // stream's start measured over all of them, so scores are a single
  // node's; the union of their lists, best k.
  virtual engine::TrendingAnswer trending(const std::string& ns, std::optional<double> short_half_life, std::optional<double> long_half_life,
                                          std::size_t k, double min_count) = 0;
  // GET /hot-keys over the partitions: the union of their hot keys; with
  // `watch`, the rates of those keys that are not hot (each from its
  // partition) in `watched`.
  virtual HotKeysAnswer hot_keys(const std::string& ns, std::span<const std::string> watch = {}) = 0;
  // Distributions live whole in the partition of their name's hash: asked
  // there (read-your-writes); ServiceError unavailable when it cannot answer.
  virtual std::optional<engine::DistributionAnswer> distribution(std::string_view name, std::span<const std::string_view> fields, double now,
                                                                 std::optional<double> rate, std::optional<std::size_t> most_probable) = 0;
  // An increment checked against its distribution as the partition's owner
  // holds it (the bins it would have: --distribution-max-bins): ServiceError
  // invalid when it would not fit. An owner that does not answer at once
  // (none yet, a hand-over) leaves it unchecked.
  virtual void check_incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at) = 0;
  // GET /history: the item's points, from its partition's own history
  // (each partition snapshots its items); ServiceError unavailable when
  // that partition cannot answer, invalid "history_unavailable" when it
  // keeps none.
  virtual HistorySeries history(const std::string& ns, std::string_view item, const std::optional<engine::ViewSpec>& view, double from,
                                double to, std::size_t max_points) = 0;
  // What the partitions counted of the namespaces named (none: of every
  // namespace), added up by name (NamespaceStats: events, weights, memory
  // summed; the newest time the latest; a batch counts once per partition
  // it touched); `coverage` names the partitions that did not answer.
  // ServiceError not_found when a namespace named is not there (deleted).
  virtual std::vector<std::pair<std::string, engine::NamespaceStats>> stats(std::span<const std::string> names, engine::Coverage& coverage) = 0;
  // GET /dbsize: the distributions every partition holds, added up
  // (ServiceError unavailable when a partition cannot answer).
  virtual std::uint64_t distributions() = 0;

  // How many partitions the cluster's stream has.
  virtual std::uint32_t partitions() const noexcept = 0;
  // The partitions and who serves them, for /readyz.
  virtual std::string status() const = 0;
  // Why this node cannot take writes now ("" when it can): /readyz's 503.
  virtual std::string failure() const = 0;
};

// Where an item lives in a cluster of `partitions`: from its hash's high
// bits, remixed, so that a partition's items still spread over every
// column of its sketches (which take the same hash's low bits).
constexpr std::uint32_t partition_of(std::uint64_t hash, std::uint32_t partitions) noexcept {
  std::uint64_t x = (hash ^ 0x243f6a8885a308d3ULL) * 0x9e3779b97f4a7c15ULL;
  x ^= x >> 29;
  return static_cast<std::uint32_t>((x >> 32) % partitions);
}

}  // namespace ebb::service
