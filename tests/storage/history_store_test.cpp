// The history database: what is written is read back as written, the
// newest snapshot at or before a time answers, series mark unlisted points,
// retention thins and deletes exactly what its policy says.
#include "ebb/storage/history_store.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sqlite3.h>

#include "support/ebb_server.hpp"

namespace ebb::storage {
namespace {

HistorySnapshot snap(std::string ns, std::string view, double t, std::vector<HistoryItem> items, std::uint32_t k = 2) {
  HistorySnapshot h;
  h.ns = std::move(ns);
  h.view = std::move(view);
  h.t = t;
  h.window_start = t - 3600;
  h.window_end = t;
  h.total = 100;
  h.epsilon = 0.001;
  h.confidence = 0.98;
  h.max_error = 0.1;
  h.guarantee_threshold = 1;
  h.k = k;
  h.items = std::move(items);
  return h;
}

class History : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_temp_dir("ebb-history"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path file() const { return dir_ / "history.sqlite3"; }
  std::filesystem::path dir_;
};

TEST_F(History, SnapshotsReadBackAsWrittenAndTheNewestAtOrBeforeATimeAnswers) {
  {
    HistoryStore h(file());
    h.write({snap("n", "w:1h", 1000, {{"a", 10, 9, 10}, {"b", 5, 5, 6}}), snap("n", "h:5m", 1000, {{"a", 3.5, 3.5, 3.5}})});
    h.write({snap("n", "w:1h", 1010, {{"b", 12, 12, 12}, {"a", 11, 10, 11}})});
    h.write({snap("n", "w:1h", 1010, {{"zzz", 99, 99, 99}})});  // already stored: left as it was
  }
  HistoryStore h(file());  // reopened: the file holds it all
  EXPECT_EQ(h.snapshots(), 3u);
  EXPECT_FALSE(h.at("n", "w:1h", 999.5).has_value());
  auto s = h.at("n", "w:1h", 1009.9);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->t, 1000);
  ASSERT_EQ(s->items.size(), 2u);
  EXPECT_EQ(s->items[0].item, "a");
  EXPECT_EQ(s->items[0].lower, 9);
  EXPECT_EQ(s->items[1].upper, 6);
  EXPECT_EQ(s->window_start, -2600);
  s = h.at("n", "w:1h", 5000);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->t, 1010);
  EXPECT_EQ(s->items[0].item, "b");
  EXPECT_EQ(s->unlisted_bound(), 1);  // no bound given: the guarantee threshold
  EXPECT_EQ(h.at("n", "h:5m", 5000)->unlisted_bound(), 1);  // one of k = 2: the guarantee threshold
  EXPECT_FALSE(h.at("other", "w:1h", 5000).has_value());
  // A list ranked by estimate: an unlisted item may count more than the
  // lowest listed estimate; the bound the view gave is kept.
  auto ranked = snap("n", "h:1h", 1000, {{"a", 10, 9, 10}, {"b", 5, 2, 8}}, 2);
  ranked.unlisted = 7.5;
  h.write({ranked});
  EXPECT_EQ(h.at("n", "h:1h", 1000)->unlisted, 7.5);
  EXPECT_EQ(h.at("n", "h:1h", 1000)->unlisted_bound(), 7.5);

  const auto points = h.series("n", "w:1h", "a", 0, 2000, 100);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].rank, 1u);
  EXPECT_EQ(points[1].rank, 2u);
  EXPECT_EQ(points[1].estimate, 11);
  const auto missing = h.series("n", "h:5m", "b", 0, 2000, 100);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_FALSE(missing[0].rank.has_value());
  EXPECT_EQ(missing[0].upper, 1);
  EXPECT_EQ(h.series("n", "w:1h", "a", 0, 2000, 1).size(), 1u);
  EXPECT_GT(h.bytes(), 0u);
}

TEST_F(History, RetentionThinsByAgeAndDeletesOnlyWhatThePolicySays) {
  HistoryStore h(file());
  const double now = 100 * 86400.0;
  std::vector<HistorySnapshot> all;
  // Every 10 s over the last 2 hours; every 10 s over an hour 3 days ago;
  // every 10 s over two hours 30 days ago; one point 200 days ago.
  for (double t = now - 7200; t < now; t += 10) all.push_back(snap("n", "all", t, {{"a", 1, 1, 1}}));
  for (double t = now - 3 * 86400; t < now - 3 * 86400 + 3600; t += 10) all.push_back(snap("n", "all", t, {{"a", 1, 1, 1}}));
  for (double t = now - 30 * 86400; t < now - 30 * 86400 + 7200; t += 10) all.push_back(snap("n", "all", t, {{"a", 1, 1, 1}}));
  all.push_back(snap("n", "all", now - 200 * 86400, {{"a", 1, 1, 1}}));
  h.write(all);
  const auto before = h.snapshots();
  ASSERT_EQ(before, 720u + 360u + 720u + 1u);
  const auto deleted = h.apply_retention(now, HistoryRetention{});
  // Kept: the last 2 hours whole (720); 3 days ago one a minute (60);
  // 30 days ago one an hour (2); 200 days ago nothing.
  EXPECT_EQ(h.snapshots(), 720u + 60u + 2u);
  EXPECT_EQ(deleted, before - h.snapshots());
  // The points kept are the first of each minute / hour.
  EXPECT_EQ(h.at("n", "all", now - 3 * 86400 + 59)->t, now - 3 * 86400);
  EXPECT_EQ(h.at("n", "all", now - 30 * 86400 + 3599)->t, now - 30 * 86400);
  // The items of deleted snapshots go with them.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM items", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(st, 0), 720 + 60 + 2);
  sqlite3_finalize(st);
  sqlite3_close(db);
  h.drop_namespace("n");
  EXPECT_EQ(h.snapshots(), 0u);
}

TEST_F(History, ADatabaseOfAnotherSchemaVersionIsRefused) {
  {
    HistoryStore h(file());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file().c_str(), &db), SQLITE_OK);
  // Another build's file: version 99, and without one of our indexes.
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'; DROP INDEX items_by_item", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  try {
    HistoryStore h(file());
    FAIL() << "opened";
  } catch (const HistoryError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99, this build reads 1"), std::string::npos) << e.what();
  }
  // Refused untouched: the index was not added back.
  ASSERT_EQ(sqlite3_open(file().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'items_by_item'", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(st, 0), 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_THROW(HistoryStore(dir_ / "no" / "such" / "dir" / "h.sqlite3"), HistoryError);
}

TEST_F(History, ADatabaseOfSomethingElseIsRefusedWithoutAByteChanged) {
  const auto other = dir_ / "other.sqlite3";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE x(a); INSERT INTO x VALUES(1)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const auto read = [&] {
    std::ifstream in(other, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string before = read();
  try {
    HistoryStore h(other);
    FAIL() << "opened";
  } catch (const HistoryError& e) {
    EXPECT_NE(std::string(e.what()).find(other.string() + " is a database of something else"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(), before);
  EXPECT_FALSE(std::filesystem::exists(other.string() + "-wal"));
}

}  // namespace
}  // namespace ebb::storage
