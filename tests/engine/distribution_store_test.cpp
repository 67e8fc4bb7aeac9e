// Distributions that forget against a brute-force model: every bin's count
// is the exact sum of n x e^(-rate (now - t)) over its increments, Z is the
// sum of the bins shown, reads are sorted and deterministic, a per-request
// rate decays from the last write, pruning and expiry drop what decayed
// away, and a checkpoint restores the same answers.
#include "ebb/engine/distribution_store.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "ebb/core/error.hpp"

namespace ebb::engine {
namespace {

constexpr double kStart = 1.7e9;

struct Incr {
  std::string dist, field;
  double n, t;
};

// The exact model: every increment kept, summed at read time.
std::map<std::string, double> exact_bins(const std::vector<Incr>& log, const std::string& dist, double rate, double now) {
  std::map<std::string, double> out;
  for (const auto& i : log) {
    if (i.dist == dist) out[i.field] += i.n * std::exp(-rate * (now - i.t));
  }
  return out;
}

TEST(DistributionStore, CountsAreTheExactDecayedSumsAndZIsTheirSum) {
  DistributionOptions o;
  o.default_rate = std::log(2.0) / 600;  // a 10-minute half-life
  o.min_count = 1e-9;
  DistributionStore store(o);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Incr> log;
  double t = kStart;
  for (int i = 0; i < 20000; ++i) {
    t += u(rng) * 2;
    // Out of order by up to a minute: the past counts exactly too.
    const double at = t - u(rng) * 60;
    Incr in{"d" + std::to_string(static_cast<int>(u(rng) * 20)), "f" + std::to_string(static_cast<int>(u(rng) * u(rng) * 30)), 0.1 + u(rng) * 9, at};
    const std::string_view field = in.field;
    store.incr(in.dist, std::span(&field, 1), in.n, in.t);
    log.push_back(in);
  }
  const double now = t + 100;
  EXPECT_EQ(store.size(), 20u);
  std::size_t bins = 0;
  for (int d = 0; d < 20; ++d) {
    const std::string name = "d" + std::to_string(d);
    const auto want = exact_bins(log, name, o.default_rate, now);
    const auto got = store.read(name, {}, now);
    ASSERT_TRUE(got.has_value());
    ASSERT_EQ(got->bins.size(), want.size()) << name;
    bins += want.size();
    double z = 0, p = 0;
    for (std::size_t i = 0; i < got->bins.size(); ++i) {
      const auto& b = got->bins[i];
      EXPECT_NEAR(b.count, want.at(b.bin), 1e-9 * want.at(b.bin)) << name << " " << b.bin;
      if (i > 0) {
        EXPECT_TRUE(got->bins[i - 1].count > b.count || (got->bins[i - 1].count == b.count && got->bins[i - 1].bin < b.bin));
      }
      z += b.count;
      p += b.p;
    }
    EXPECT_NEAR(got->z, z, 1e-12 * z);
    EXPECT_NEAR(p, 1, 1e-12);
    EXPECT_EQ(got->rate, o.default_rate);
    // Deterministic: the same read, the same bits.
    EXPECT_EQ(store.read(name, {}, now)->z, got->z);
    // n most probable: the first n of the full list.
    const auto top3 = store.read(name, {}, now, std::nullopt, 3);
    ASSERT_EQ(top3->bins.size(), std::min<std::size_t>(3, want.size()));
    for (std::size_t i = 0; i < top3->bins.size(); ++i) EXPECT_EQ(top3->bins[i].bin, got->bins[i].bin);
    EXPECT_EQ(top3->z, got->z);  // Z is the whole distribution's
  }
  EXPECT_EQ(store.bins(), bins);
}

TEST(DistributionStore, FieldsAnswerInRequestOrderAndARequestRateDecaysFromTheLastWrite) {
  DistributionOptions o;
  o.default_rate = 0.01;
  DistributionStore store(o);
  const std::vector<std::string_view> us = {"US"}, both = {"US", "FR"};
  store.incr("clicks", us, 3, kStart);
  store.incr("clicks", both, 1, kStart + 10);
  const std::vector<std::string_view> ask = {"FR", "DE", "US"};
  auto a = store.read("clicks", ask, kStart + 20);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->bins.size(), 3u);
  const double us_now = 3 * std::exp(-0.01 * 20) + std::exp(-0.01 * 10), fr_now = std::exp(-0.01 * 10);
  EXPECT_EQ(a->bins[0].bin, "FR");
  EXPECT_NEAR(a->bins[0].count, fr_now, 1e-12);
  EXPECT_EQ(a->bins[1].bin, "DE");
  EXPECT_EQ(a->bins[1].count, 0);
  EXPECT_EQ(a->bins[1].p, 0);
  EXPECT_NEAR(a->bins[2].count, us_now, 1e-12);
  EXPECT_NEAR(a->z, us_now + fr_now, 1e-12);
  EXPECT_EQ(a->t, kStart + 10);
  // rate=0.5: the counts at the last write, then 0.5/s from there.
  a = store.read("clicks", us, kStart + 20, 0.5);
  const double us_at_write = 3 * std::exp(-0.01 * 10) + 1;
  EXPECT_NEAR(a->bins[0].count, us_at_write * std::exp(-0.5 * 10), 1e-12);
  EXPECT_EQ(a->rate, 0.5);
  EXPECT_FALSE(store.read("nope", {}, kStart));
}

TEST(DistributionStore, DecayedBinsArePrunedAndIdleDistributionsExpire) {
  DistributionOptions o;
  o.default_rate = std::log(2.0);  // a 1 s half-life
  o.min_count = 0.01;
  DistributionStore store(o);
  const std::vector<std::string_view> a = {"a"}, b = {"b"};
  store.incr("x", a, 1, kStart);
  store.incr("y", a, 1, kStart);
  // 10 s later a is 2^-10 < 0.01: x is idle, read as gone (whatever the
  // asked rate), and a write starts it afresh.
  EXPECT_FALSE(store.read("x", {}, kStart + 10));
  EXPECT_FALSE(store.read("x", {}, kStart + 10, 0.0));
  store.incr("x", b, 1, kStart + 10);
  EXPECT_EQ(store.bins(), 2u);  // x: b; y: a
  const auto x = store.read("x", {}, kStart + 10);
  ASSERT_EQ(x->bins.size(), 1u);
  EXPECT_EQ(x->bins[0].bin, "b");
  EXPECT_EQ(x->bins[0].p, 1);
  // y has decayed away: expire() finds it within a bounded number of checks.
  std::size_t removed = 0;
  for (int i = 0; i < 100 && removed == 0; ++i) removed += store.expire(kStart + 10, 1);
  EXPECT_EQ(removed, 1u);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_FALSE(store.read("y", {}, kStart + 10));
  EXPECT_EQ(store.bins(), 1u);
}

// The expiry step is not logged, so it must not change what any later
// write or read sees: a store that expired an idle distribution and one
// that did not (a replay) end in the same bytes, rate included.
TEST(DistributionStore, ExpiryChangesNothingALaterWriteOrReadSees) {
  DistributionOptions o;
  o.default_rate = std::log(2.0);  // a 1 s half-life
  o.min_count = 0.01;
  DistributionStore expired(o), replayed(o);
  const std::vector<std::string_view> a = {"a"}, b = {"b"};
  for (auto* s : {&expired, &replayed}) s->incr("x", a, 1, kStart, 0.5);
  std::size_t removed = 0;
  for (int i = 0; i < 100 && removed == 0; ++i) removed += expired.expire(kStart + 60, 1);
  ASSERT_EQ(removed, 1u);
  EXPECT_EQ(replayed.size(), 1u);
  // Later writes, created with another rate (a restart with another default).
  for (auto* s : {&expired, &replayed}) {
    s->incr("x", a, 2, kStart + 61, 0.1);
    s->incr("x", b, 1, kStart + 62, 0.1);
  }
  EXPECT_EQ(expired.serialize_state(), replayed.serialize_state());
  EXPECT_EQ(expired.read("x", {}, kStart + 63)->rate, 0.1);
  EXPECT_EQ(expired.bins(), replayed.bins());
}

// Bins decayed out of sight do not hold a place under max_bins: the write
// that would go past it prunes them.
TEST(DistributionStore, HiddenBinsDoNotCountAgainstMaxBins) {
  DistributionOptions o;
  o.default_rate = std::log(2.0);  // a 1 s half-life
  o.min_count = 0.01;
  o.max_bins = 2;
  DistributionStore store(o);
  const std::vector<std::string_view> a = {"a"}, b = {"b"}, c = {"c"};
  store.incr("d", a, 1000, kStart);
  store.incr("d", b, 1, kStart);
  EXPECT_THROW(store.incr("d", c, 1, kStart + 1), InvalidArgument);  // b (0.5) still shows
  store.incr("d", c, 1, kStart + 10);                                // b (2^-10) does not
  EXPECT_EQ(store.bins(), 2u);
  const auto d = store.read("d", {}, kStart + 10);
  ASSERT_EQ(d->bins.size(), 2u);
  EXPECT_EQ(d->bins[0].bin, "c");  // 1 against a's 1000 x 2^-10
  EXPECT_EQ(d->bins[1].bin, "a");
}

TEST(DistributionStore, BadInputIsRefusedAndChangesNothing) {
  DistributionOptions o;
  o.max_bins = 2;
  DistributionStore store(o);
  const std::vector<std::string_view> one = {"a"}, three = {"a", "b", "c"}, empty_field = {""};
  store.incr("d", one, 1, kStart);
  const std::string before = store.serialize_state();
  auto refuses = [&](auto f, const std::string& prefix) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << prefix;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    }
    EXPECT_EQ(store.serialize_state(), before);
  };
  refuses([&] { store.incr("d", three, 1, kStart); }, "field: distribution 'd' would have 3 bins");
  refuses([&] { store.incr("d", one, 0, kStart); }, "N:");
  refuses([&] { store.incr("d", one, -1, kStart); }, "N:");
  refuses([&] { store.incr("d", one, NAN, kStart); }, "N:");
  refuses([&] { store.incr("d", one, 1e-4, kStart); }, "N: must be at least the minimum count");
  refuses([&] { store.incr("", one, 1, kStart); }, "distribution:");
  refuses([&] { store.incr("d", empty_field, 1, kStart); }, "field:");
  refuses([&] { store.incr("d", {}, 1, kStart); }, "field:");
  refuses([&] { (void)store.read("d", {}, kStart, -1.0); }, "rate:");
  refuses([&] { (void)store.read("d", {}, kStart, std::nullopt, 0); }, "N:");
  EXPECT_THROW(DistributionStore(DistributionOptions{.default_rate = -1}), InvalidArgument);
}

TEST(DistributionStore, ACheckpointRestoresTheSameAnswers) {
  DistributionStore store;
  const std::vector<std::string_view> f = {"a", "b"}, g = {"c"};
  for (int i = 0; i < 100; ++i) store.incr("d" + std::to_string(i % 7), i % 2 ? f : g, 1 + i, kStart + i);
  const std::string blob = store.serialize_state();
  DistributionStore restored;
  restored.restore_state(blob);
  EXPECT_EQ(restored.serialize_state(), blob);
  EXPECT_EQ(restored.size(), store.size());
  EXPECT_EQ(restored.bins(), store.bins());
  for (int i = 0; i < 7; ++i) {
    const std::string name = "d" + std::to_string(i);
    EXPECT_EQ(restored.read(name, {}, kStart + 500)->z, store.read(name, {}, kStart + 500)->z);
  }
  // A damaged blob is refused and changes nothing.
  std::string bad = blob;
  bad[bad.size() / 2] ^= 1;
  EXPECT_THROW(restored.restore_state(bad), FormatError);
  EXPECT_EQ(restored.serialize_state(), blob);
}

TEST(DistributionStore, MemoryPerBinIsMeasured) {
  // 20 000 distributions x 20 two-letter bins (country codes): the bytes the
  // store says it holds, per bin. (The 1M x 20 figure is bench/'s.)
  DistributionStore store;
  std::vector<std::string> codes;
  for (int i = 0; i < 20; ++i) codes.push_back(std::string{static_cast<char>('A' + i), static_cast<char>('A' + i)});
  for (int d = 0; d < 20000; ++d) {
    for (const auto& c : codes) {
      const std::string_view f = c;
      store.incr("phrase:" + std::to_string(d), std::span(&f, 1), 1, kStart + d);
    }
  }
  EXPECT_EQ(store.bins(), 400000u);
  const double per_bin = static_cast<double>(store.memory_bytes()) / static_cast<double>(store.bins());
  EXPECT_LE(per_bin, 64) << per_bin;
  std::printf("distribution store: %.1f bytes per bin as the store accounts them (20000 x 20)\n", per_bin);
}

}  // namespace
}  // namespace ebb::engine

namespace ebb::engine {
namespace {

// bitly's behaviour, as an option: a Poisson number of counts lost per bin
// (mean rate x count x time), stopping at 1; deterministic reads.
DistributionStore poisson_store() {
  DistributionOptions o;
  o.default_rate = 0.01;  // a lifetime of 100 s
  o.default_decay = DistributionDecay::poisson;
  return DistributionStore(o);
}

TEST(PoissonDistributions, LossesHaveBitlysMeanAndStopAtOne) {
  DistributionStore s = poisson_store();
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) names.push_back("bin" + std::to_string(i));
  std::vector<std::string_view> fields(names.begin(), names.end());
  s.incr("d", fields, 100, kStart);
  // 10 s later each bin's loss is Poisson with mean 0.01 x 100 x 10 = 10.
  const auto a = s.read("d", {}, kStart + 10);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->bins.empty());
  double sum = 0, sq = 0;
  for (const auto& b : a->bins) {
    EXPECT_EQ(b.count, std::floor(b.count)) << b.bin;  // whole counts lost
    sum += 100 - b.count;
    sq += (100 - b.count) * (100 - b.count);
  }
  const double mean = sum / 2000, var = sq / 2000 - mean * mean;
  EXPECT_NEAR(mean, 10, 0.3);  // sd of the mean: sqrt(10 / 2000) = 0.07
  EXPECT_NEAR(var, 10, 1.5);
  EXPECT_DOUBLE_EQ(a->z, 2000 * 100 - sum);
  // Reads are deterministic: the same state and time give the same bits.
  const auto again = s.read("d", {}, kStart + 10);
  for (std::size_t i = 0; i < a->bins.size(); ++i) EXPECT_EQ(again->bins[i].count, a->bins[i].count);
  // Long after (but before it is idle), every bin has stopped at 1: uniform.
  const auto late = s.read("d", {}, kStart + 1900);
  ASSERT_TRUE(late.has_value());
  for (const auto& b : late->bins) EXPECT_EQ(b.count, 1) << b.bin;
  EXPECT_EQ(late->bins.size(), 2000u);
  EXPECT_EQ(late->z, 2000);
  EXPECT_EQ(late->decay, DistributionDecay::poisson);
}

TEST(PoissonDistributions, ABinNeverGainsCountsAsTimePassesAndAHugeRateLosesEverything) {
  DistributionStore s = poisson_store();
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) names.push_back("b" + std::to_string(i));
  std::vector<std::string_view> fields(names.begin(), names.end());
  s.incr("d", fields, 1e6, kStart);
  // The mean loss, 0.01 x 1e6 x dt, crosses 10^4 (summation to the
  // Cornish-Fisher expansion) at dt = 1.
  std::vector<double> last(50, 1e6);
  for (double dt = 0.95; dt <= 1.05; dt += 0.0005) {
    const auto a = s.read("d", fields, kStart + dt);
    for (std::size_t i = 0; i < 50; ++i) {
      EXPECT_LE(a->bins[i].count, last[i]) << names[i] << " at dt " << dt;
      last[i] = a->bins[i].count;
    }
  }
  // The same where the mean crosses 64 (c = 6400).
  s.incr("small", fields, 6400, kStart);
  std::fill(last.begin(), last.end(), 6400);
  for (double dt = 0.5; dt <= 1.5; dt += 0.001) {
    const auto a = s.read("small", fields, kStart + dt);
    for (std::size_t i = 0; i < 50; ++i) {
      EXPECT_LE(a->bins[i].count, last[i]) << names[i] << " at dt " << dt;
      last[i] = a->bins[i].count;
    }
  }
  for (const double rate : {1e300, 1e308}) {
    const auto all_lost = s.read("d", {}, kStart + 10, rate);
    for (const auto& b : all_lost->bins) EXPECT_EQ(b.count, 1) << b.bin << " at rate " << rate;
  }
}

TEST(PoissonDistributions, AWriteTakesTheLossesIntoTheCountsAndIdleMeansUnwrittenFor20Lifetimes) {
  DistributionStore s = poisson_store();
  const std::vector<std::string_view> a = {"a"}, b = {"b"};
  s.incr("d", a, 50, kStart);
  const double a_then = s.read("d", a, kStart + 30)->bins[0].count;
  EXPECT_LT(a_then, 50);
  s.incr("d", b, 5, kStart + 30);
  // a keeps what it had at the write; no time since: no further loss.
  const auto now = s.read("d", {}, kStart + 30);
  ASSERT_EQ(now->bins.size(), 2u);
  EXPECT_EQ(now->bins[0].bin, "a");
  EXPECT_EQ(now->bins[0].count, a_then);
  EXPECT_EQ(now->bins[1].count, 5);
  EXPECT_EQ(now->t, kStart + 30);
  // A read at another rate draws from the same uniforms.
  EXPECT_EQ(s.read("d", a, kStart + 40, 0.0)->bins[0].count, a_then);
  // Idle once unwritten for 20 / rate = 2000 s: gone, and a write starts afresh.
  EXPECT_TRUE(s.read("d", {}, kStart + 30 + 1999).has_value());
  EXPECT_FALSE(s.read("d", {}, kStart + 30 + 2001).has_value());
  s.incr("d", b, 2, kStart + 30 + 2001);
  const auto fresh = s.read("d", {}, kStart + 30 + 2001);
  ASSERT_EQ(fresh->bins.size(), 1u);
  EXPECT_EQ(fresh->bins[0].count, 2);
  EXPECT_EQ(s.expire(kStart + 30 + 2001 + 2001, 100), 1u);
}

TEST(PoissonDistributions, AReplayAndACheckpointRebuildTheSameState) {
  DistributionStore live = poisson_store(), replayed = poisson_store(), restored = poisson_store();
  std::mt19937_64 rng(3);
  struct Write {
    std::string d, f;
    double n, t;
  };
  std::vector<Write> writes;
  for (int i = 0; i < 3000; ++i) {
    writes.push_back({"d" + std::to_string(rng() % 20), "f" + std::to_string(rng() % 8), 1.0 + static_cast<double>(rng() % 5), kStart + i * 0.7});
  }
  for (const auto& w : writes) {
    const std::vector<std::string_view> f = {w.f};
    live.incr(w.d, f, w.n, w.t);
    replayed.incr(w.d, f, w.n, w.t, 0.01, DistributionStore::Limits::ignore, DistributionDecay::poisson);
  }
  EXPECT_EQ(replayed.serialize_state(), live.serialize_state());
  restored.restore_state(live.serialize_state());
  EXPECT_EQ(restored.serialize_state(), live.serialize_state());
  const double later = kStart + 3000 * 0.7 + 50;
  for (int d = 0; d < 20; ++d) {
    const std::string name = "d" + std::to_string(d);
    const auto x = live.read(name, {}, later), y = restored.read(name, {}, later);
    ASSERT_EQ(x.has_value(), y.has_value());
    if (!x) continue;
    EXPECT_EQ(x->z, y->z);
    EXPECT_GE(x->z, static_cast<double>(x->bins.size()));  // every bin at least 1
  }
  // An exact store's checkpoint does not turn Poisson on restore, nor the reverse.
  DistributionStore exact;
  exact.restore_state(live.serialize_state());
  EXPECT_EQ(exact.read("d1", {}, later)->decay, DistributionDecay::poisson);
}

}  // namespace
}  // namespace ebb::engine
