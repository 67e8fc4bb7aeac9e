// Distributions that forget (GET /incr, /get, /dist, /nmostprobable,
// /dbsize): the distribution store's shards, written through the log like
// a batch so a replay rebuilds them, and an expiry step for idle ones.
#include <cstdio>

#include "ebb/core/clock.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/service/log_records.hpp"
#include "service_cluster.hpp"
#include "service_state.hpp"

namespace ebb::service {
namespace {

// Distributions checked per shard and step: 16 shards x 4096 a second go
// through a million distributions in about 15 s, a few ms of work each.
constexpr std::size_t kExpireChecksPerStep = 4096;
// Expiry judges idleness this far behind the clock: no increment still on
// its way to the store (received earlier, applied later) is older, so
// whether it lands before or after the expiry step changes nothing (a
// replay runs no expiry).
constexpr double kExpiryMarginSeconds = 300;

}  // namespace

std::string distribution_part_name(std::size_t shard) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "distributions.%02zu", shard);
  return buf;
}

DistributionShard& Service::State::shard_of(std::string_view distribution) const {
  return *distribution_shards[hash_key(distribution) % kDistributionShards];
}

Commit Service::incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at) {
  State& s = *s_;
  if (!s.recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (s.options.cluster) return cluster_mode::incr(s, distribution, fields, n, received_at);
  s.refuse_when_overloaded("writes");
  // A new distribution's rate and decay, logged: replay makes the same call.
  const double rate = s.options.distributions.default_rate;
  const auto decay = s.options.distributions.default_decay;
  DistributionIncrRecord record{received_at, distribution, n, rate, {fields.begin(), fields.end()}, decay};
  thread_local std::string payload;
  if (s.wal) encode_distribution_incr(payload, record);

  DistributionShard& shard = s.shard_of(distribution);
  std::lock_guard lock(shard.mu);
  // Checked whole before it is logged: a logged increment always applies.
  try {
    shard.store.check_incr(distribution, fields, n, received_at);
  } catch (const InvalidArgument& e) {
    throw invalid("bad_parameter", e.what());
  }
  // The new bins are reserved before the write, so concurrent increments
  // on other shards cannot overshoot the cap together.
  const std::uint64_t added = shard.store.new_bins(distribution, fields, received_at);
  const std::uint64_t cap = s.options.limits.max_distribution_bins;
  std::uint64_t have = s.distribution_bins.load();
  do {
    if (added > 0 && have + added > cap) {
      throw ServiceError(ErrorKind::insufficient_storage, "insufficient_storage",
                         "bins: the distributions hold " + std::to_string(have) + " bins, the limit is " + std::to_string(cap) +
                             " (--max-distribution-bins)");
    }
  } while (!s.distribution_bins.compare_exchange_weak(have, have + added));
  std::uint64_t lsn = 0;
  try {
    lsn = s.wal ? s.append(payload) : 0;
  } catch (...) {
    s.distribution_bins -= added;
    throw;
  }
  const std::uint64_t before = shard.store.bins();
  shard.store.incr(distribution, fields, n, received_at, rate, engine::DistributionStore::Limits::check, decay);
  // What the write really changed (it may prune, or restart an idle distribution) against what was reserved.
  s.distribution_bins += shard.store.bins() - before - added;  // modulo 2^64: may go down
  shard.applied_lsn = lsn;
  ++s.distribution_increments;
  return Commit{lsn};
}

std::optional<engine::DistributionAnswer> Service::distribution(std::string_view name, std::span<const std::string_view> fields, double now,
                                                                std::optional<double> rate, std::optional<std::size_t> most_probable) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  std::optional<engine::DistributionAnswer> here;
  {
    // In cluster mode this store is empty: reading it makes the question's
    // own checks (a bad rate or N) before the distribution's partition is asked.
    const DistributionShard& shard = s_->shard_of(name);
    std::lock_guard lock(shard.mu);
    try {
      here = shard.store.read(name, fields, now, rate, most_probable);
    } catch (const InvalidArgument& e) {
      throw invalid("bad_parameter", e.what());
    }
  }
  if (s_->options.cluster) return s_->options.cluster->distribution(name, fields, now, rate, most_probable);
  return here;
}

void Service::State::check_increment(std::string_view distribution, std::span<const std::string_view> fields, double n,
                                     double received_at) const {
  const DistributionShard& shard = shard_of(distribution);
  std::lock_guard lock(shard.mu);
  try {
    shard.store.check_incr(distribution, fields, n, received_at);
  } catch (const InvalidArgument& e) {
    throw invalid("bad_parameter", e.what());
  }
}

void Service::check_incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double received_at) const {
  s_->check_increment(distribution, fields, n, received_at);
  // A cluster's partition (asked by the writing node) holds its share of
  // --max-distribution-bins: distributions spread over the partitions by
  // their names' hashes, as items do. (A single node checks in incr().)
  const std::uint32_t parts = std::max<std::uint32_t>(1, s_->options.sketch_share);
  const std::uint64_t cap = s_->options.limits.max_distribution_bins / parts;
  const DistributionShard& shard = s_->shard_of(distribution);
  std::lock_guard lock(shard.mu);
  const std::uint64_t added = shard.store.new_bins(distribution, fields, received_at);
  const std::uint64_t have = s_->distribution_bins.load();
  if (added > 0 && have + added > cap) {
    throw ServiceError(ErrorKind::insufficient_storage, "insufficient_storage",
                       "bins: this distribution's partition holds " + std::to_string(have) + " bins, its share of the limit is " +
                           std::to_string(cap) + " (--max-distribution-bins over " + std::to_string(parts) + " partitions)");
  }
}

std::uint64_t Service::count_distributions() const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  if (s_->options.cluster) return s_->options.cluster->distributions();
  return distributions();
}

const engine::DistributionOptions& Service::distribution_options() const noexcept { return s_->options.distributions; }

std::size_t Service::distributions() const {
  if (!s_->recovered) return 0;  // (replay writes the shards without their locks)
  std::size_t n = 0;
  for (const auto& shard : s_->distribution_shards) {
    std::lock_guard lock(shard->mu);
    n += shard->store.size();
  }
  return n;
}

std::size_t Service::expire_distributions(double now) {
  State& s = *s_;
  std::size_t removed = 0;
  for (const auto& shard : s.distribution_shards) {
    std::lock_guard lock(shard->mu);
    const std::uint64_t before = shard->store.bins();
    removed += shard->store.expire(now, kExpireChecksPerStep);
    s.distribution_bins -= before - shard->store.bins();
  }
  s.distributions_expired += removed;
  return removed;
}

void Service::start_distribution_expiry() {
  State& s = *s_;
  if (s.options.distribution_expire_interval <= 0 || s.distribution_expirer.joinable()) return;
  s.distribution_expirer = s.every(s.options.distribution_expire_interval, "distribution expiry",
                                   [this] { expire_idle_distributions(); });
}

std::size_t Service::expire_idle_distributions() { return expire_distributions(wall_clock_now() - kExpiryMarginSeconds); }

}  // namespace ebb::service
