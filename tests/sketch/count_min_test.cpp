#include "ebb/sketch/count_min/count_min.hpp"

#include <gtest/gtest.h>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "support/exact_model.hpp"

namespace ebb {
namespace {

using testing::random_stream;
using testing::StreamSpec;

TEST(CountMinShape, SizedByErrorRoundsWidthUpToPowerOfTwo) {
  auto s = CountMinShape::for_error(0.001, 0.0001);
  EXPECT_EQ(s.width, 4096u);  // ceil(e / 0.001) = 2719 -> 4096
  EXPECT_EQ(s.depth, 10u);    // ceil(ln 10000) = 10
  EXPECT_LE(s.epsilon(), 0.001);
  EXPECT_GE(s.confidence(), 0.9999);
}

TEST(CountMinShape, RejectsBadDimensionsWithTheReason) {
  EXPECT_THROW(CountMinShape::with_dimensions(1000, 4), InvalidArgument);
  EXPECT_THROW(CountMinShape::with_dimensions(1024, 0), InvalidArgument);
  EXPECT_THROW(CountMinShape::with_dimensions(1024, 33), InvalidArgument);
  EXPECT_THROW(CountMinShape::for_error(0, 0.1), InvalidArgument);
  EXPECT_THROW(CountMinShape::for_error(0.1, 1.5), InvalidArgument);
  try {
    CountMinShape::with_dimensions(1000, 4);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("power of two"), std::string::npos);
  }
}

class CountMinProperty : public ::testing::TestWithParam<std::uint64_t> {};

// A CMS never under-counts, under either policy, with random weights; CU is
// never above plain; the epsilon * N bound fails for at most a small share.
TEST_P(CountMinProperty, NeverUnderCountsAndMeetsTheBound) {
  StreamSpec spec;
  spec.events = 20000;
  spec.universe = 3000;
  auto stream = random_stream(spec, GetParam());
  const auto shape = CountMinShape::with_dimensions(256, 4);
  CountMin cu(shape, UpdatePolicy::conservative), plain(shape, UpdatePolicy::plain);
  testing::ExactModel model;
  for (const auto& e : stream) {
    const auto h = hash_key(e.key);
    const double est = cu.update(h, e.weight);
    EXPECT_EQ(est, cu.estimate(h));
    plain.update(h, e.weight);
    model.add(e.key, e.time, e.weight);
  }
  const auto truth = model.counts(0, 0);
  std::size_t over_bound = 0;
  for (const auto& [key, count] : truth) {
    const auto h = hash_key(key);
    ASSERT_GE(cu.estimate(h), count * (1 - 1e-12)) << key;
    ASSERT_GE(plain.estimate(h), count * (1 - 1e-12)) << key;
    ASSERT_LE(cu.estimate(h), plain.estimate(h) * (1 + 1e-12)) << key;
    if (plain.estimate(h) > count + plain.max_error()) ++over_bound;
  }
  // delta = e^-4 ~ 1.8%: allow twice that before calling it a failure.
  EXPECT_LE(static_cast<double>(over_bound) / truth.size(), 2 * std::exp(-4.0));
  EXPECT_NEAR(cu.total(), model.total(0, 0), 1e-9 * model.total(0, 0));
}

// Batched (prefetching) updates give exactly the same state as one by one.
TEST_P(CountMinProperty, BatchUpdateMatchesSequential) {
  StreamSpec spec;
  spec.events = 5000;
  auto stream = random_stream(spec, GetParam() + 100);
  CountMin a(CountMinShape::with_dimensions(512, 5)), b(CountMinShape::with_dimensions(512, 5));
  std::vector<std::uint64_t> hashes;
  std::vector<double> weights, estimates(stream.size());
  for (const auto& e : stream) {
    hashes.push_back(hash_key(e.key));
    weights.push_back(e.weight);
  }
  b.update_batch(hashes, weights, estimates);
  for (std::size_t i = 0; i < stream.size(); ++i) ASSERT_EQ(a.update(hashes[i], weights[i]), estimates[i]);
  EXPECT_EQ(a.serialize(), b.serialize());
}

// Merge: plain sketches add exactly; CU merges never under-count.
TEST_P(CountMinProperty, MergeOfPartitionsNeverUnderCounts) {
  StreamSpec spec;
  spec.events = 10000;
  auto stream = random_stream(spec, GetParam() + 200);
  const auto shape = CountMinShape::with_dimensions(1024, 4);
  for (auto policy : {UpdatePolicy::plain, UpdatePolicy::conservative}) {
    CountMin whole(shape, policy), left(shape, policy), right(shape, policy);
    testing::ExactModel model;
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const auto h = hash_key(stream[i].key);
      whole.update(h, stream[i].weight);
      (i % 2 ? left : right).update(h, stream[i].weight);
      model.add(stream[i].key, 0, stream[i].weight);
    }
    left.merge(right);
    EXPECT_NEAR(left.total(), whole.total(), 1e-9 * whole.total());
    for (const auto& [key, count] : model.counts(0, 0)) {
      const auto h = hash_key(key);
      ASSERT_GE(left.estimate(h), count * (1 - 1e-12));
      if (policy == UpdatePolicy::plain) {
        ASSERT_NEAR(left.estimate(h), whole.estimate(h), 1e-9 * whole.estimate(h));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, CountMinProperty, ::testing::Values(1, 2, 3, 4, 5));

TEST(CountMin, MergeRejectsOtherShapesAndPolicies) {
  CountMin a(CountMinShape::with_dimensions(64, 2)), b(CountMinShape::with_dimensions(128, 2));
  CountMin c(CountMinShape::with_dimensions(64, 2), UpdatePolicy::plain);
  EXPECT_THROW(a.merge(b), InvalidArgument);
  EXPECT_THROW(a.merge(c), InvalidArgument);
}

TEST(CountMin, DoubleCountersKeepCountingPastFloatAndU32Limits) {
  CountMin s(CountMinShape::with_dimensions(16, 2));
  const auto h = hash_key("hot");
  s.update(h, 16777216.0);  // 2^24: where float32 stops counting ones
  s.update(h, 1.0);
  EXPECT_EQ(s.estimate(h), 16777217.0);
  for (int i = 0; i < 3; ++i) s.update(h, 4294967296.0);  // past 2^32 three times
  s.update(h, 1.0);
  EXPECT_EQ(s.estimate(h), 16777218.0 + 3 * 4294967296.0);
  // 1e9 unit events on one counter stay within 0.1% (exact, in fact).
  CountMin big(CountMinShape::with_dimensions(16, 1));
  for (int i = 0; i < 1000; ++i) big.update(h, 1e6);
  big.update(h, 1.0);
  EXPECT_EQ(big.estimate(h), 1e9 + 1);
}

TEST(CountMin, ScaleMultipliesCountersAndTotal) {
  CountMin s(CountMinShape::with_dimensions(64, 3));
  const auto h = hash_key("x");
  s.update(h, 8);
  s.scale(0.25);
  EXPECT_DOUBLE_EQ(s.estimate(h), 2);
  EXPECT_DOUBLE_EQ(s.total(), 2);
}

TEST(CountMin, SerialisationRoundTripsAndRejectsCorruption) {
  CountMin s(CountMinShape::with_dimensions(256, 3));
  for (int i = 0; i < 1000; ++i) s.update(hash_key("k" + std::to_string(i % 97)), 1 + i % 7);
  const std::string blob = s.serialize();
  CountMin back = CountMin::deserialize(blob);
  EXPECT_EQ(back.shape(), s.shape());
  EXPECT_EQ(back.total(), s.total());
  for (int i = 0; i < 97; ++i) EXPECT_EQ(back.estimate(hash_key("k" + std::to_string(i))), s.estimate(hash_key("k" + std::to_string(i))));
  EXPECT_EQ(back.serialize(), blob);

  std::string flipped = blob;
  flipped[blob.size() / 2] ^= 0x40;
  EXPECT_THROW(CountMin::deserialize(flipped), FormatError);
  EXPECT_THROW(CountMin::deserialize(blob.substr(0, blob.size() - 9)), FormatError);
  EXPECT_THROW(CountMin::deserialize("not a sketch at all, just text"), FormatError);
  EXPECT_THROW(CountMin::deserialize(""), FormatError);
  try {
    CountMin::deserialize(flipped);
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
}

TEST(CountMin, EmptyMeansZeroTotalWeight) {
  CountMin s(CountMinShape::with_dimensions(64, 2));
  EXPECT_TRUE(s.empty());
  s.update(hash_key("a"), 3);
  EXPECT_FALSE(s.empty());
  s.clear();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.estimate(hash_key("a")), 0);
}

}  // namespace
}  // namespace ebb

namespace ebb {
namespace {

// A wide sketch folded into a narrow one, or a narrow one widened: the
// result never under-counts, and folding is exactly the narrow sketch of
// the same events under plain update (a column is the prefix of the wider one's).
TEST(CountMinFold, FoldingAndWideningKeepEveryCountAndFoldingMatchesTheNarrowPlainSketch) {
  const auto narrow_shape = CountMinShape::with_dimensions(64, 3), wide_shape = CountMinShape::with_dimensions(256, 3);
  CountMin wide(wide_shape, UpdatePolicy::plain), narrow_plain(narrow_shape, UpdatePolicy::plain), narrow(narrow_shape, UpdatePolicy::plain);
  std::map<std::uint64_t, double> truth;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t h = rng() % 700 * 0x9E3779B97F4A7C15ULL;
    const double w = 1 + rng() % 4;
    wide.update(h, w);
    narrow_plain.update(h, w);
    truth[h] += w;
  }
  narrow.merge_folded(wide);
  EXPECT_EQ(narrow.total(), wide.total());
  const CountMin back = narrow_plain.widened(256);
  EXPECT_EQ(back.total(), narrow_plain.total());
  for (const auto& [h, count] : truth) {
    EXPECT_EQ(narrow.estimate(h), narrow_plain.estimate(h));
    EXPECT_GE(narrow.estimate(h), count);
    EXPECT_EQ(back.estimate(h), narrow_plain.estimate(h));  // every wide column holds its prefix's counter
  }
  EXPECT_THROW(wide.merge_folded(narrow), InvalidArgument);
  EXPECT_THROW(narrow.merge_folded(CountMin(CountMinShape::with_dimensions(256, 4), UpdatePolicy::plain)), InvalidArgument);
}

// merge_resized() adds a sketch of any width: a narrower one lands as its
// widened() copy would, a wider one folded, a like one counter by counter.
TEST(CountMinFold, MergeResizedAddsNarrowerLikeAndWiderSketches) {
  const auto shape = [](std::uint32_t w) { return CountMinShape::with_dimensions(w, 3); };
  CountMin narrow(shape(64)), like(shape(128)), wide(shape(512));
  std::map<std::uint64_t, double> truth;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t h = rng() % 500 * 0x9E3779B97F4A7C15ULL;
    const double w = 1 + rng() % 3;
    (i % 3 == 0 ? narrow : i % 3 == 1 ? like : wide).update(h, w);
    truth[h] += w;
  }
  CountMin sum(shape(128));
  sum.merge_resized(narrow);
  sum.merge_resized(like);
  sum.merge_resized(wide);
  CountMin expected = narrow.widened(128);
  expected.merge(like);
  expected.merge_folded(wide);
  EXPECT_EQ(sum.total(), narrow.total() + like.total() + wide.total());
  for (const auto& [h, count] : truth) {
    EXPECT_EQ(sum.estimate(h), expected.estimate(h));
    EXPECT_GE(sum.estimate(h), count);
  }
  EXPECT_THROW(sum.merge_resized(CountMin(CountMinShape::with_dimensions(64, 4))), InvalidArgument);
  EXPECT_THROW(sum.merge_resized(CountMin(shape(64), UpdatePolicy::plain)), InvalidArgument);
}

}  // namespace
}  // namespace ebb
