// The augmented candidate heap against the brute-force model: bounds hold
// for held keys, the sketch never under-counts a key not held, every key
// above the threshold is held, the list's unlisted bound covers every key
// left out; and the fixture that motivated it, a cold key sharing every
// cell with a hot one, is no longer reported as hot.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/sketch/augmented_heap/augmented_heap.hpp"
#include "ebb/sketch/candidate_heap/candidate_heap.hpp"
#include "ebb/sketch/count_min/count_min.hpp"
#include "support/exact_model.hpp"

namespace ebb {
namespace {

using testing::ExactModel;
using testing::random_stream;
using testing::StreamSpec;

constexpr double kTol = 1e-9;

// Feeds the events in batches of random size (1..kMaxBatch), as views do.
void feed(AugmentedHeap& heap, CountMin& sketch, const std::vector<testing::ModelEvent>& events, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string_view> keys;
  std::vector<std::uint64_t> hashes;
  std::vector<double> weights;
  for (std::size_t begin = 0; begin < events.size();) {
    const std::size_t n = std::min<std::size_t>(events.size() - begin, 1 + rng() % AugmentedHeap::kMaxBatch);
    keys.clear();
    hashes.clear();
    weights.clear();
    for (std::size_t i = begin; i < begin + n; ++i) {
      keys.push_back(events[i].key);
      hashes.push_back(hash_key(events[i].key));
      weights.push_back(events[i].weight);
    }
    heap.apply(sketch, keys.data(), hashes.data(), weights.data(), n);
    begin += n;
  }
}

void expect_honest(const AugmentedHeap& heap, const CountMin& sketch, const std::map<std::string, double>& truth, double scale) {
  const auto all = heap.top(heap.capacity());
  std::set<std::string> held;
  for (const auto& item : all.items) {
    ASSERT_TRUE(held.insert(item.key).second) << "duplicate " << item.key;
    const double t = truth.at(item.key) * scale;
    ASSERT_LE(item.lower, t * (1 + kTol)) << item.key;
    ASSERT_GE(item.upper, t * (1 - kTol)) << item.key;
    ASSERT_LE(item.lower, item.estimate);
    ASSERT_LE(item.estimate, item.upper);
    ASSERT_EQ(heap.find(item.key, hash_key(item.key)), item);
  }
  for (std::size_t i = 1; i < all.items.size(); ++i) ASSERT_GE(all.items[i - 1].estimate, all.items[i].estimate);
  for (const auto& [key, count] : truth) {
    if (held.contains(key)) continue;
    ASSERT_LE(count * scale, heap.threshold() * (1 + kTol)) << key << " is not held";
    ASSERT_GE(sketch.estimate(hash_key(key)), count * scale * (1 - kTol)) << key << " under-counted by the sketch";
    ASSERT_FALSE(heap.find(key, hash_key(key)).has_value());
  }
  // A shorter list: every key left out, held or not, is within its bound.
  const std::size_t k = heap.size() / 3;
  const auto list = heap.top(k);
  ASSERT_EQ(list.items.size(), k);
  std::set<std::string> listed;
  for (const auto& item : list.items) listed.insert(item.key);
  for (const auto& [key, count] : truth) {
    if (!listed.contains(key)) {
      ASSERT_LE(count * scale, list.unlisted_upper * (1 + kTol)) << key;
    }
  }
}

class AugmentedHeapProperty : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(AugmentedHeapProperty, BoundsGuaranteeAndSketchInvariantHold) {
  StreamSpec spec;
  spec.events = 30000;
  spec.universe = 3000;
  spec.integer_weights = GetParam() % 2 == 0;
  const auto stream = random_stream(spec, GetParam());
  CountMin sketch(CountMinShape::with_dimensions(256, 3));
  AugmentedHeap heap(100);
  feed(heap, sketch, stream, GetParam());
  ExactModel model;
  for (const auto& e : stream) model.add(e.key, 0, e.weight);
  const auto truth = model.counts(0, 0);
  expect_honest(heap, sketch, truth, 1);
  // Nothing is lost or counted twice: the held keys' weight plus the sketch's is the stream's.
  EXPECT_NEAR(heap.absorbed() + sketch.total(), model.total(0, 0), model.total(0, 0) * kTol);
  EXPECT_GT(heap.absorbed(), 0);
  // Decayed coordinates: a rebase scales the heap and its sketch alike.
  heap.scale(0.25);
  sketch.scale(0.25);
  expect_honest(heap, sketch, truth, 0.25);
}

TEST_P(AugmentedHeapProperty, RestoredHeapAnswersAndCountsOnAsTheOriginal) {
  StreamSpec spec;
  spec.events = 8000;
  spec.universe = 800;
  const auto stream = random_stream(spec, GetParam() + 100);
  const std::vector<testing::ModelEvent> first(stream.begin(), stream.begin() + 5000), rest(stream.begin() + 5000, stream.end());
  CountMin sketch(CountMinShape::with_dimensions(128, 3));
  AugmentedHeap heap(50);
  feed(heap, sketch, first, 1);
  AugmentedHeap back = AugmentedHeap::deserialize(heap.serialize(), 50);
  CountMin sketch_back = CountMin::deserialize(sketch.serialize());
  EXPECT_EQ(back.top(50).items, heap.top(50).items);
  EXPECT_EQ(back.serialize(), heap.serialize());
  feed(heap, sketch, rest, 2);
  feed(back, sketch_back, rest, 2);
  EXPECT_EQ(back.serialize(), heap.serialize());
  EXPECT_EQ(sketch_back.serialize(), sketch.serialize());
}

INSTANTIATE_TEST_SUITE_P(Seeds, AugmentedHeapProperty, ::testing::Values(21, 22, 23, 24));

// Two keys whose cells are the same in every row of a one-row sketch.
std::pair<std::string, std::string> colliding_keys(const CountMin& probe) {
  for (int i = 0;; ++i) {
    for (int j = 0; j < i; ++j) {
      const std::string a = "k" + std::to_string(i), b = "k" + std::to_string(j);
      CountMin s = probe;
      s.update(hash_key(a), 1);
      if (s.estimate(hash_key(b)) == 1) return {a, b};
    }
  }
}

// The motivating fixture: a plain candidate heap reports a cold key that
// shares its cells with a hot one at the hot key's count; here the hot
// key's events stay out of the sketch, so the cold one is counted as what
// it is: one event, and at most one more it cannot rule out.
// held_estimates() answers as find() does, key by key, whatever the number
// asked (shorter and longer than its look-ahead), for held keys short and
// long (past std::string's inline buffer, in slots other keys left), keys
// not held, and the empty key.
TEST(AugmentedHeap, HeldEstimatesAnswerAsFindForEveryKeyAndCount) {
  StreamSpec spec;
  spec.events = 20000;
  spec.universe = 2000;
  std::vector<testing::ModelEvent> stream = random_stream(spec, 7);
  for (std::size_t i = 0; i < stream.size(); ++i) {
    if (stream[i].key.size() % 2 == 0) stream[i].key += "-a-key-longer-than-the-inline-buffer";
  }
  CountMin sketch(CountMinShape::with_dimensions(256, 3));
  AugmentedHeap heap(100);
  feed(heap, sketch, stream, 7);
  const auto held_items = heap.top(heap.capacity()).items;
  ASSERT_EQ(held_items.size(), 100u);
  ASSERT_GT(heap.evictions(), 0u);  // (slots were reused)
  std::vector<std::string> asked;  // held keys, with absent ones (short, long, empty) between them
  for (std::size_t i = 0; i < held_items.size(); ++i) {
    if (i < 60) asked.push_back("absent-" + std::to_string(i) + (i % 2 ? "-and-long-enough-to-live-outside" : ""));
    if (i == 2) asked.emplace_back();
    asked.push_back(held_items[i].key);
  }
  std::vector<std::string_view> keys(asked.begin(), asked.end());
  std::vector<std::uint64_t> hashes;
  for (const auto& k : asked) hashes.push_back(hash_key(k));
  std::size_t held = 0;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{5}, std::size_t{9}, std::size_t{17}, std::size_t{100}, asked.size()}) {
    std::vector<std::optional<double>> out(n, -1.0);
    heap.held_estimates(keys.data(), hashes.data(), n, out.data());
    held = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto found = heap.find(keys[i], hashes[i]);
      ASSERT_EQ(out[i].has_value(), found.has_value()) << n << " " << asked[i];
      if (found) {
        EXPECT_EQ(*out[i], found->estimate) << n << " " << asked[i];
        ++held;
      }
    }
  }
  EXPECT_EQ(held, 100u);
}

// One pass over the heap gives exactly the held keys whose estimate is at
// least the bound, each with the estimate top() reports: bounds at, just
// above and just below held estimates, below every one and above all.
TEST(AugmentedHeap, HeldAtLeastGivesEveryHeldKeyFromTheBoundOn) {
  StreamSpec spec;
  spec.events = 20000;
  spec.universe = 2000;
  const std::vector<testing::ModelEvent> stream = random_stream(spec, 11);
  CountMin sketch(CountMinShape::with_dimensions(256, 3));
  AugmentedHeap heap(100);
  feed(heap, sketch, stream, 11);
  const auto held_items = heap.top(heap.capacity()).items;  // estimate descending
  ASSERT_EQ(held_items.size(), 100u);
  std::vector<double> bounds{-INFINITY, 0, held_items.front().estimate + 1, INFINITY};
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{37}, std::size_t{99}}) {
    const double e = held_items[i].estimate;
    bounds.insert(bounds.end(), {e, std::nextafter(e, INFINITY), std::nextafter(e, -INFINITY)});
  }
  for (const double bound : bounds) {
    std::vector<HeldScore> out{{"left-as-it-was", 1, 2}};  // appended to, not replaced
    ASSERT_TRUE(heap.held_at_least(bound, heap.size(), out));
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.front().key, "left-as-it-was");
    std::map<std::string, double> got;
    for (std::size_t j = 1; j < out.size(); ++j) {
      EXPECT_EQ(out[j].hash, hash_key(out[j].key));
      EXPECT_TRUE(got.emplace(std::string(out[j].key), out[j].score).second) << out[j].key << " twice";
    }
    std::map<std::string, double> want;
    for (const auto& item : held_items) {
      if (item.estimate >= bound) want.emplace(item.key, item.estimate);
    }
    EXPECT_EQ(got, want) << "bound " << bound;
    // One more than allowed: cut short and said so; as many as allowed: whole.
    if (!want.empty()) {
      std::vector<HeldScore> cut;
      EXPECT_FALSE(heap.held_at_least(bound, want.size() - 1, cut)) << "bound " << bound;
      EXPECT_LT(cut.size(), want.size());
      cut.clear();
      EXPECT_TRUE(heap.held_at_least(bound, want.size(), cut)) << "bound " << bound;
      EXPECT_EQ(cut.size(), want.size());
    }
  }
}

TEST(AugmentedHeap, ColdKeySharingEveryCellWithAHotKeyIsNotReportedHot) {
  CountMin empty(CountMinShape::with_dimensions(16, 1));
  const auto [hot, cold] = colliding_keys(empty);
  CountMin plain_sketch = empty, sketch = empty;
  CandidateHeap plain(2);
  AugmentedHeap heap(2);
  const double one = 1;
  for (int i = 0; i < 100; ++i) {
    const std::string_view key = hot;
    const auto h = hash_key(hot);
    plain.offer(hot, h, 1, plain_sketch.update(h, 1));
    heap.apply(sketch, &key, &h, &one, 1);
  }
  const std::string_view key = cold;
  const auto h = hash_key(cold);
  plain.offer(cold, h, 1, plain_sketch.update(h, 1));
  heap.apply(sketch, &key, &h, &one, 1);
  EXPECT_EQ(plain.find(cold, h)->upper, 101);  // before: the hot key's count
  EXPECT_EQ(heap.find(hot, hash_key(hot)), (CountedItem{hot, 100, 100, 100}));
  // Entered with the sketch's estimate 2 (the hot key's first event and its
  // own): at most 1 before entry; none of the probed keys saw any count, so
  // the estimate keeps that 1.
  EXPECT_EQ(heap.find(cold, h), (CountedItem{cold, 2, 1, 2}));
  EXPECT_EQ(heap.absorbed(), 99);
  EXPECT_EQ(sketch.total(), 2);
}

// When the heap is full, the key that leaves writes its count back into the
// sketch, which then never under-counts it.
TEST(AugmentedHeap, EvictedKeyIsWrittenBackIntoTheSketch) {
  CountMin sketch(CountMinShape::with_dimensions(1024, 2));
  AugmentedHeap heap(1);
  auto add = [&](const std::string& k, double w) {
    const std::string_view key = k;
    const auto h = hash_key(k);
    heap.apply(sketch, &key, &h, &w, 1);
  };
  add("a", 1);
  add("a", 4);  // held: counted in the heap only
  EXPECT_EQ(sketch.estimate(hash_key("a")), 1);
  add("b", 6);  // estimate 6 > 5: "a" leaves
  EXPECT_FALSE(heap.find("a", hash_key("a")).has_value());
  EXPECT_EQ(sketch.estimate(hash_key("a")), 5);
  EXPECT_EQ(heap.threshold(), 6);
  EXPECT_EQ(heap.top(1).unlisted_upper, 6);
  EXPECT_EQ(heap.top(0).unlisted_upper, 6);
}

TEST(AugmentedHeap, CandidateHeapStateCarriesOver) {
  CountMin sketch(CountMinShape::with_dimensions(64, 3));
  CandidateHeap old(8);
  for (int i = 0; i < 300; ++i) {
    const std::string key = "k" + std::to_string(i % 20);
    const auto h = hash_key(key);
    old.offer(key, h, 1, sketch.update(h, 1));
  }
  const auto heap = AugmentedHeap::from_candidate_heap(old);
  EXPECT_EQ(heap.top(8).items, old.top(8));  // the same bounds, and the estimate it reported (the upper bound)
  EXPECT_EQ(heap.threshold(), old.threshold());
  EXPECT_EQ(heap.absorbed(), 0);
}

TEST(AugmentedHeap, DamagedBlobsAreRefused) {
  CountMin sketch(CountMinShape::with_dimensions(64, 2));
  AugmentedHeap heap(4);
  const std::string_view key = "a";
  const auto h = hash_key("a");
  const double w = 2;
  heap.apply(sketch, &key, &h, &w, 1);
  const std::string blob = heap.serialize();
  const std::string payload(open_blob(blob, BlobKind::augmented_heap, 2).payload);
  // Payload: f64 absorbed, f64 floor, u8 budget flag, u32 capacity, u32 size,
  // entry (u32 length, key, f64 value, f64 aux), f64 base.
  auto with = [&](std::size_t offset, auto value) {
    std::string p = payload;
    std::memcpy(p.data() + offset, &value, sizeof value);
    return seal_blob(BlobKind::augmented_heap, 2, p);
  };
  struct Case {
    std::string blob;
    std::optional<std::uint32_t> capacity;
    std::string message;
  };
  const Case cases[] = {
      {blob, 5, "corrupt augmented heap: summary capacity 4 differs from the configuration's 5"},
      {with(0, -1.0), 4, "corrupt augmented heap: bad absorbed weight"},
      {with(8, std::nan("")), 4, "corrupt augmented heap: bad floor"},
      {with(16, std::uint8_t{2}), 4, "corrupt augmented heap: bad key budget flag"},
      {with(17 + 8 + 4 + 1 + 8 + 8, std::nan("")), 4, "corrupt augmented heap: bad estimate before entry"},
      {with(17 + 8 + 4 + 1 + 8, 3.0), 4, "corrupt augmented heap: an entry's lower bound exceeds its upper bound"},
      {blob.substr(0, blob.size() - 1), 4, "augmented heap blob is truncated or padded: header says 54 payload bytes, found 53"},
  };
  for (const auto& c : cases) {
    try {
      (void)AugmentedHeap::deserialize(c.blob, c.capacity);
      ADD_FAILURE() << "accepted: " << c.message;
    } catch (const FormatError& e) {
      EXPECT_EQ(std::string(e.what()), c.message);
    }
  }
  EXPECT_EQ(AugmentedHeap::deserialize(blob, 4).top(4).items, heap.top(4).items);
  // Version 1 (no floor, no flag) is still read.
  const std::string v1 = seal_blob(BlobKind::augmented_heap, 1, payload.substr(0, 8) + payload.substr(17));
  EXPECT_EQ(AugmentedHeap::deserialize(v1, 4).serialize(), blob);
}

// A key budget: long keys take bytes outside their entries, so fewer fit;
// the keys that leave or stay out are bounded by the threshold.
TEST(AugmentedHeap, KeyBudgetHoldsFewerLongKeysAndKeepsItsBounds) {
  CountMin sketch(CountMinShape::with_dimensions(1024, 3));
  const std::string pad(40, 'x');  // 41 bytes outside the entry each (std::string's inline capacity is 15)
  AugmentedHeap heap(8, 100);     // room for two such keys
  ExactModel model;
  std::vector<testing::ModelEvent> events;
  for (int i = 0; i < 400; ++i) {
    const std::string k = (i % 3 == 0 ? "short" + std::to_string(i % 4) : pad + std::to_string(i % 7));
    events.push_back({k, 0, 1.0 + i % 5});
    model.add(k, 0, 1.0 + i % 5);
  }
  feed(heap, sketch, events, 3);
  EXPECT_LE(heap.key_bytes(), 100u);
  EXPECT_EQ(heap.held_at_most(), heap.size());
  EXPECT_LT(heap.size(), 8u);
  expect_honest(heap, sketch, model.counts(0, 0), 1);
  const auto back = AugmentedHeap::deserialize(heap.serialize(), 8, 100);
  EXPECT_EQ(back.key_bytes(), heap.key_bytes());
  EXPECT_EQ(back.threshold(), heap.threshold());
  EXPECT_EQ(back.held_at_most(), heap.held_at_most());
}

}  // namespace
}  // namespace ebb
