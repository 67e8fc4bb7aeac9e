// Property tests of both top-K summaries against the brute-force model:
// bounds always hold, every item above the guarantee threshold is reported,
// decayed coordinates (scale) keep everything valid, merges and
// serialisation round-trip.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/sketch/candidate_heap/candidate_heap.hpp"
#include "ebb/sketch/count_min/count_min.hpp"
#include "ebb/sketch/space_saving/space_saving.hpp"
#include "support/exact_model.hpp"

namespace ebb {
namespace {

using testing::ExactModel;
using testing::random_stream;
using testing::StreamSpec;

constexpr double kTol = 1e-9;

template <typename Summary>
void expect_bounds_and_guarantee(const Summary& s, const std::map<std::string, double>& truth, double scale = 1) {
  const auto all = s.top(s.capacity());
  std::set<std::string> reported;
  for (const auto& item : all) {
    ASSERT_TRUE(reported.insert(item.key).second) << "duplicate " << item.key;
    const double t = truth.contains(item.key) ? truth.at(item.key) * scale : 0;
    ASSERT_LE(item.lower, t * (1 + kTol) + 1e-12) << item.key;
    ASSERT_GE(item.upper, t * (1 - kTol)) << item.key;
    ASSERT_LE(item.lower, item.estimate * (1 + kTol));
    ASSERT_LE(item.estimate, item.upper * (1 + kTol));
  }
  for (std::size_t i = 1; i < all.size(); ++i) ASSERT_GE(all[i - 1].estimate, all[i].estimate);
  const double threshold = s.threshold();
  for (const auto& [key, count] : truth) {
    if (count * scale > threshold * (1 + kTol)) {
      ASSERT_TRUE(reported.contains(key)) << key << " true " << count << " > threshold " << threshold;
    }
  }
}

class SummaryProperty : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(SummaryProperty, SpaceSavingBoundsAndGuaranteeHold) {
  StreamSpec spec;
  spec.events = 20000;
  spec.universe = 2000;
  auto stream = random_stream(spec, GetParam());
  SpaceSaving ss(100);
  ExactModel model;
  for (const auto& e : stream) {
    ss.update(e.key, hash_key(e.key), e.weight);
    model.add(e.key, 0, e.weight);
  }
  const auto truth = model.counts(0, 0);
  expect_bounds_and_guarantee(ss, truth);
  EXPECT_LE(ss.threshold(), model.total(0, 0) / ss.capacity() * (1 + kTol));
  // Decayed coordinates: scaling everything keeps every bound.
  ss.scale(0.125);
  expect_bounds_and_guarantee(ss, truth, 0.125);
}

TEST_P(SummaryProperty, CandidateHeapBoundsAndGuaranteeHold) {
  StreamSpec spec;
  spec.events = 20000;
  spec.universe = 2000;
  auto stream = random_stream(spec, GetParam() + 10);
  CountMin cms(CountMinShape::with_dimensions(512, 4));
  CandidateHeap heap(100);
  ExactModel model;
  for (const auto& e : stream) {
    const auto h = hash_key(e.key);
    heap.offer(e.key, h, e.weight, cms.update(h, e.weight));
    model.add(e.key, 0, e.weight);
  }
  const auto truth = model.counts(0, 0);
  expect_bounds_and_guarantee(heap, truth);
  heap.scale(3.5);
  expect_bounds_and_guarantee(heap, truth, 3.5);
}

TEST_P(SummaryProperty, MergedSummariesKeepBoundsAndGuarantee) {
  StreamSpec spec;
  spec.events = 16000;
  spec.universe = 1500;
  auto stream = random_stream(spec, GetParam() + 20);
  SpaceSaving ssa(80), ssb(80);
  const auto shape = CountMinShape::with_dimensions(512, 4);
  CountMin ca(shape), cb(shape);
  CandidateHeap ha(80), hb(80);
  ExactModel model;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    const auto& e = stream[i];
    const auto h = hash_key(e.key);
    // Uneven partitions: the harder case for merges.
    const bool left = (h % 3) != 0 || i % 5 == 0;
    (left ? ssa : ssb).update(e.key, h, e.weight);
    auto& cms = left ? ca : cb;
    (left ? ha : hb).offer(e.key, h, e.weight, cms.update(h, e.weight));
    model.add(e.key, 0, e.weight);
  }
  const auto truth = model.counts(0, 0);
  ssa.merge(ssb);
  EXPECT_NEAR(ssa.total(), model.total(0, 0), kTol * model.total(0, 0));
  expect_bounds_and_guarantee(ssa, truth);
  ha.merge(hb, ca, cb);
  ca.merge(cb);
  expect_bounds_and_guarantee(ha, truth);
}

// As a window's rings use it: one bucket after another merged into a
// parent that also counts events of its own; bounds and the guarantee hold
// after every merge (items the parent evicts while merging included).
TEST_P(SummaryProperty, HeapsMergedInTurnIntoOneParentKeepBoundsAndGuarantee) {
  StreamSpec spec;
  spec.events = 24000;
  spec.universe = 3000;
  auto stream = random_stream(spec, GetParam() + 40);
  const auto shape = CountMinShape::with_dimensions(256, 4);
  CountMin parent_sketch(shape);
  CandidateHeap parent(60);
  ExactModel model;
  const std::size_t per_child = 2000;
  for (std::size_t begin = 0; begin < stream.size(); begin += per_child) {
    CountMin child_sketch(shape);
    CandidateHeap child(60);
    for (std::size_t i = begin; i < begin + per_child; ++i) {
      const auto& e = stream[i];
      const auto h = hash_key(e.key);
      if (i % 7 == 0) {
        parent.offer(e.key, h, e.weight, parent_sketch.update(h, e.weight));
      } else {
        child.offer(e.key, h, e.weight, child_sketch.update(h, e.weight));
      }
      model.add(e.key, 0, e.weight);
    }
    parent.merge(child, parent_sketch, child_sketch);
    parent_sketch.merge(child_sketch);
    ASSERT_EQ(parent.size(), 60u);
    expect_bounds_and_guarantee(parent, model.counts(0, 0));
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SummaryProperty, ::testing::Values(11, 12, 13, 14, 15));

TEST(SpaceSaving, SerialisationRoundTripsAndRejectsForeignBlobs) {
  SpaceSaving ss(16);
  for (int i = 0; i < 500; ++i) {
    const std::string key = "k" + std::to_string(i % 40);
    ss.update(key, hash_key(key), 1 + i % 3);
  }
  const auto blob = ss.serialize();
  const auto back = SpaceSaving::deserialize(blob);
  EXPECT_EQ(back.top(16), ss.top(16));
  EXPECT_EQ(back.threshold(), ss.threshold());
  EXPECT_EQ(back.total(), ss.total());
  EXPECT_THROW(CandidateHeap::deserialize(blob), FormatError);
  CountMin cms(CountMinShape::with_dimensions(16, 1));
  try {
    SpaceSaving::deserialize(cms.serialize());
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("count-min"), std::string::npos) << e.what();
  }
}

TEST(CandidateHeap, SerialisationRoundTrips) {
  CountMin cms(CountMinShape::with_dimensions(64, 3));
  CandidateHeap heap(8);
  for (int i = 0; i < 300; ++i) {
    const std::string key = "k" + std::to_string(i % 20);
    const auto h = hash_key(key);
    heap.offer(key, h, 1, cms.update(h, 1));
  }
  const auto back = CandidateHeap::deserialize(heap.serialize());
  EXPECT_EQ(back.top(8), heap.top(8));
  EXPECT_EQ(back.threshold(), heap.threshold());
  std::string blob = heap.serialize();
  blob[20] ^= 1;
  EXPECT_THROW(CandidateHeap::deserialize(blob), FormatError);
}

// A reader that knows the capacity it needs (a namespace restoring its
// views) refuses another one before allocating the summary's table: a
// damaged capacity of 2^24 made each view's restore allocate and zero
// ~1.3 GiB before the capacity was compared. Found by
// fuzz/fuzz_namespace_state (its executions slowed to 600/s on such inputs).
TEST(CandidateHeap, BlobOfAnotherCapacityIsRefusedBeforeAllocation) {
  CandidateHeap heap(4);
  heap.offer("a", hash_key("a"), 1, 1);
  const std::string blob = heap.serialize();
  EXPECT_EQ(CandidateHeap::deserialize(blob, 4).top(4), heap.top(4));
  EXPECT_EQ(CandidateHeap::deserialize(blob).capacity(), 4u);
  // The capacity is the u32 after the 16-byte envelope header and the 8-byte floor.
  std::string payload(open_blob(blob, BlobKind::candidate_heap, 1).payload);
  const std::uint32_t huge = KeyedMinHeap::kMaxCapacity;
  std::memcpy(payload.data() + 8, &huge, 4);
  const std::string damaged = seal_blob(BlobKind::candidate_heap, 1, payload);
  struct Case {
    std::string blob;
    std::uint32_t expected;
    std::string message;
  };
  const Case cases[] = {{blob, 8, "corrupt candidate heap: summary capacity 4 differs from the configuration's 8"},
                        {damaged, 4, "corrupt candidate heap: summary capacity 16777216 differs from the configuration's 4"}};
  for (const auto& c : cases) {
    try {
      (void)CandidateHeap::deserialize(c.blob, c.expected);
      ADD_FAILURE() << "accepted: " << c.message;
    } catch (const FormatError& e) {
      EXPECT_EQ(std::string(e.what()), c.message);
    }
  }
  SpaceSaving ss(4);
  ss.update("a", hash_key("a"), 1);
  try {
    (void)SpaceSaving::deserialize(ss.serialize(), 5);
    ADD_FAILURE() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "corrupt space-saving summary: summary capacity 4 differs from the configuration's 5");
  }
}

}  // namespace
}  // namespace ebb
