#pragma once
// Distributions that forget (bitly's Forget Table, seed 001;
// notes/algorithms.md section 5): many small categorical distributions
// ("which share of this key phrase's clicks comes from each country, now"),
// each a set of named bins whose counts decay exponentially with the
// distribution's rate. Decay is lazy and exact: every bin is stored in the
// forward-decay coordinates of its distribution's landmark, so time passing
// touches nothing and a read is exp() away (bitly draws a random Poisson
// loss per bin at each read and writes it back; reads here are
// deterministic and change nothing).
//
// bitly's own behaviour is an option (DistributionDecay::poisson, fixed per
// distribution at its creation) for users who depend on it: a bin loses a
// Poisson number of counts with mean rate x count x time since the last
// write, and stops at 1, so an idle distribution tends to uniform. Here the
// draw is deterministic (one uniform per bin and last write, from their
// names and the write's time, through the Poisson quantile), so a read
// changes nothing and every read of the same state at the same time agrees;
// losses are taken into the counts at the next write. Such a distribution
// is idle once it has gone unwritten for kPoissonIdleLifetimes / rate.
//
// The normaliser Z is the sum of the bins a read sees, computed with them,
// so it always equals it (bitly's drifted). Bins that decay under
// `min_count` are dropped at the distribution's next write and never shown;
// a distribution with no bin left is gone.
//
// Single-writer: the owner serialises writes against reads.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ebb/decay/forward_decay.hpp"

namespace ebb::engine {

enum class DistributionDecay : std::uint8_t { exact = 0, poisson = 1 };

struct DistributionOptions {
  double default_rate = 1.0 / 3600;  // lambda, 1/s, of a new distribution (a half-life of ln 2 hours)
  DistributionDecay default_decay = DistributionDecay::exact;  // of a new distribution
  double min_count = 1e-3;           // bins decayed under this are pruned
  std::size_t max_bins = 10000;      // bins of one distribution (InvalidArgument past it)
  std::size_t max_name_bytes = 1024; // a distribution's or a bin's name
  void validate() const;             // InvalidArgument naming the option
};

struct DistributionBin {
  std::string bin;
  double count = 0;  // decayed to the answer's time
  double p = 0;      // count / Z (0 when Z is 0)
};

struct DistributionAnswer {
  std::string distribution;
  double z = 0;        // the sum of the distribution's bins (all of them, whichever bins are listed)
  double t = 0;        // its last write (Unix seconds)
  double rate = 0;     // the decay rate the answer used
  DistributionDecay decay = DistributionDecay::exact;
  std::vector<DistributionBin> bins;
};

class DistributionStore {
 public:
  explicit DistributionStore(DistributionOptions options = {});

  const DistributionOptions& options() const noexcept { return options_; }

  // Adds n (finite, > 0) to each field of the distribution at time t,
  // creating it (with the default rate) and its bins as needed. All or
  // nothing: InvalidArgument ("distribution: ...", "field: ...", "N: ...")
  // and nothing changes.
  // `rate` is the decay rate a distribution created now gets (default: the
  // options' default_rate): a replay passes the one logged, so a server
  // restarted with another default rebuilds the same state. A replay also
  // passes Limits::ignore: the write was accepted under the limits of its
  // time (max_bins, max_name_bytes), which may have been larger.
  // A distribution idle at t (no bin at min_count) starts afresh, as if
  // expire() had dropped it.
  // `decay` is the decay a distribution created now gets (default: the
  // options'), logged like the rate.
  enum class Limits { check, ignore };
  void incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double t,
            std::optional<double> rate = std::nullopt, Limits limits = Limits::check, std::optional<DistributionDecay> decay = std::nullopt);
  // A Poisson distribution unwritten for this many lifetimes (1 / rate) is
  // idle: every bin has then lost about 20 times its count (at 1 since long).
  static constexpr double kPoissonIdleLifetimes = 20;
  // Throws what incr() would (InvalidArgument), changing nothing: an owner
  // that logs a write first checks it, so a logged write always applies.
  void check_incr(std::string_view distribution, std::span<const std::string_view> fields, double n, double t) const;
  // The bins incr() would add (fields the distribution does not have yet,
  // each counted once): what an owner capping all distributions' bins
  // checks first.
  std::size_t new_bins(std::string_view distribution, std::span<const std::string_view> fields, double t) const;

  // The distribution as of `now` (nullopt when it does not exist or is
  // idle: no bin at min_count at its own rate): every
  // bin, most probable first (ties by name), or `fields` in the order given
  // (count 0 for a bin it does not have), or the `most_probable` first n.
  // `rate` (lambda, 1/s) decays from its last write at that rate instead of
  // its own (forgettable's per-request rate; nothing is stored).
  // InvalidArgument for a bad rate or n.
  std::optional<DistributionAnswer> read(std::string_view distribution, std::span<const std::string_view> fields, double now,
                                         std::optional<double> rate = std::nullopt,
                                         std::optional<std::size_t> most_probable = std::nullopt) const;

  std::size_t size() const noexcept { return distributions_.size(); }
  std::size_t bins() const noexcept { return bins_; }
  // Bytes held (the table, every distribution and bin, name bytes on the heap).
  std::size_t memory_bytes() const noexcept;

  // Removes up to `max_checks` distributions' worth of idle ones (every bin
  // under min_count at `now`; pass a `now` a margin behind the clock, so no
  // write still in flight can be older than it), resuming where the last call stopped: a
  // bounded step the owner takes now and then, not a sweep. Returns the
  // number removed.
  std::size_t expire(double now, std::size_t max_checks);

  // Checkpoints: the whole store; restore_state() replaces it (FormatError,
  // unchanged, on a bad blob). A checkpoint written under larger limits
  // (max_bins, max_name_bytes) loads as it is: limits apply to new writes.
  std::string serialize_state() const;
  void restore_state(std::string_view blob);

 private:
  struct Bin {
    double stored;  // forward-decay coordinates of the distribution's landmark
    std::string name;
  };
  struct Distribution {
    ForwardDecay clock;  // the rate and the landmark
    double updated = 0;  // the last write
    std::vector<Bin> bins;
    // Poisson decay: bins hold their counts as of the last write, and the
    // seed (the name's hash) makes each distribution's draws its own.
    bool poisson = false;
    std::uint64_t seed = 0;
  };
  static double value(const Distribution& d, const Bin& b, double now) noexcept;
  // Whether a bin of this count is shown (and kept at the next write):
  // at min_count, or any Poisson bin (they stop at 1, whatever min_count).
  bool shown(const Distribution& d, double count) const noexcept { return d.poisson || count >= options_.min_count; }
  // A Poisson bin's count at `now` at decay rate lambda (bitly's model).
  static double poisson_value(const Distribution& d, const Bin& b, double lambda, double now) noexcept;
  // Distinct fields with no bin of d (absent: none) for which counts(bin) holds.
  template <typename Counts>
  static std::size_t fields_missing(const Distribution* d, std::span<const std::string_view> fields, Counts counts);
  static void check_values(double n, double t);
  // No bin at min_count at t (or at the last write, if later).
  bool idle(const Distribution& d, double t) const noexcept;
  // The distribution unless absent or idle at t.
  const Distribution* live(std::string_view distribution, double t) const;
  void check_name(std::string_view name, const char* field) const;

  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept;
  };
  DistributionOptions options_;
  std::unordered_map<std::string, Distribution, NameHash, std::equal_to<>> distributions_;
  std::size_t bins_ = 0;
  std::size_t expire_bucket_ = 0;  // expire()'s cursor
};

}  // namespace ebb::engine
