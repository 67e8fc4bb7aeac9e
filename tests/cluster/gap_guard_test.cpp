// When a reader must ask where the stream starts (cluster/gap_guard.hpp).
#include "ebb/cluster/gap_guard.hpp"

#include <gtest/gtest.h>

namespace ebb::cluster {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(GapGuard, OffNeverAsks) {
  GapGuard off;
  EXPECT_FALSE(off.must_ask());
  GapGuard zero{std::chrono::seconds(0)};
  EXPECT_FALSE(zero.must_ask());
}

// With 60 s of retention: asked before the first record and before it
// was ever asked, not while the last one applied is younger than 30 s
// (and the last ask is recent), asked again once it is older.
TEST(GapGuard, AsksWithNoRecordOrOneOlderThanHalfTheRetention) {
  GapGuard g{std::chrono::seconds(60)};
  EXPECT_TRUE(g.must_ask());
  g.applied(now_ns() - 1'000'000'000);  // 1 s ago
  EXPECT_TRUE(g.must_ask());            // (never asked yet)
  g.asked();
  EXPECT_FALSE(g.must_ask());
  g.applied(now_ns() - 29'000'000'000);  // 29 s ago
  EXPECT_FALSE(g.must_ask());
  g.applied(now_ns() - 31'000'000'000);  // 31 s ago: something after it may be gone
  EXPECT_TRUE(g.must_ask());
  g.applied(now_ns() + 1'000'000'000);  // a server clock ahead of this one
  EXPECT_FALSE(g.must_ask());
}

}  // namespace
}  // namespace ebb::cluster
