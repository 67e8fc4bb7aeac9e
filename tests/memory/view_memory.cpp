// The bytes a view of a memory budget reports holding are the bytes it
// holds: counted by replacing operator new (requested sizes, as
// DataSketches' counting allocator does), in a program of its own so the
// replacement touches no other test. Budgets hold with short keys (inline
// in their entries) and with long ones (fewer candidates fit, and the
// answer says so).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ebb/core/hash.hpp"
#include "ebb/engine/accuracy_audit.hpp"
#include "ebb/engine/decayed_view.hpp"
#include "ebb/engine/namespace.hpp"
#include "ebb/engine/prepared_batch.hpp"

namespace {
std::atomic<std::size_t> g_live{0};

// Aligned blocks (a sketch's counters) are freed by an unsized delete: their
// sizes are kept here (a few at a time).
struct Aligned {
  void* p = nullptr;
  std::size_t n = 0;
};
Aligned g_aligned[64];

void* counted(std::size_t n, std::size_t align) {
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n == 0 ? 1 : n);
  if (!p) throw std::bad_alloc();
  g_live += n;
  if (align > alignof(std::max_align_t)) {
    for (auto& a : g_aligned) {
      if (a.p == nullptr) {
        a = {p, n};
        break;
      }
    }
  }
  return p;
}
void aligned_free(void* p) noexcept {
  for (auto& a : g_aligned) {
    if (a.p == p && p != nullptr) {
      g_live -= a.n;
      a = {};
      std::free(p);
      return;
    }
  }
  std::free(p);
}
void uncounted(void* p, std::size_t n) noexcept {
  if (!p) return;
  g_live -= n;
  std::free(p);
}
}  // namespace

// Sized deletes are what libstdc++ containers call; an unsized one cannot
// know the size and is left uncounted (a view that freed that way would
// fail the equalities below).
void* operator new(std::size_t n) { return counted(n, 0); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { operator delete(p); }
void* operator new[](std::size_t n) { return counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted(n, static_cast<std::size_t>(a)); }
void operator delete(void* p, std::size_t n) noexcept { uncounted(p, n); }
void operator delete[](void* p, std::size_t n) noexcept { uncounted(p, n); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { aligned_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { aligned_free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, std::align_val_t) noexcept { aligned_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { aligned_free(p); }

namespace ebb::engine {
namespace {

std::string key_of(std::size_t i, std::size_t length) {
  std::string k = "k" + std::to_string(i) + "-";
  k.resize(std::max(length, k.size()), 'x');
  return k;
}

// Fills `batch` with `n` events of unit weight, keys drawn skewed toward
// the first of `keys` by the generator state `x`, event i at time_of(i).
template <typename TimeOf>
void skewed_batch(PreparedBatch& batch, std::size_t n, const std::vector<std::string>& keys, std::uint64_t& x, TimeOf time_of) {
  batch.count = n;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::size_t rank = (x >> 33) % keys.size();
    const std::size_t k = rank * rank / keys.size();
    batch.items[i] = keys[k];
    batch.hashes[i] = hash_key(keys[k]);
    batch.times[i] = time_of(i);
    batch.weights[i] = 1;
  }
}

// Feeds a skewed stream of keys of `length` bytes, in batches, then checks
// what the view reports against what it holds.
void check(std::uint64_t budget, std::size_t length) {
  SCOPED_TRACE("budget " + std::to_string(budget) + ", keys of " + std::to_string(length) + " bytes");
  NamespaceConfig config;
  config.k = 100;
  config.all_time = false;
  config.half_lives = {60};
  config.memory = budget;
  const auto sizing = DecayedView::fit_budget(budget, config.k);
  config.sketch = sizing.sketch;
  config.candidates = sizing.candidates;
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < 20000; ++i) keys.push_back(key_of(i, length));
  PreparedBatch batch;
  batch.reserve(1000);
  const std::size_t before = g_live;
  auto view = std::make_unique<DecayedView>(ViewSpec::decayed(60), config);
  const std::size_t empty = g_live - before;
  EXPECT_EQ(empty, view->memory_bytes());
  EXPECT_EQ(empty, DecayedView::reserved_bytes(config.sketch, config.candidates));
  std::uint64_t x = 1;
  for (int round = 0; round < 60; ++round) {
    skewed_batch(batch, 1000, keys, x, [&](std::size_t) { return 1000.0 + round; });
    batch.min_time = batch.max_time = 1000 + round;
    view->apply(batch);
    ASSERT_EQ(g_live - before, view->memory_bytes()) << "round " << round;
    ASSERT_LE(view->memory_bytes(), budget) << "round " << round;
  }
  {
    const auto answer = view->top(100, 1060);
    EXPECT_EQ(answer.accuracy.memory_budget, budget);
    EXPECT_EQ(answer.accuracy.memory_bytes, view->memory_bytes());
    if (length <= 15) {
      EXPECT_EQ(answer.accuracy.candidates, config.candidates);  // keys inline: every candidate fits
    } else if (length >= 300) {
      EXPECT_LT(answer.accuracy.candidates, config.candidates);  // long keys: fewer fit, and the answer says so
    } else {
      EXPECT_LE(answer.accuracy.candidates, config.candidates);  // a fifth of the budget may hold them all
    }
  }
  view.reset();  // and everything it held goes
  EXPECT_EQ(g_live, before);
}

TEST(ViewMemory, ReportedBytesAreHeldBytesWithinTheBudget) {
  for (std::uint64_t budget : {32768ull, 131072ull, 1048576ull}) {
    for (std::size_t length : {8u, 40u, 300u}) check(budget, length);
  }
}

// The accuracy audit's reported bytes are the bytes it holds, through
// admissions, the sample's halvings, top items taken and let go of at
// passes, and window buckets, with short and long keys; all of it goes with
// it. Only the audit's own calls are counted (the views it reads keep
// caches of their own): windows without passes, passes without windows.
void check_audit(bool windows, std::size_t length) {
  SCOPED_TRACE(std::string(windows ? "windows" : "passes") + ", keys of " + std::to_string(length) + " bytes");
  NamespaceConfig config;
  config.k = 10;
  config.all_time = true;
  config.half_lives = {60};
  if (windows) config.windows = {60, 3600};
  config.sketch = CountMinShape::with_dimensions(1024, 3);
  config.window_sketch_width = 1024;
  config.candidates = 32;
  config.clock = ClockMode::event;
  config.audit_sample = 20;
  config.audit_top = windows ? 0 : 5;
  Namespace ns(config);  // its views; the audit below is apart from the namespace's own
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < 5000; ++i) keys.push_back(key_of(i, length));
  PreparedBatch batch;
  batch.reserve(500);
  const std::size_t before = g_live;
  auto audit = std::make_unique<AccuracyAudit>(config, ns.views(), true);
  std::size_t held = g_live - before;
  EXPECT_EQ(held, audit->memory_bytes());
  auto counted_call = [&](auto&& call) {
    const std::size_t at = g_live;
    call();
    held += g_live - at;  // (modulo 2^64: a call may free more than it takes)
  };
  std::uint64_t x = 7;
  for (int round = 0; round < 40; ++round) {
    skewed_batch(batch, 500, keys, x, [&](std::size_t i) { return 1.7e9 + round * 30 + static_cast<double>(i) / 20; });
    batch.min_time = batch.times[0];
    batch.max_time = batch.now = batch.times[499];
    counted_call([&] { audit->observe(batch, ns.views(), batch.now, batch.min_time); });
    ASSERT_EQ(held, audit->memory_bytes()) << "round " << round;
    ASSERT_LE(audit->memory_bytes(), AccuracyAudit::planned_bytes(config, length)) << "round " << round;
    for (const auto& v : ns.views()) v->apply(batch);
    if (!windows && round % 5 == 4) {
      counted_call([&] { audit->pass(ns.views(), batch.now, batch.now); });
      ASSERT_EQ(held, audit->memory_bytes()) << "pass after round " << round;
    }
  }
  EXPECT_GT(audit->summary().sampled_items, 0u);
  if (!windows) {
    EXPECT_GT(audit->summary().top_items, 0u);
  }
  counted_call([&] { audit.reset(); });
  EXPECT_EQ(held, 0u);
}

TEST(AuditMemory, ReportedBytesAreHeldBytes) {
  for (bool windows : {false, true}) {
    for (std::size_t length : {8u, 40u}) check_audit(windows, length);
  }
}

}  // namespace
}  // namespace ebb::engine
