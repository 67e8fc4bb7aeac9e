// The answer cache on its own: an answer is reused only for the same
// question, at the same namespace version, within the TTL.
#include "src/service/answer_cache.hpp"

#include <gtest/gtest.h>

namespace ebb::service {
namespace {

using namespace std::chrono_literals;
using Clock = AnswerCache::Clock;

AnswerCache::Body body(const std::string& text) { return std::make_shared<const std::string>(text); }

TEST(AnswerCache, ReusesAnAnswerForTheSameQuestionAndVersionWithinTheTtl) {
  AnswerCache cache(0.1);
  const auto t0 = Clock::time_point{} + 1h;
  cache.store("5m|100|json", 7, t0, body("a"));
  ASSERT_NE(cache.find("5m|100|json", 7, t0 + 99ms), nullptr);
  EXPECT_EQ(*cache.find("5m|100|json", 7, t0 + 99ms), "a");
  EXPECT_EQ(cache.find("5m|100|json", 8, t0 + 1ms), nullptr);    // the namespace changed
  EXPECT_EQ(cache.find("5m|100|json", 7, t0 + 100ms), nullptr);  // too old
  EXPECT_EQ(cache.find("5m|10|json", 7, t0 + 1ms), nullptr);    // another question
}

TEST(AnswerCache, KeepsTheNewerOfTwoRacingComputations) {
  AnswerCache cache(1);
  const auto t0 = Clock::time_point{} + 1h;
  cache.store("q", 2, t0 + 5ms, body("new"));
  cache.store("q", 1, t0 + 9ms, body("older version"));  // computed before the change, stored after
  cache.store("q", 2, t0 + 1ms, body("earlier"));
  EXPECT_EQ(*cache.find("q", 2, t0 + 10ms), "new");
  cache.store("q", 3, t0 + 6ms, body("newest"));
  EXPECT_EQ(*cache.find("q", 3, t0 + 10ms), "newest");
  EXPECT_EQ(cache.find("q", 2, t0 + 10ms), nullptr);
}

TEST(AnswerCache, HoldsAtMostItsCapacityDroppingTheOldestStored) {
  AnswerCache cache(1, 2);
  const auto t0 = Clock::time_point{} + 1h;
  cache.store("a", 1, t0, body("A"));
  cache.store("b", 1, t0, body("B"));
  cache.store("c", 1, t0, body("C"));
  EXPECT_EQ(cache.find("a", 1, t0), nullptr);
  EXPECT_EQ(*cache.find("b", 1, t0), "B");
  EXPECT_EQ(*cache.find("c", 1, t0), "C");
}

TEST(AnswerCache, ATtlOfZeroKeepsNothing) {
  AnswerCache cache(0);
  EXPECT_FALSE(cache.enabled());
  const auto t0 = Clock::time_point{} + 1h;
  cache.store("q", 1, t0, body("A"));
  EXPECT_EQ(cache.find("q", 1, t0), nullptr);
}

TEST(AnswerCache, KeepsAtMostItsBytesAndNoAnswerLargerThanThem) {
  AnswerCache cache(1, 32, 10);
  const auto t0 = Clock::time_point{} + 1h;
  cache.store("a", 1, t0, body("aaaa"));
  cache.store("b", 1, t0, body("bbbb"));
  cache.store("c", 1, t0, body("cccc"));  // 12 bytes with a and b: a goes
  EXPECT_EQ(cache.find("a", 1, t0), nullptr);
  EXPECT_EQ(*cache.find("b", 1, t0), "bbbb");
  EXPECT_EQ(*cache.find("c", 1, t0), "cccc");
  cache.store("d", 1, t0, body("ddddddddddd"));  // 11 bytes: never kept
  EXPECT_EQ(cache.find("d", 1, t0), nullptr);
  EXPECT_EQ(*cache.find("b", 1, t0), "bbbb");
}

TEST(AnswerCache, AStaleAnswerIsDroppedWhenLookedUp) {
  AnswerCache cache(1, 32, 8);
  const auto t0 = Clock::time_point{} + 1h;
  cache.store("a", 1, t0, body("aaaa"));
  cache.store("b", 1, t0, body("bbbb"));
  EXPECT_EQ(cache.find("a", 2, t0), nullptr);  // a changed: dropped, which frees its 4 bytes
  cache.store("c", 1, t0, body("cccc"));
  EXPECT_EQ(*cache.find("b", 1, t0), "bbbb");  // so b stays
  EXPECT_EQ(*cache.find("c", 1, t0), "cccc");
}

TEST(AnswerCache, AnAbsurdTtlMeansForeverNotAnOverflow) {
  AnswerCache cache(1e12);
  EXPECT_TRUE(cache.enabled());
  const auto t0 = Clock::time_point{} + 1h;
  cache.store("q", 1, t0, body("A"));
  EXPECT_EQ(*cache.find("q", 1, t0 + 24h * 365 * 10), "A");
}

}  // namespace
}  // namespace ebb::service
