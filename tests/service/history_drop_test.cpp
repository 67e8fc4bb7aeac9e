// A deleted namespace's history drop against the history thread's passes
// (service_history.cpp), step by step on the service's state: each
// delete's mark is dropped once, and a drop never reaches the rows of a
// namespace made again under the name.
#include <gtest/gtest.h>

#include <filesystem>

#include "src/service/service_state.hpp"
#include "support/ebb_server.hpp"
#include "support/quiet_logger.hpp"

namespace ebb::service {
namespace {

storage::HistorySnapshot snapshot(const std::string& ns, double t, const std::string& item) {
  storage::HistorySnapshot s;
  s.ns = ns;
  s.view = "all";
  s.t = t;
  s.window_end = t;
  s.k = 10;
  s.items.push_back({item, 1, 1, 1});
  s.total = 1;
  return s;
}

struct HistoryState {
  std::filesystem::path dir = testing::make_temp_dir("ebb-history-drop-state");
  Service::State s{[this] {
                     ServiceOptions o;
                     o.data_dir = dir;
                     return o;
                   }(),
                   testing::quiet_logger()};
  HistoryState() {
    std::filesystem::create_directories(dir);
    s.history = std::make_unique<storage::HistoryStore>(dir / "history.sqlite3");
  }
  ~HistoryState() {
    s.history.reset();
    std::filesystem::remove_all(dir);
  }
  std::optional<std::string> item_at(double t) const {
    const auto at = s.history->at("a", "all", t);
    if (!at || at->t != t || at->items.empty()) return std::nullopt;
    return at->items[0].item;
  }
};

// A delete's mark under way is its own: a pass's retry leaves it (and the
// name masked, so no pass writes it meanwhile) for the delete to drop.
// (Taken by a retry, the pass after could snapshot the namespace before
// its delete marked it deleted: rows the delete would then not drop.)
TEST(HistoryDrop, ARetryLeavesAMarkUnderWayToItsDelete) {
  HistoryState h;
  auto& s = h.s;
  s.history->write({snapshot("a", 100, "old")});
  const auto mark = mark_history_pending(s, "a");
  EXPECT_TRUE(s.pending_drop("a"));  // no pass writes the name now
  {
    std::lock_guard pass(s.history_mu);
    retry_history_drops(s);
  }
  EXPECT_TRUE(s.pending_drop("a"));
  EXPECT_EQ(h.item_at(100), "old");
  EXPECT_TRUE(drop_history(s, "a", mark));
  EXPECT_FALSE(s.pending_drop("a"));
  EXPECT_EQ(h.item_at(100), std::nullopt);
  EXPECT_FALSE(std::filesystem::exists(h.dir / "history-pending-drops"));
}

// A mark handed over (the delete's drop was refused) is the retry's; the
// delete's mark is then done with, and a late drop of it touches nothing
// (rows written since are a namespace made again under the name).
TEST(HistoryDrop, AMarkHandedOverIsTheRetrysToDrop) {
  HistoryState h;
  auto& s = h.s;
  s.history->write({snapshot("a", 100, "old")});
  const auto mark = mark_history_pending(s, "a");
  hand_over_history_mark(s, "a", mark);
  EXPECT_TRUE(std::filesystem::exists(h.dir / "history-pending-drops"));
  {
    std::lock_guard pass(s.history_mu);
    retry_history_drops(s);
  }
  EXPECT_FALSE(s.pending_drop("a"));
  EXPECT_EQ(h.item_at(100), std::nullopt);
  s.history->write({snapshot("a", 200, "new")});
  EXPECT_TRUE(drop_history(s, "a", mark));
  EXPECT_EQ(h.item_at(200), "new");
  EXPECT_FALSE(std::filesystem::exists(h.dir / "history-pending-drops"));
}

// Two deletes of the name in flight: the first's drop satisfies its own
// mark only; the second's stays pending (the name is still masked) until
// its own drop, which removes what was written meanwhile.
TEST(HistoryDrop, EachDeleteDropsItsOwnMark) {
  HistoryState h;
  auto& s = h.s;
  s.history->write({snapshot("a", 100, "first")});
  const auto first = mark_history_pending(s, "a");
  const auto second = mark_history_pending(s, "a");
  EXPECT_NE(first, second);
  EXPECT_TRUE(drop_history(s, "a", first));
  EXPECT_TRUE(s.pending_drop("a"));
  EXPECT_TRUE(std::filesystem::exists(h.dir / "history-pending-drops"));
  s.history->write({snapshot("a", 200, "second")});
  EXPECT_TRUE(drop_history(s, "a", second));
  EXPECT_FALSE(s.pending_drop("a"));
  EXPECT_EQ(h.item_at(200), std::nullopt);
  EXPECT_FALSE(std::filesystem::exists(h.dir / "history-pending-drops"));
}

// A delete that fails unmarks its own mark, not another delete's.
TEST(HistoryDrop, AFailedDeleteUnmarksOnlyItsOwnMark) {
  HistoryState h;
  auto& s = h.s;
  const auto kept = mark_history_pending(s, "a");
  const auto failed = mark_history_pending(s, "a");
  unmark_history_pending(s, "a", failed);
  ASSERT_EQ(s.pending_drops.size(), 1u);
  EXPECT_EQ(s.pending_drops.begin()->second.mark, kept);
  unmark_history_pending(s, "a", failed);  // (twice: nothing more)
  EXPECT_EQ(s.pending_drops.size(), 1u);
}

}  // namespace
}  // namespace ebb::service
