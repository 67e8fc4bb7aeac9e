#pragma once
// Cluster mode's admin and query paths (ebb serve --nats): the service's
// rules, with the cluster's log and the partitions' owners in place of the
// local log and namespaces (service/cluster_link.hpp).
#include "service_state.hpp"

namespace ebb::service::cluster_mode {

NamespaceSpec create(Service::State& s, NamespaceSpec spec);
NamespaceSpec patch(Service::State& s, const std::string& name, const std::function<NamespaceSpec(const NamespaceSpec&)>& edit);
void remove(Service::State& s, const std::string& name);
// `as_of`: as the partitions held it then (their rings, else their
// history's snapshots). `redis_type`: checked on the catalog's entry asked.
engine::TopKAnswer top(const Service::State& s, const std::string& name, const std::optional<engine::ViewSpec>& view,
                       std::optional<std::size_t> k, std::optional<double> as_of = std::nullopt,
                       std::optional<RedisKey::Type> redis_type = std::nullopt);
std::vector<engine::PointAnswer> counts(const Service::State& s, const std::string& name, std::span<const std::string> items,
                                        const std::optional<engine::ViewSpec>& view, engine::TopKAnswer& view_answer,
                                        std::optional<double> as_of = std::nullopt,
                                        std::optional<RedisKey::Type> redis_type = std::nullopt);
// Adds `from`'s missing partitions to `into`'s (ascending, once).
void add_missing(engine::Coverage& into, const engine::Coverage& from);
// counts() for a read that goes on without some partitions: when one does
// not answer, each partition's items are asked apart; those of a partition
// that still does not answer are left empty (count 0) and the partition
// is added to `coverage.missing` (ascending, once).
std::vector<engine::PointAnswer> counts_or_missing(const Service::State& s, const std::string& name, const std::vector<std::string>& items,
                                                   const std::optional<engine::ViewSpec>& view, std::optional<double> as_of,
                                                   engine::Coverage& coverage);
// A list and some items' counts from one view, asked of the partitions at
// once (the personalised route's global list and user items, the
// anomalies' baseline): `list` gets top()'s answer; the items' counts are
// counts_or_missing()'s, an item's partition that did not answer added to
// `item_coverage`. When both fail, the list's error is the one thrown.
std::vector<engine::PointAnswer> top_and_counts(const Service::State& s, const std::string& name, const std::optional<engine::ViewSpec>& view,
                                                std::size_t depth, const std::vector<std::string>& items, std::optional<double> as_of,
                                                engine::TopKAnswer& list, engine::Coverage& item_coverage);
engine::TrendingAnswer trending(const Service::State& s, const std::string& name, std::optional<double> short_half_life,
                                std::optional<double> long_half_life, std::optional<std::size_t> k, double min_count,
                                std::optional<RedisKey::Type> redis_type);
Commit incr(Service::State& s, std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at);

}  // namespace ebb::service::cluster_mode
