#include "ebb/engine/distribution_store.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/core/string_bytes.hpp"
#include "ebb/decay/forward_decay.hpp"
#include "number_text.hpp"

namespace ebb::engine {
namespace {

// The longest name a checkpoint may hold (the limits of the server that
// wrote it may have been larger than this one's).
constexpr std::size_t kMaxStoredName = std::size_t{1} << 20;

// A uniform in (0, 1) from 64 bits, mixed first.
double uniform_of(std::uint64_t x) noexcept { return (static_cast<double>(mix64(x) >> 11) + 0.5) * 0x1p-53; }

// The smallest k with P(Poisson(mean) <= k) >= u, or any value past `cap`
// once it is sure to be past it (the caller keeps at most cap counts).
// Monotone in the mean for a fixed u, so a bin never gains counts as time
// passes: exact summation (in log space from 25 standard deviations below
// the mean, where the mass left out is under e^-300) up to a mean of 10^4,
// the Cornish-Fisher expansion beyond (its error is then far under a count,
// so the two agree at the switch); a mean that overflows loses everything.
double poisson_quantile(double u, double mean, double cap) noexcept {
  if (!(mean > 0)) return 0;
  if (!std::isfinite(mean)) return INFINITY;
  const double sd = std::sqrt(mean);
  if (mean < 1e4) {
    double k = std::max(0.0, std::floor(mean - 25 * sd));
    double p = std::exp(-mean + k * std::log(mean) - std::lgamma(k + 1)), cdf = p;
    const double last = std::min(cap + 1, mean + 40 * sd + 10);
    while (cdf < u && k < last) {
      k += 1;
      p *= mean / k;
      cdf += p;
    }
    return k;
  }
  double lo = -40, hi = 40;  // z with Phi(z) = u, by bisection on erfc
  for (int i = 0; i < 64; ++i) {
    const double mid = (lo + hi) / 2;
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < u) lo = mid;
    else hi = mid;
  }
  return std::max(0.0, std::floor(mean + sd * hi + (hi * hi - 1) / 6 + 0.5));
}

}  // namespace

void DistributionOptions::validate() const {
  if (!(std::isfinite(default_rate) && default_rate >= 0)) throw InvalidArgument("rate: the default rate must be a finite number >= 0 (1/s)");
  if (!(std::isfinite(min_count) && min_count > 0)) throw InvalidArgument("min_count: must be a finite number > 0");
  if (max_bins < 1) throw InvalidArgument("max_bins: must be at least 1");
  if (max_name_bytes < 1) throw InvalidArgument("max_name_bytes: must be at least 1");
}

std::size_t DistributionStore::NameHash::operator()(std::string_view s) const noexcept { return hash_key(s); }

DistributionStore::DistributionStore(DistributionOptions options) : options_(options) { options_.validate(); }

double DistributionStore::value(const Distribution& d, const Bin& b, double now) noexcept {
  if (d.poisson) return poisson_value(d, b, d.clock.lambda(), now);
  return b.stored * d.clock.read_factor(now);
}

double DistributionStore::poisson_value(const Distribution& d, const Bin& b, double lambda, double now) noexcept {
  const double c = b.stored, dt = now - d.updated;
  if (!(c > 1 && dt > 0 && lambda > 0)) return c;  // stopped at 1 (or under it from the start), or no time has passed
  const double u = uniform_of(d.seed ^ hash_key(b.name) ^ std::bit_cast<std::uint64_t>(d.updated));
  return std::max(1.0, c - poisson_quantile(u, lambda * c * dt, c));
}

void DistributionStore::check_name(std::string_view name, const char* field) const {
  if (name.empty() || name.size() > options_.max_name_bytes) {
    throw InvalidArgument(std::string(field) + ": must be 1 to " + std::to_string(options_.max_name_bytes) + " bytes");
  }
}

template <typename Counts>
std::size_t DistributionStore::fields_missing(const Distribution* d, std::span<const std::string_view> fields, Counts counts) {
  std::size_t missing = 0;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const auto before = fields.begin() + static_cast<std::ptrdiff_t>(i);
    if (std::find(fields.begin(), before, fields[i]) != before) continue;  // counted once
    const bool present = d && std::any_of(d->bins.begin(), d->bins.end(), [&](const Bin& b) { return b.name == fields[i] && counts(b); });
    if (!present) ++missing;
  }
  return missing;
}

std::size_t DistributionStore::new_bins(std::string_view distribution, std::span<const std::string_view> fields, double t) const {
  return fields_missing(live(distribution, t), fields, [](const Bin&) { return true; });
}

bool DistributionStore::idle(const Distribution& d, double t) const noexcept {
  const double at = std::max(t, d.updated);  // never before the last write
  // Poisson bins stop at 1: idle is a time since the last write instead
  // (a function of the logged writes alone, as the exact rule is).
  if (d.poisson) return d.clock.lambda() > 0 && (at - d.updated) * d.clock.lambda() > kPoissonIdleLifetimes;
  return std::none_of(d.bins.begin(), d.bins.end(), [&](const Bin& b) { return shown(d, value(d, b, at)); });
}

const DistributionStore::Distribution* DistributionStore::live(std::string_view distribution, double t) const {
  auto it = distributions_.find(distribution);
  if (it == distributions_.end() || idle(it->second, t)) return nullptr;
  return &it->second;
}

void DistributionStore::check_incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double t) const {
  check_name(distribution, "distribution");
  if (fields.empty()) throw InvalidArgument("field: is required");
  for (auto f : fields) check_name(f, "field");
  check_values(n, t);
  // Less would be pruned (and the distribution idle) as it lands.
  if (n < options_.min_count) {
    throw InvalidArgument("N: must be at least the minimum count " + number_text(options_.min_count) + " (got " + number_text(n) + ")");
  }
  // The bins after the write: those still over min_count (the write prunes
  // the others) and the fields it adds or revives.
  const Distribution* d = live(distribution, t);
  const double at = d ? std::max(t, d->updated) : t;
  auto shows = [&](const Bin& b) { return shown(*d, value(*d, b, at)); };
  const std::size_t have = d ? static_cast<std::size_t>(std::count_if(d->bins.begin(), d->bins.end(), shows)) : 0;
  const std::size_t added = fields_missing(d, fields, shows);
  if (added > 0 && have + added > options_.max_bins) {
    throw InvalidArgument("field: distribution '" + message_text(distribution) + "' would have " + std::to_string(have + added) +
                          " bins, more than the limit of " + std::to_string(options_.max_bins));
  }
}

void DistributionStore::check_values(double n, double t) {
  if (!(std::isfinite(n) && n > 0 && n <= 1e15)) throw InvalidArgument("N: must be a finite number in (0, 1e15] (got " + number_text(n) + ")");
  if (!(std::isfinite(t) && t >= 0)) throw InvalidArgument("t: must be a finite time >= 0");
}

void DistributionStore::incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double t,
                             std::optional<double> rate, Limits limits, std::optional<DistributionDecay> decay) {
  if (limits == Limits::check) check_incr(distribution, fields, n, t);
  else check_values(n, t);
  if (rate && !(std::isfinite(*rate) && *rate >= 0)) throw InvalidArgument("rate: must be a finite number >= 0 (1/s)");
  auto it = distributions_.find(distribution);
  // An idle distribution (no bin at min_count) is as good as gone: it
  // starts afresh, exactly as after expire() dropped it, so whether the
  // expiry step ran first never changes the state (a replay, which runs
  // none, rebuilds the same).
  if (it != distributions_.end() && idle(it->second, t)) {
    bins_ -= it->second.bins.size();
    distributions_.erase(it);
    it = distributions_.end();
  }
  const bool fresh = it == distributions_.end();
  Distribution scratch{ForwardDecay::with_rate(rate.value_or(options_.default_rate)), t, {}};
  scratch.clock.anchor(t);
  scratch.poisson = decay.value_or(options_.default_decay) == DistributionDecay::poisson;
  scratch.seed = hash_key(distribution);
  Distribution& d = fresh ? scratch : it->second;
  // Checked: from here nothing throws but allocation.
  const std::size_t old_size = d.bins.size();
  if (d.poisson) {
    // The losses since the last write are taken into the counts now; the
    // next draws start from this write.
    if (t > d.updated) {
      for (auto& b : d.bins) b.stored = value(d, b, t);
      d.updated = t;
    }
  } else if (d.clock.needs_rebase(t)) {
    const double f = d.clock.rebase(t);
    for (auto& b : d.bins) b.stored *= f;
  }
  const double w = d.poisson ? n : n * d.clock.weight_factor(t);
  // Bins decayed under min_count go now (the distribution is being
  // touched anyway); the incremented ones are kept.
  const double now = std::max(t, d.updated);
  for (auto f : fields) {
    auto b = std::find_if(d.bins.begin(), d.bins.end(), [&](const Bin& x) { return x.name == f; });
    if (b != d.bins.end()) {
      b->stored += w;
      continue;
    }
    if (d.bins.size() == d.bins.capacity()) d.bins.reserve(d.bins.size() + std::max<std::size_t>(4, d.bins.size() / 4));  // little slack: bins are many
    d.bins.push_back({w, std::string(f)});
  }
  std::erase_if(d.bins, [&](const Bin& b) {
    return !shown(d, value(d, b, now)) && std::find(fields.begin(), fields.end(), b.name) == fields.end();
  });
  d.updated = now;
  const std::size_t new_size = d.bins.size();
  if (fresh) distributions_.emplace(std::string(distribution), std::move(scratch));
  bins_ = bins_ - old_size + new_size;  // last: an emplace that throws leaves the count true
}

std::optional<DistributionAnswer> DistributionStore::read(std::string_view distribution, std::span<const std::string_view> fields, double now,
                                                          std::optional<double> rate, std::optional<std::size_t> most_probable) const {
  if (rate && !(std::isfinite(*rate) && *rate >= 0)) throw InvalidArgument("rate: must be a finite number >= 0 (1/s)");
  if (most_probable && *most_probable < 1) throw InvalidArgument("N: must be at least 1");
  auto it = distributions_.find(distribution);
  if (it == distributions_.end()) return std::nullopt;
  const Distribution& d = it->second;
  // Idle at its own rate: gone, whatever the asked rate (as once expired).
  if (idle(d, now)) return std::nullopt;
  now = std::max(now, d.updated);  // a read never goes back before the last write
  // Each bin as of now: at the distribution's own rate, or decayed from the
  // last write at the asked rate.
  auto at_now = [&](const Bin& b) {
    if (!rate) return value(d, b, now);
    if (d.poisson) return poisson_value(d, b, *rate, now);
    return value(d, b, d.updated) * std::exp(-*rate * (now - d.updated));
  };
  DistributionAnswer answer;
  answer.distribution = it->first;
  answer.t = d.updated;
  answer.rate = rate.value_or(d.clock.lambda());
  answer.decay = d.poisson ? DistributionDecay::poisson : DistributionDecay::exact;
  std::vector<DistributionBin> all;
  all.reserve(d.bins.size());
  for (const auto& b : d.bins) {
    const double c = at_now(b);
    if (shown(d, c)) all.push_back({b.name, c, 0});
  }
  // Z is the sum of what is shown, summed in one fixed order (by name) so
  // the same state always gives the same bits.
  std::sort(all.begin(), all.end(), [](const DistributionBin& a, const DistributionBin& b) { return a.bin < b.bin; });
  for (const auto& b : all) answer.z += b.count;
  for (auto& b : all) b.p = answer.z > 0 ? b.count / answer.z : 0;
  if (!fields.empty()) {
    for (auto f : fields) {
      auto b = std::lower_bound(all.begin(), all.end(), f, [](const DistributionBin& x, std::string_view key) { return x.bin < key; });
      answer.bins.push_back(b != all.end() && b->bin == f ? *b : DistributionBin{std::string(f), 0, 0});
    }
    return answer;
  }
  std::stable_sort(all.begin(), all.end(), [](const DistributionBin& a, const DistributionBin& b) { return a.count > b.count; });
  if (most_probable && all.size() > *most_probable) all.resize(*most_probable);
  answer.bins = std::move(all);
  return answer;
}

std::size_t DistributionStore::memory_bytes() const noexcept {
  using Node = std::pair<const std::string, Distribution>;
  std::size_t bytes = sizeof(*this) + distributions_.bucket_count() * sizeof(void*);
  for (const auto& [name, d] : distributions_) {
    bytes += sizeof(Node) + 2 * sizeof(void*) + heap_bytes(name) + d.bins.capacity() * sizeof(Bin);  // node: value, next pointer, hash
    for (const auto& b : d.bins) bytes += heap_bytes(b.name);
  }
  return bytes;
}

std::size_t DistributionStore::expire(double now, std::size_t max_checks) {
  std::size_t removed = 0, checked = 0;
  const std::size_t buckets = distributions_.bucket_count();
  if (buckets == 0) return 0;
  for (std::size_t step = 0; step < buckets && checked < max_checks; ++step) {
    const std::size_t bucket = expire_bucket_++ % buckets;
    std::vector<std::string_view> idle_names;
    for (auto it = distributions_.begin(bucket); it != distributions_.end(bucket); ++it) {
      ++checked;
      if (idle(it->second, now)) idle_names.push_back(it->first);
    }
    for (auto name : idle_names) {
      auto it = distributions_.find(name);
      bins_ -= it->second.bins.size();
      distributions_.erase(it);
      ++removed;
    }
  }
  return removed;
}

std::string DistributionStore::serialize_state() const {
  // In a fixed order, so the same store always writes the same bytes: by
  // the name's hash (kept in the distribution), then the name. Sorting by
  // name alone compared strings all over the heap: with the copying, most
  // of a 1M-distribution checkpoint's time, under the shard's lock.
  using Entry = std::pair<const std::string, Distribution>;
  std::vector<std::pair<std::uint64_t, const Entry*>> sorted;
  sorted.reserve(distributions_.size());
  std::size_t bytes = 64;
  for (const auto& entry : distributions_) {
    sorted.emplace_back(entry.second.seed, &entry);
    bytes += 4 + entry.first.size() + 29;
    for (const auto& b : entry.second.bins) bytes += 12 + b.name.size();
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->first < b.second->first;
  });
  return written([&](BinaryWriter& w) {
    w.reserve(bytes);  // the exact size, plus the envelope: no copying as it grows
    // Version 2 added each distribution's decay (version 1: all exact).
    const auto blob = w.begin_blob(BlobKind::distribution_store, 2);
    w.put<std::uint64_t>(sorted.size());
    for (const auto& [hash, entry] : sorted) {
      const Distribution& d = entry->second;
      w.put_string(entry->first);
      w.put<double>(d.clock.landmark());
      w.put<double>(d.clock.lambda());
      w.put<double>(d.updated);
      w.put<std::uint8_t>(d.poisson ? 1 : 0);
      w.put<std::uint32_t>(static_cast<std::uint32_t>(d.bins.size()));
      for (const auto& b : d.bins) {
        w.put_string(b.name);
        w.put<double>(b.stored);
      }
    }
    w.end_blob(blob);
  });
}

void DistributionStore::restore_state(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::distribution_store, 2);
  BinaryReader r(opened.payload, "distribution store");
  const auto n = r.get<std::uint64_t>();
  decltype(distributions_) restored;
  std::size_t bins = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string name = r.get_string(kMaxStoredName);
    const double landmark = r.get<double>();
    const double rate = r.get<double>();
    const double updated = r.get<double>();
    if (name.empty() || !std::isfinite(landmark) || !(std::isfinite(rate) && rate >= 0) || !std::isfinite(updated)) {
      r.fail("bad distribution '" + name + "'");
    }
    Distribution d{ForwardDecay::with_rate(rate), updated, {}};
    d.clock.anchor(landmark);
    if (opened.version >= 2) {
      const auto decay = r.get<std::uint8_t>();
      if (decay > 1) r.fail("bad decay of distribution '" + name + "'");
      d.poisson = decay == 1;
    }
    d.seed = hash_key(name);
    const auto nb = r.get<std::uint32_t>();
    if (nb > r.remaining() / 12) r.fail("distribution '" + name + "' claims " + std::to_string(nb) + " bins");
    d.bins.reserve(nb);
    for (std::uint32_t j = 0; j < nb; ++j) {
      Bin b;
      b.name = r.get_string(kMaxStoredName);
      b.stored = r.get<double>();
      if (b.name.empty() || !(std::isfinite(b.stored) && b.stored >= 0)) r.fail("bad bin in distribution '" + name + "'");
      d.bins.push_back(std::move(b));
    }
    bins += nb;
    if (!restored.emplace(std::move(name), std::move(d)).second) r.fail("a distribution listed twice");
  }
  r.expect_end();
  distributions_ = std::move(restored);
  bins_ = bins;
  expire_bucket_ = 0;
}

}  // namespace ebb::engine
