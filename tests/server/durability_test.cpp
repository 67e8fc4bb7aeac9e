// The write-ahead log through the real server: what a 204 promises survives
// SIGKILL, retries with an Idempotency-Key count once, replays across admin
// operations rebuild the same state, damaged logs are cut and reported, a
// full disk refuses writes instead of acknowledging them.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <simdjson.h>
#include <sqlite3.h>
#include <sys/mount.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include "ebb/storage/segment_format.hpp"
#include "support/ebb_server.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::EbbServer;
using testing::HttpClient;

// Flags that keep every recovery on the log alone (no checkpoint runs).
const std::vector<std::string> kNoCheckpoints = {"--checkpoint-interval", "1h"};

std::string items_of(const std::string& top_k) { return top_k.substr(top_k.find("\"items\"")); }

double stat(HttpClient& c, const std::string& ns, const std::string& field) {
  const auto body = c.request("GET", "/namespaces/" + ns).body;
  simdjson::dom::parser p;
  auto doc = p.parse(body);
  return doc["stats"][field].get_double().value();
}

// 20 events with long item ids: about 640 bytes of log a batch.
std::string twenty_event_batch(const std::string& ns) {
  std::string batch = R"({"namespace":")" + ns + R"(","events":[)";
  for (int e = 0; e < 20; ++e) batch += std::string(e ? "," : "") + R"({"item_id":"an-item-name-of-some-length-)" + std::to_string(e) + R"("})";
  return batch + "]}";
}

// The log's segment files, oldest first (named by their first LSN).
std::vector<std::filesystem::path> segment_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> segments;
  for (const auto& e : std::filesystem::directory_iterator(dir / "wal")) segments.push_back(e.path());
  std::sort(segments.begin(), segments.end());
  return segments;
}

double metric(HttpClient& c, const std::string& name) {
  const auto m = c.request("GET", "/metrics").body;
  const auto at = m.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(m.substr(at + name.size() + 2));
}

// After a recovery that cut the log: one more event of weight 1 is taken,
// and survives another crash (the log goes on from where it was cut).
void expect_a_write_survives_another_crash(EbbServer& server, HttpClient& c, const std::filesystem::path& dir, const std::string& ns,
                                           double weight_before) {
  ASSERT_EQ(c.request("POST", "/events", R"({"namespace":")" + ns + R"(","events":[{"item_id":"a","weight":1}]})").status, 204);
  server.stop_hard();
  EbbServer again(dir, kNoCheckpoints);
  HttpClient c2(again.port());
  EXPECT_EQ(stat(c2, ns, "total_weight"), weight_before + 1);
}

TEST(Durability, AcknowledgedEventsSurviveSigkillWithoutACheckpoint) {
  const auto dir = testing::make_temp_dir("ebb-wal");
  {
    EbbServer server(dir, kNoCheckpoints);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"w","windows":["all"],"half_lives":["1h"]})").status, 201);
    for (int i = 0; i < 50; ++i) {
      ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"w","events":[{"item_id":"a","weight":2},{"item_id":"b"}]})").status, 204);
    }
    server.stop_hard();
  }
  EbbServer server(dir, kNoCheckpoints);
  HttpClient c(server.port());
  EXPECT_EQ(stat(c, "w", "events"), 100);
  EXPECT_EQ(stat(c, "w", "total_weight"), 150);
  EXPECT_NE(c.request("GET", "/count?namespace=w&item_id=a&window=all").body.find("\"estimated_count\":100,"), std::string::npos);
  EXPECT_EQ(metric(c, "ebb_recovery_records_replayed"), 51);  // the create and 50 batches
  std::filesystem::remove_all(dir);
}

TEST(Durability, IdempotencyKeyCountsARetryOnceAcrossRestarts) {
  const auto dir = testing::make_temp_dir("ebb-idem");
  const std::string body = R"({"namespace":"i","events":[{"item_id":"x","weight":5}]})";
  auto post = [&](HttpClient& c, const std::string& key, const std::string& b) {
    return c.request("POST", "/events", b, "application/json", {{"Idempotency-Key", key}});
  };
  {
    EbbServer server(dir, kNoCheckpoints);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"i"})").status, 201);
    EXPECT_EQ(post(c, "k1", body).status, 204);
    EXPECT_EQ(post(c, "k1", body).status, 204);  // the retry: answered, not counted
    const auto reused = post(c, "k1", R"({"namespace":"i","events":[{"item_id":"y"}]})");
    EXPECT_EQ(reused.status, 422);
    EXPECT_NE(reused.body.find("idempotency_key_reused"), std::string::npos);
    EXPECT_EQ(stat(c, "i", "total_weight"), 5);
    EXPECT_EQ(metric(c, "ebb_idempotent_replays_total"), 1);
    server.stop_hard();
  }
  {
    EbbServer server(dir, kNoCheckpoints);  // keys come back from the log
    HttpClient c(server.port());
    EXPECT_EQ(post(c, "k1", body).status, 204);
    EXPECT_EQ(post(c, "k2", body).status, 204);
    EXPECT_EQ(stat(c, "i", "total_weight"), 10);
    EXPECT_EQ(server.stop(), 0);  // and from the checkpoint written at shutdown
  }
  EbbServer server(dir, kNoCheckpoints);
  HttpClient c(server.port());
  EXPECT_EQ(post(c, "k1", body).status, 204);
  EXPECT_EQ(post(c, "k2", body).status, 204);
  EXPECT_EQ(stat(c, "i", "total_weight"), 10);
  // The same body for another namespace (?namespace=) or read as NDJSON is
  // another batch: the key cannot be reused for it.
  const std::string bare = R"({"events":[{"item_id":"x","weight":5}]})";
  EXPECT_EQ(c.request("POST", "/events?namespace=i", bare, "application/json", {{"Idempotency-Key", "k3"}}).status, 204);
  ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"j"})").status, 201);
  EXPECT_EQ(c.request("POST", "/events?namespace=j", bare, "application/json", {{"Idempotency-Key", "k3"}}).status, 422);
  EXPECT_EQ(c.request("POST", "/events?namespace=i", R"({"item_id":"x","weight":5})", "application/x-ndjson", {{"Idempotency-Key", "k3"}}).status,
            422);
  // A retry answers as the first attempt did, even once its namespace is gone.
  ASSERT_EQ(c.request("DELETE", "/namespaces/i").status, 204);
  EXPECT_EQ(post(c, "k1", body).status, 204);
  EXPECT_EQ(post(c, "k9", body).status, 404);  // a new batch for it is refused
  std::filesystem::remove_all(dir);
}

// A replay across PATCH exclude and DELETE + CREATE of the same name gives
// the same answers as the live server.
TEST(Durability, ReplayAcrossAdminOperationsRebuildsTheSameState) {
  const auto dir = testing::make_temp_dir("ebb-replay");
  std::string live_all, live_decayed, live_other;
  {
    EbbServer server(dir, kNoCheckpoints);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"r","half_lives":["30s"],"windows":["all"]})").status, 201);
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"o"})").status, 201);
    ASSERT_EQ(c.request("POST", "/events", R"({"events":[{"namespace":"r","item_id":"gone","weight":9},{"namespace":"o","item_id":"z"}]})").status, 204);
    ASSERT_EQ(c.request("DELETE", "/namespaces/r").status, 204);
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"r","half_lives":["30s"],"windows":["all"],"max_event_age":null})").status, 201);
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"r","events":[{"item_id":"a","weight":3,"timestamp":1000},{"item_id":"b","timestamp":1001}]})").status, 204);
    ASSERT_EQ(c.request("PATCH", "/namespaces/r", R"({"exclude":["b"],"k":5,"max_time_jump":"2h"})").status, 200);
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"r","events":[{"item_id":"b","weight":7},{"item_id":"c","weight":1.5}]})").status, 204);
    live_all = items_of(c.request("GET", "/top-k?namespace=r&window=all").body);
    live_decayed = c.request("GET", "/count?namespace=r&item_id=a&half_life=30s").body;
    live_other = items_of(c.request("GET", "/top-k?namespace=o").body);
    server.stop_hard();
  }
  EbbServer server(dir, kNoCheckpoints);
  HttpClient c(server.port());
  EXPECT_EQ(items_of(c.request("GET", "/top-k?namespace=r&window=all").body), live_all);
  EXPECT_EQ(items_of(c.request("GET", "/top-k?namespace=o").body), live_other);
  // The decayed view's stored coordinates are replayed bit for bit: the
  // count read now differs from the live one only by the decay since then,
  // so compare the exact state through a checkpoint of each instead.
  EXPECT_EQ(live_all.find("gone"), std::string::npos);
  EXPECT_EQ(stat(c, "r", "excluded_events"), 1);
  const auto ns = c.request("GET", "/namespaces/r").body;
  EXPECT_NE(ns.find(R"("exclude":["b"])"), std::string::npos) << ns;
  EXPECT_NE(ns.find(R"("k":5)"), std::string::npos) << ns;
  EXPECT_NE(ns.find(R"("max_event_age":null,"max_time_jump":"2h")"), std::string::npos) << ns;
  (void)live_decayed;
  std::filesystem::remove_all(dir);
}

// A fractional half-life is kept as whole milliseconds from the moment it
// is read, so the stored configuration, the state and queries agree after
// a restart (it used to brick the server: 246s vs 245.99999999999997).
TEST(Durability, FractionalHalfLivesSurviveRestarts) {
  const auto dir = testing::make_temp_dir("ebb-halflife");
  for (int run = 0; run < 3; ++run) {
    EbbServer server(dir, {"--checkpoint-interval", run == 0 ? "1h" : "50ms"});
    HttpClient c(server.port());
    if (run == 0) {
      const auto r = c.request("POST", "/namespaces", R"({"name":"f","half_lives":["4.1m","1.23456789s"]})");
      ASSERT_EQ(r.status, 201) << r.body;
      EXPECT_NE(r.body.find(R"("half_lives":["246s","1235ms"])"), std::string::npos) << r.body;
      ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"f","events":[{"item_id":"a"}]})").status, 204);
    }
    for (const char* q : {"246s", "4.1m", "1235ms", "1.23456789s"}) {
      EXPECT_EQ(c.request("GET", std::string("/top-k?namespace=f&half_life=") + q).status, 200) << q << " run " << run;
    }
    EXPECT_EQ(server.stop(), 0) << server.log();
  }
  std::filesystem::remove_all(dir);
}

TEST(Durability, ATornLogTailIsCutAndReported) {
  const auto dir = testing::make_temp_dir("ebb-torn");
  {
    EbbServer server(dir, kNoCheckpoints);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"t","windows":["all"]})").status, 201);
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"t","events":[{"item_id":"a","weight":4}]})").status, 204);
    server.stop_hard();
  }
  const auto segment = segment_files(dir).back();  // (the newest: the only one here)
  {
    std::ofstream out(segment, std::ios::binary | std::ios::app);
    out.write("\x30\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00torn", 16);  // a record header with half a payload
  }
  EbbServer server(dir, kNoCheckpoints);
  HttpClient c(server.port());
  EXPECT_EQ(stat(c, "t", "total_weight"), 4);
  EXPECT_EQ(metric(c, "ebb_wal_truncated_tails_total"), 1);
  EXPECT_NE(server.log().find("torn or corrupt tail"), std::string::npos);
  expect_a_write_survives_another_crash(server, c, dir, "t", 4);
  std::filesystem::remove_all(dir);
}

// A checkpoint names records by LSN. If the log lost records a checkpoint
// already holds (missing files, or a tail lost under an older release that
// did not sync the log before a checkpoint), recovery stops; told to go on,
// new records must not reuse those numbers: the next replay would skip
// them as already counted.
TEST(Durability, LsnsAreNeverReusedAfterALostLogTail) {
  const auto dir = testing::make_temp_dir("ebb-lsn");
  {
    EbbServer server(dir, {"--checkpoint-interval", "1h", "--fsync", "off"});
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"n","windows":["all"]})").status, 201);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"n","events":[{"item_id":"a"}]})").status, 204);
    EXPECT_EQ(server.stop(), 0) << server.log();  // the shutdown checkpoint holds records 1-4
  }
  const auto segment = segment_files(dir).back();  // (the newest: the only one here)
  std::filesystem::resize_file(segment, std::filesystem::file_size(segment) - 5);  // record 4 torn: cut, the checkpoint holds it
  {
    EbbServer server(dir, kNoCheckpoints);
    HttpClient c(server.port());
    EXPECT_EQ(stat(c, "n", "total_weight"), 3);  // from the checkpoint
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"n","events":[{"item_id":"b","weight":10}]})").status, 204);
    server.stop_hard();
  }
  EbbServer server(dir, kNoCheckpoints);
  HttpClient c(server.port());
  EXPECT_EQ(stat(c, "n", "total_weight"), 13) << server.log();  // the acknowledged batch was replayed, not skipped
  EXPECT_EQ(server.stop(), 0);
  // A log that ends before its checkpoint with nothing cut lost files:
  // recovery says so and changes nothing, unless told to go on.
  std::filesystem::remove_all(dir / "wal");
  const auto refused = testing::run_process({EBB_BINARY, "serve", "--port", "0", "--data-dir", dir.string()});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("ends at record 0 but the checkpoint holds records up to 5: log segments are missing"), std::string::npos)
      << refused.err;
  EbbServer repaired(dir, {"--checkpoint-interval", "1h", "--repair-log"});
  HttpClient c3(repaired.port());
  EXPECT_EQ(stat(c3, "n", "total_weight"), 13);
  std::filesystem::remove_all(dir);
}

// A damaged record the checkpoint already holds is skipped: the records
// after it (acknowledged after the checkpoint) are replayed, not cut.
TEST(Durability, DamageTheCheckpointHoldsIsSkippedAndLaterRecordsReplay) {
  const auto dir = testing::make_temp_dir("ebb-covered");
  auto post = [](HttpClient& c, const std::string& item, int weight) {
    return c.request("POST", "/events", R"({"namespace":"a","events":[{"item_id":")" + item + R"(","weight":)" + std::to_string(weight) + "}]}").status;
  };
  {
    EbbServer server(dir, kNoCheckpoints);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"a","windows":["all"]})").status, 201);
    for (int i = 1; i <= 3; ++i) ASSERT_EQ(post(c, "first" + std::to_string(i), 10), 204);
    EXPECT_EQ(server.stop(), 0);  // a checkpoint of records 1-4
  }
  {
    EbbServer server(dir, kNoCheckpoints);
    HttpClient c(server.port());
    for (int i = 1; i <= 3; ++i) ASSERT_EQ(post(c, "second" + std::to_string(i), 5), 204);  // records 5-7
    server.stop_hard();
  }
  const auto segment = segment_files(dir).back();  // (the newest: the only one here)
  {
    std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
    std::uint32_t n1 = 0;
    f.seekg(16);  // segment header, then record 1: u32 length, u64 LSN, u64 checksum, payload
    f.read(reinterpret_cast<char*>(&n1), 4);
    f.seekp(16 + 20 + n1 + 20 + 3);  // inside record 2's payload
    f.put('\x55');
  }
  EbbServer server(dir, kNoCheckpoints);
  HttpClient c(server.port());
  EXPECT_EQ(stat(c, "a", "total_weight"), 45) << server.log();
  EXPECT_EQ(stat(c, "a", "events"), 6);
  EXPECT_NE(server.log().find("records 2 to 2 are unreadable but the checkpoint holds them; skipped"), std::string::npos) << server.log();
  EXPECT_EQ(metric(c, "ebb_wal_truncated_tails_total"), 0);
  std::filesystem::remove_all(dir);
}

// One server per data directory, even when its LOCK file is deleted as
// "stale": two servers would write the same log numbers.
TEST(Durability, ASecondServerOnTheSameDirectoryIsRefused) {
  const auto dir = testing::make_temp_dir("ebb-lock");
  EbbServer first(dir, kNoCheckpoints);
  auto r = testing::run_process({EBB_BINARY, "serve", "--port", "0", "--data-dir", dir.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is in use by another ebb server (lock held on " + (dir / "LOCK").string() + ")"), std::string::npos) << r.err;
  std::filesystem::remove(dir / "LOCK");
  r = testing::run_process({EBB_BINARY, "serve", "--port", "0", "--data-dir", dir.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is in use by another ebb server (lock held on the directory)"), std::string::npos) << r.err;
  EXPECT_EQ(first.stop(), 0);
  std::filesystem::remove_all(dir);
}

// After a clean stop the checkpoint holds every record: a torn or damaged
// last record is cut and nothing is missing (it used to refuse to start,
// for good, claiming missing segments).
TEST(Durability, ADamagedLastRecordTheCheckpointHoldsIsCut) {
  const auto dir = testing::make_temp_dir("ebb-lastrec");
  {
    EbbServer server(dir, kNoCheckpoints);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"n","windows":["all"]})").status, 201);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"n","events":[{"item_id":"a","weight":2}]})").status, 204);
    EXPECT_EQ(server.stop(), 0);  // checkpoint of records 1-4
  }
  const auto segment = segment_files(dir).back();  // (the newest: the only one here)
  {
    std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(segment)) - 3);
    f.put('\x42');  // inside record 4's payload
  }
  EbbServer server(dir, kNoCheckpoints);
  HttpClient c(server.port());
  EXPECT_EQ(stat(c, "n", "total_weight"), 6) << server.log();
  EXPECT_EQ(metric(c, "ebb_wal_truncated_tails_total"), 1);
  expect_a_write_survives_another_crash(server, c, dir, "n", 6);
  std::filesystem::remove_all(dir);
}

// Until a second checkpoint exists the whole log stays, so a damaged sole
// manifest falls back to replaying the log from its start.
TEST(Durability, ADamagedSoleCheckpointFallsBackToTheWholeLog) {
  const auto dir = testing::make_temp_dir("ebb-solemanifest");
  const std::string batch = twenty_event_batch("s");
  {
    EbbServer server(dir, {"--checkpoint-interval", "1h", "--log-segment-bytes", "65536"});
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"s","windows":["all"]})").status, 201);
    for (int i = 0; i < 150; ++i) ASSERT_EQ(c.request("POST", "/events", batch).status, 204);  // 2 segments
    EXPECT_EQ(server.stop(), 0);  // the first checkpoint
  }
  std::filesystem::path manifest;
  for (const auto& e : std::filesystem::directory_iterator(dir / "checkpoints")) {
    if (e.path().extension() == ".manifest") manifest = e.path();
  }
  ASSERT_FALSE(manifest.empty());
  EXPECT_TRUE(std::filesystem::exists(dir / "wal" / "00000000000000000001.log"));  // not released behind a sole checkpoint
  {
    std::fstream f(manifest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x13');
  }
  EbbServer server(dir, kNoCheckpoints);
  HttpClient c(server.port());
  EXPECT_EQ(stat(c, "s", "events"), 3000) << server.log();
  EXPECT_NE(server.log().find("cannot be used"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Segments a second checkpoint covers are removed (the first stays until
// then), and what remains recovers every event.
TEST(Durability, SegmentsBehindTwoCheckpointsAreRemoved) {
  const auto dir = testing::make_temp_dir("ebb-release");
  const std::string batch = twenty_event_batch("r");
  const std::vector<std::string> flags = {"--checkpoint-interval", "1h", "--log-segment-bytes", "65536"};
  {
    EbbServer server(dir, flags);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"r","windows":["all"]})").status, 201);
    for (int i = 0; i < 250; ++i) ASSERT_EQ(c.request("POST", "/events", batch).status, 204);  // 3 segments
    EXPECT_EQ(server.stop(), 0);  // the first checkpoint: the log stays whole behind it
  }
  const auto before = segment_files(dir);
  ASSERT_GE(before.size(), 3u);
  EXPECT_EQ(before.front().filename(), "00000000000000000001.log");
  {
    EbbServer server(dir, flags);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/events", batch).status, 204);
    EXPECT_EQ(server.stop(), 0);  // the second: what the first covers goes
  }
  const auto after = segment_files(dir);
  ASSERT_FALSE(after.empty());
  EXPECT_GT(after.front().filename(), before.front().filename());
  EXPECT_LE(after.size(), before.size());
  EbbServer server(dir, flags);
  HttpClient c(server.port());
  EXPECT_EQ(stat(c, "r", "events"), 251 * 20);
  EXPECT_EQ(metric(c, "ebb_wal_segments"), static_cast<double>(segment_files(dir).size()));
  std::filesystem::remove_all(dir);
}

// A record whose checksum holds but which this build cannot read (a later
// release's record type, or a bug) stops recovery naming the record, and
// changes nothing.
TEST(Durability, ARecordThisBuildCannotReadIsNamed) {
  const auto dir = testing::make_temp_dir("ebb-unreadable");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v1", dir, std::filesystem::copy_options::recursive);
  const auto segment = dir / "wal" / "00000000000000000001.log";
  std::string record;
  storage::append_segment_record(record, 4, std::string("\x09 a record of a later type"));  // the golden log ends at record 3
  {
    std::ofstream out(segment, std::ios::binary | std::ios::app);
    out << record;
  }
  const auto size = std::filesystem::file_size(segment);
  auto r = testing::run_process({EBB_BINARY, "serve", "--port", "0", "--data-dir", dir.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("record 4 (in the segment whose name is the highest first LSN not above it) passed its checksum but cannot be read by "
                       "this build (log record: unknown type 9)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::filesystem::file_size(segment), size);  // nothing cut
  std::filesystem::remove_all(dir);
}

// Damage before the last segment is not a torn write: the later segments
// hold acknowledged records. Recovery refuses and says how to go on;
// --repair-log keeps what comes before the damage.
TEST(Durability, DamageBeforeTheLastSegmentStopsRecoveryUnlessRepairIsAsked) {
  const auto dir = testing::make_temp_dir("ebb-midlog");
  {
    EbbServer server(dir, {"--checkpoint-interval", "1h", "--log-segment-bytes", "65536"});
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"m","windows":["all"]})").status, 201);
    const std::string batch = twenty_event_batch("m");
    for (int i = 0; i < 250; ++i) ASSERT_EQ(c.request("POST", "/events", batch).status, 204);  // 3 segments
    server.stop_hard();
  }
  const auto segments = segment_files(dir);
  ASSERT_GE(segments.size(), 3u);
  {
    std::fstream f(segments[1], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');  // a flipped byte inside a record of the second segment
  }
  auto r = testing::run_process({EBB_BINARY, "serve", "--port", "0", "--data-dir", dir.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is damaged at byte 16 (checksum mismatch in record "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("records written after it follow (acknowledged writes)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--repair-log"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists(segments.back()));  // nothing was changed
  EbbServer server(dir, {"--checkpoint-interval", "1h", "--repair-log"});
  HttpClient c(server.port());
  EXPECT_EQ(metric(c, "ebb_wal_truncated_tails_total"), 1);
  // Byte 100 of the second segment is inside its first record (each is
  // about 640 bytes): every record before that one is kept, the create and
  // batches of 20 events.
  const double first_cut = std::stod(segments[1].filename().string().substr(0, 20));
  EXPECT_EQ(stat(c, "m", "events"), 20 * (first_cut - 2));
  EXPECT_TRUE(std::filesystem::exists(segments.back().string() + ".corrupt"));
  std::filesystem::remove_all(dir);
}

// A data directory written by the release before the log (configurations
// and checkpoints under namespaces/) loads, and is migrated.
TEST(Durability, ADataDirectoryOfThePreviousReleaseLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v0", dir, std::filesystem::copy_options::recursive);
  // A crash's half-written temporary is made here, not checked in: tools
  // that copy a source tree commonly drop *.tmp files.
  std::ofstream(dir / "namespaces" / "golden.state.tmp", std::ios::binary) << "half-written";
  {
    EbbServer server(dir, kNoCheckpoints);
    HttpClient c(server.port());
    const auto top = c.request("GET", "/top-k?namespace=golden&window=all").body;
    // Written by the previous release: apple 2 + 3 + 0.5, pear 2, "the" excluded.
    EXPECT_NE(top.find(R"("item_id":"apple","estimated_count":5.5,"lower_bound":5.5,"upper_bound":5.5,"rank":1)"), std::string::npos) << top;
    EXPECT_NE(top.find(R"("item_id":"pear","estimated_count":2,"lower_bound":2,"upper_bound":2,"rank":2)"), std::string::npos) << top;
    EXPECT_EQ(stat(c, "golden", "events"), 4);
    EXPECT_EQ(stat(c, "golden", "excluded_events"), 1);
    EXPECT_EQ(c.request("GET", "/namespaces").body.find("notes"), std::string::npos);  // a stray file is not a namespace
    EXPECT_NE(server.log().find("ignoring"), std::string::npos) << server.log();
    EXPECT_NE(server.log().find("golden.state.tmp"), std::string::npos) << server.log();  // a crash's temporary, removed
    // The server is ready once recovered; the migration's checkpoint and the
    // old folder's removal follow (a crash before them migrates again).
    for (int i = 0; i < 500 && server.log().find("migrated 1 namespaces") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "namespaces")) << server.log();  // migrated into a checkpoint
    server.stop_hard();
  }
  EbbServer server(dir, kNoCheckpoints);
  HttpClient c(server.port());
  EXPECT_EQ(stat(c, "golden", "total_weight"), 7.5);
  std::filesystem::remove_all(dir);
}

// A data directory of this release's format (log segment, manifest, state
// file, an idempotency key), checked in: written by
//   create golden (event clock, all + 1h, exclude "the", width 1024);
//   batch with Idempotency-Key golden-key-1 at t=1700000000: apple 2, pear 1, the 1;
//   SIGTERM (checkpoint: records 1-2); restart;
//   batch at t=1700003600: apple 3, fig 0.5; SIGKILL (record 3 in the log only).
TEST(Durability, ADataDirectoryOfThisFormatLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden-v1");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v1", dir, std::filesystem::copy_options::recursive);
  EbbServer server(dir, {"--checkpoint-interval", "1h", "--idempotency-window", "36500d"});
  HttpClient c(server.port());
  auto top = c.request("GET", "/top-k?namespace=golden&window=all").body;
  EXPECT_NE(top.find(R"("items":[{"item_id":"apple","estimated_count":5,"lower_bound":5,"upper_bound":5,"rank":1},)"
                     R"({"item_id":"pear","estimated_count":1,"lower_bound":1,"upper_bound":1,"rank":2},)"
                     R"({"item_id":"fig","estimated_count":0.5,"lower_bound":0.5,"upper_bound":0.5,"rank":3}],"total":6.5)"),
            std::string::npos) << top;
  top = c.request("GET", "/top-k?namespace=golden&half_life=1h").body;  // now = the newest event, one half-life after the first
  EXPECT_NE(top.find(R"("as_of":1700003600,"items":[{"item_id":"apple","estimated_count":4,)"), std::string::npos) << top;
  EXPECT_EQ(stat(c, "golden", "excluded_events"), 1);
  EXPECT_EQ(metric(c, "ebb_recovery_records_replayed"), 1);
  // The key came back from the checkpoint: the retry counts nothing, another batch under it is refused.
  const std::string batch = R"({"namespace":"golden","events":[{"item_id":"apple","timestamp":1700000000,"weight":2},)"
                            R"({"item_id":"pear","timestamp":1700000000},{"item_id":"the","timestamp":1700000000}]})";
  EXPECT_EQ(c.request("POST", "/events", batch, "application/json", {{"Idempotency-Key", "golden-key-1"}}).status, 204);
  EXPECT_EQ(c.request("POST", "/events", batch + " ", "application/json", {{"Idempotency-Key", "golden-key-1"}}).status, 422);
  EXPECT_EQ(stat(c, "golden", "total_weight"), 6.5);
  std::filesystem::remove_all(dir);
}

// A data directory with window rings, checked in: written by
//   create golden_w (event clock, all + 1m + 1h + half-life 5m, sketch width
//   1024, window_sketch_width 64);
//   batch at 1700000000..1700000050: apple 2 and pear 1 at :00, apple 1 at :10, fig 3 at :50;
//   SIGTERM (checkpoint: records 1-2); restart;
//   batch: pear 2 at 1700000065 and a late fig 1 at 1700000005; SIGKILL
//   (record 3 in the log only: the late event is replayed into closed buckets).
TEST(Durability, ADataDirectoryWithWindowsLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden-v2");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v2", dir, std::filesystem::copy_options::recursive);
  EbbServer server(dir, {"--checkpoint-interval", "1h"});
  HttpClient c(server.port());
  auto top = c.request("GET", "/top-k?namespace=golden_w&window=1m").body;
  EXPECT_NE(top.find(R"("window":{"start":1700000005,"end":1700000065},"window_length":"1m","as_of":1700000065,"granularity":1,)"
                     R"("items":[{"item_id":"fig","estimated_count":4,"lower_bound":4,"upper_bound":4,"rank":1},)"
                     R"({"item_id":"pear","estimated_count":2,"lower_bound":2,"upper_bound":2,"rank":2},)"
                     R"({"item_id":"apple","estimated_count":1,"lower_bound":1,"upper_bound":1,"rank":3}],"total":7,)"),
            std::string::npos) << top;
  top = c.request("GET", "/top-k?namespace=golden_w&window=1h").body;
  EXPECT_NE(top.find(R"("window":{"start":1699996440,"end":1700000065},"window_length":"1h","as_of":1700000065,"granularity":60,)"), std::string::npos) << top;
  EXPECT_NE(top.find(R"("total":10,)"), std::string::npos) << top;
  top = c.request("GET", "/top-k?namespace=golden_w&window=1h&timestamp=1700000030").body;
  EXPECT_NE(top.find(R"("window":{"start":1699996380,"end":1700000030},"window_length":"1h","as_of":1700000030,"source":"memory","granularity":60,)"
                     R"("items":[{"item_id":"apple","estimated_count":3,"lower_bound":3,"upper_bound":3,"rank":1},)"
                     R"({"item_id":"fig","estimated_count":1,"lower_bound":1,"upper_bound":1,"rank":2},)"
                     R"({"item_id":"pear","estimated_count":1,"lower_bound":1,"upper_bound":1,"rank":3}],"total":5,)"),
            std::string::npos) << top;
  EXPECT_EQ(metric(c, "ebb_recovery_records_replayed"), 1);
  std::filesystem::remove_all(dir);
}

// A data directory with a hot-key detector (namespace state version 2),
// checked in: written by
//   create golden_h (event clock, all-time, sketch width 64, 16 candidates,
//   hot_key_threshold 1, hot_key_half_life 10s);
//   batch at 1700000000: a 30, b 5; GET /hot-keys (a hot since 1700000000);
//   SIGTERM (checkpoint: records 1-2); restart;
//   batch: c 1 at 1700000005; SIGKILL (record 3 in the log only).
// a's rate at 1700000005 is ln 2 / 10 x 30 x 2^-0.5, still over 0.8: it
// stays hot since the checkpointed 1700000000 (a fresh detector would say
// 1700000005).
TEST(Durability, ADataDirectoryWithAHotKeyDetectorLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden-v3");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v3", dir, std::filesystem::copy_options::recursive);
  EbbServer server(dir, {"--checkpoint-interval", "1h"});
  HttpClient c(server.port());
  const double rate = std::log(2.0) / 10 * 30 * std::pow(2.0, -0.5);
  char want[256];
  std::snprintf(want, sizeof want,
                R"({"namespace":"golden_h","threshold":1,"half_life":"10s","cool_fraction":0.8,"as_of":1700000005,"complete":true,)"
                R"("items":[{"item_id":"a","rate":%.17g,"since":1700000000}]})",
                rate);
  const auto body = c.request("GET", "/hot-keys?namespace=golden_h").body;
  // The rate to the last bit or two: the sketch decays in forward-decay coordinates.
  EXPECT_EQ(body.substr(0, body.find(R"("rate":)")), std::string(want).substr(0, std::string(want).find(R"("rate":)"))) << body;
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(body).get(doc), simdjson::SUCCESS) << body;
  EXPECT_NEAR(double(doc["items"].at(0)["rate"]), rate, 1e-12 * rate);
  EXPECT_EQ(double(doc["items"].at(0)["since"]), 1700000000);
  EXPECT_EQ(doc["items"].get_array().size(), 1u);
  EXPECT_EQ(metric(c, "ebb_recovery_records_replayed"), 1);
  std::filesystem::remove_all(dir);
}

// A data directory with distributions (manifest version 2, its parts),
// checked in: written by `ebb serve --distribution-rate 0` (no decay; the
// test's server has the default rate: the logged rate wins) with
//   create golden_d (event clock, all-time, k 5, sketch width 64, 16 candidates);
//   batch at 1700000000: a 2;
//   /incr colors red N=2; /incr colors blue;
//   SIGTERM (checkpoint: records 1-4, distributions.14); restart;
//   /incr colors green N=0.5; /incr shapes circle; SIGKILL (records 5-6 in the log only).
TEST(Durability, ADataDirectoryWithDistributionsLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden-v4");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v4", dir, std::filesystem::copy_options::recursive);
  EbbServer server(dir, {"--checkpoint-interval", "1h"});
  HttpClient c(server.port());
  auto body = c.request("GET", "/dist?distribution=colors").body;
  EXPECT_NE(body.find(R"("data":[{"bin":"red","count":2,"p":0.5714285714285714},{"bin":"blue","count":1,"p":0.2857142857142857},)"
                      R"({"bin":"green","count":0.5,"p":0.14285714285714285}],"rate":0,"prune":true}})"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find(R"("Z":3.5,)"), std::string::npos) << body;
  body = c.request("GET", "/get?distribution=shapes&field=circle").body;
  EXPECT_NE(body.find(R"("data":[{"bin":"circle","count":1,"p":1}])"), std::string::npos) << body;
  EXPECT_EQ(c.request("GET", "/dbsize").body, R"({"status_code":200,"status_txt":"","data":2})");
  EXPECT_EQ(stat(c, "golden_d", "total_weight"), 2);
  EXPECT_EQ(metric(c, "ebb_recovery_records_replayed"), 2);
  std::filesystem::remove_all(dir);
}

// A data directory with a Poisson-decay distribution (distribution store
// version 2, a type 5 record with its decay byte), checked in: written by
// `ebb serve --distribution-decay poisson --distribution-rate 1e-9` (so it
// is not idle for centuries: the test runs at any later date) with
//   /incr p x N=70; /incr p y; SIGTERM (checkpoint: records 1-2); restart;
//   /incr p z N=2; SIGKILL (record 3 in the log only).
// The test's server has the defaults (exact decay): the logged decay wins
// ("prune": false).
TEST(Durability, ADataDirectoryWithAPoissonDistributionLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden-v6");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v6", dir, std::filesystem::copy_options::recursive);
  EbbServer server(dir, {"--checkpoint-interval", "1h"});
  HttpClient c(server.port());
  EXPECT_EQ(c.request("GET", "/dist?distribution=p&rate=0").body,
            R"({"status_code":200,"status_txt":"","data":{"distribution":"p","Z":73,"T":1795395293,"data":[{"bin":"x","count":70,"p":0.958904109589041},)"
            R"({"bin":"z","count":2,"p":0.0273972602739726},{"bin":"y","count":1,"p":0.0136986301369863}],"rate":0,"prune":false}})");
  EXPECT_EQ(metric(c, "ebb_recovery_records_replayed"), 1);
  std::filesystem::remove_all(dir);
}

// A data directory with augmented heaps (decayed view version 2, summary
// kind 2: augmented heap blobs), checked in: written by
//   create golden_a (event clock, all-time + half-life 1h, sketch 64 x 2,
//   2 candidates, k 2); batch at 1700000000: a weight 5, b weight 3;
//   batch: c x 4 at 1700000010 (c's estimate passes b's 3: b leaves,
//   written back into the sketch; c comes in with lower bound 1, or 2 in
//   the decayed view, where b's count has decayed);
//   SIGTERM (checkpoint: records 1-3); restart;
//   batch: a 1 at 1700000020; SIGKILL (record 4 in the log only).
TEST(Durability, ADataDirectoryWithAugmentedHeapsLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden-v7");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v7", dir, std::filesystem::copy_options::recursive);
  EbbServer server(dir, {"--checkpoint-interval", "1h"});
  HttpClient c(server.port());
  EXPECT_EQ(c.request("GET", "/top-k?namespace=golden_a&window=all").body,
            R"({"namespace":"golden_a","window":{"start":1700000000,"end":1700000020},"as_of":1700000020,"items":[)"
            R"({"item_id":"a","estimated_count":6,"lower_bound":6,"upper_bound":6,"rank":1},)"
            R"({"item_id":"c","estimated_count":4,"lower_bound":1,"upper_bound":4,"rank":2}],"total":13,)"
            R"("accuracy":{"type":"count_min_sketch","epsilon":0.04247315356967258,"confidence":0.8646647167633873,)"
            R"("max_error":0.5521509964057435,"guarantee_threshold":4,"candidates":2,"undersized":false,"tail_uncertain":true,"unlisted_upper_bound":4}})");
  EXPECT_EQ(c.request("GET", "/top-k?namespace=golden_a&half_life=1h").body,
            R"({"namespace":"golden_a","half_life":"1h","as_of":1700000020,"items":[)"
            R"({"item_id":"a","estimated_count":5.980782936102877,"lower_bound":5.980782936102877,"upper_bound":5.980782936102877,"rank":1},)"
            R"({"item_id":"c","estimated_count":3.9923057743025145,"lower_bound":1.9961528871512577,"upper_bound":3.9923057743025154,"rank":2}],)"
            R"("total":12.961558472067114,"accuracy":{"type":"count_min_sketch","epsilon":0.04247315356967258,"confidence":0.8646647167633873,)"
            R"("max_error":0.5505182634863972,"guarantee_threshold":3.9923057743025154,"candidates":2,"undersized":false,"tail_uncertain":true,)"
            R"("unlisted_upper_bound":3.9923057743025154}})");
  // b, written back when it left: the sketch never under-counts it.
  const auto body = c.request("GET", "/count?namespace=golden_a&item_id=b&window=all").body;
  EXPECT_NE(body.find(R"("item_id":"b","estimated_count":3,"lower_bound":0,"upper_bound":3,)"), std::string::npos) << body;
  EXPECT_EQ(metric(c, "ebb_recovery_records_replayed"), 1);
  std::filesystem::remove_all(dir);
}

// A data directory with an exact namespace (exact view and table blobs),
// checked in: written by
//   create golden_x (exact, max_items 2, event clock, windows all + 1h, half-life 1h);
//   batch at 1699999980: a 3, b 1; batch: c 2 at 1700000040 (evicts b);
//   SIGTERM (checkpoint: records 1-3); restart;
//   batch: a 1 at 1700000100; SIGKILL (record 4 in the log only).
TEST(Durability, ADataDirectoryWithAnExactNamespaceLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden-v5");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v5", dir, std::filesystem::copy_options::recursive);
  EbbServer server(dir, {"--checkpoint-interval", "1h"});
  HttpClient c(server.port());
  auto body = c.request("GET", "/top-k?namespace=golden_x&window=1h").body;
  EXPECT_EQ(body, R"({"namespace":"golden_x","window":{"start":1699996500,"end":1700000100},"window_length":"1h","as_of":1700000100,)"
                  R"("granularity":60,"items":[{"item_id":"a","estimated_count":4,"lower_bound":4,"upper_bound":5,"rank":1},)"
                  R"({"item_id":"c","estimated_count":2,"lower_bound":2,"upper_bound":3,"rank":2}],"total":7,"accuracy":{"type":"exact",)"
                  R"("epsilon":0,"confidence":1,"max_error":1,"guarantee_threshold":1,"candidates":2,"undersized":false,"tail_uncertain":false,"unlisted_upper_bound":1,"items":2,"evicted_items":1}})");
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  body = c.request("GET", "/top-k?namespace=golden_x&half_life=1h").body;
  ASSERT_EQ(p.parse(body).get(doc), simdjson::SUCCESS) << body;
  auto decayed = [](double w, double age) { return w * std::exp2(-age / 3600); };
  const double a = decayed(3, 120) + 1, c2 = decayed(2, 60), b = decayed(1, 120);
  EXPECT_NEAR(double(doc["items"].at(0)["estimated_count"]), a, 1e-12 * a);
  EXPECT_NEAR(double(doc["items"].at(1)["estimated_count"]), c2, 1e-12 * c2);
  EXPECT_NEAR(double(doc["accuracy"]["max_error"]), b, 1e-12 * b);
  EXPECT_NEAR(double(doc["total"]), a + c2 + b, 1e-12 * a);
  EXPECT_EQ(metric(c, "ebb_recovery_records_replayed"), 1);
  std::filesystem::remove_all(dir);
}

// A data directory whose log holds compact batch records (type 7: an
// event's timestamp stored only when it is not the receive time, its weight
// only when not 1), checked in: written by
//   create golden_c (event clock, all-time + half-life 1h, k 3) and
//   topk:user:42 (wall clock, all-time, k 2);
//   batch: a 2.5 at 1700000000, café (weight 1) at 1700000000, b 0.25 at 1700000005;
//   batch with Idempotency-Key golden-key-1 across both namespaces: x, y
//   weight 3, x into topk:user:42 (no timestamps: the receive time, not
//   stored) and a 1 at 1700000010 into golden_c;
//   SIGTERM (checkpoint: records 1-4, the creates and both batches, the
//   key in the manifest); restart;
//   record 5, batch with Idempotency-Key golden-key-2: c 4 and café 0.001
//   at 1700000020; record 6, batch: z 0.5, x into topk:user:42; record 7,
//   create late (wall clock, all-time, k 2); record 8, batch: p, q weight 2
//   into late (no timestamps); SIGKILL (records 5-8 in the log only,
//   golden-key-2 only there).
TEST(Durability, ADataDirectoryWithACompactLogLoads) {
  const auto dir = testing::make_temp_dir("ebb-golden-v11");
  std::filesystem::copy(std::filesystem::path(EBB_TEST_DATA) / "golden" / "datadir-v11", dir, std::filesystem::copy_options::recursive);
  // The keys were received in 2026: remembered for long enough (a century)
  // to be asked whenever the test runs.
  EbbServer server(dir, {"--checkpoint-interval", "1h", "--idempotency-window", "1000000h"});
  HttpClient c(server.port());
  EXPECT_EQ(metric(c, "ebb_recovery_records_replayed"), 4);
  const std::string all_time =
      R"({"namespace":"golden_c","window":{"start":1700000000,"end":1700000020},"as_of":1700000020,"items":[)"
      R"({"item_id":"c","estimated_count":4,"lower_bound":4,"upper_bound":4,"rank":1},)"
      R"({"item_id":"a","estimated_count":3.5,"lower_bound":3.5,"upper_bound":3.5,"rank":2},)"
      R"({"item_id":"café","estimated_count":1.001,"lower_bound":1.001,"upper_bound":1.001,"rank":3}],"total":8.751,)"
      R"("accuracy":{"type":"count_min_sketch","epsilon":4.147768903288338e-05,"confidence":0.9816843611112658,)"
      R"("max_error":0.0003629712567267624,"guarantee_threshold":0,"candidates":1024,"undersized":false,"tail_uncertain":false,)"
      R"("unlisted_upper_bound":0.25}})";
  EXPECT_EQ(c.request("GET", "/top-k?namespace=golden_c&window=all").body, all_time);
  EXPECT_EQ(c.request("GET", "/top-k?namespace=golden_c&half_life=1h").body,
            R"({"namespace":"golden_c","half_life":"1h","as_of":1700000020,"items":[)"
            R"({"item_id":"c","estimated_count":4,"lower_bound":4,"upper_bound":4,"rank":1},)"
            R"({"item_id":"a","estimated_count":3.488467911627067,"lower_bound":3.488467911627067,"upper_bound":3.488467911627067,"rank":2},)"
            R"({"item_id":"café","estimated_count":0.9971565872205753,"lower_bound":0.9971565872205753,"upper_bound":0.9971565872205753,"rank":3}],)"
            R"("total":8.734903512181289,"accuracy":{"type":"count_min_sketch","epsilon":4.147768903288338e-05,"confidence":0.9816843611112658,)"
            R"("max_error":0.00036230361161049637,"guarantee_threshold":0,"candidates":1024,"undersized":false,"tail_uncertain":false,)"
            R"("unlisted_upper_bound":0.2492790133336473}})");
  // Events sent without a timestamp took the receive time each record
  // carries: an all-time window starts at its first batch's (record 4's;
  // record 8's, replayed) and a wall clock's window ends now.
  const auto wall = c.request("GET", "/top-k?namespace=topk%3Auser%3A42&window=all").body;
  EXPECT_EQ(wall.substr(0, wall.find(R"(,"end":)")), R"({"namespace":"topk:user:42","window":{"start":1795951357.3572059)") << wall;
  const auto late = c.request("GET", "/top-k?namespace=late&window=all").body;
  EXPECT_EQ(late.substr(0, late.find(R"(,"end":)")), R"({"namespace":"late","window":{"start":1795951357.6930225)") << late;
  EXPECT_NE(late.find(R"("items":[{"item_id":"q","estimated_count":2,"lower_bound":2,"upper_bound":2,"rank":1},)"
                      R"({"item_id":"p","estimated_count":1,"lower_bound":1,"upper_bound":1,"rank":2}],"total":3,)"),
            std::string::npos)
      << late;
  EXPECT_EQ(wall.substr(wall.find(R"("items":)")),
            R"("items":[{"item_id":"x","estimated_count":3,"lower_bound":3,"upper_bound":3,"rank":1},)"
            R"({"item_id":"y","estimated_count":3,"lower_bound":3,"upper_bound":3,"rank":2}],"total":6.5,)"
            R"("accuracy":{"type":"count_min_sketch","epsilon":4.147768903288338e-05,"confidence":0.9816843611112658,)"
            R"("max_error":0.00026960497871374194,"guarantee_threshold":0,"candidates":1024,"undersized":false,"tail_uncertain":false,)"
            R"("unlisted_upper_bound":0.5}})");
  // The keys: golden-key-2 known from its compact record alone, golden-key-1
  // from the checkpoint. A retry of the first is answered and not counted
  // again; the second with another batch is refused.
  const std::string retry = R"({"namespace":"golden_c","events":[{"item_id":"c","timestamp":1700000020,"weight":4},)"
                            R"({"item_id":"café","timestamp":1700000020,"weight":1e-3}]})";
  EXPECT_EQ(c.request("POST", "/events", retry, "application/json", {{"Idempotency-Key", "golden-key-2"}}).status, 204);
  const auto reused = c.request("POST", "/events", R"({"namespace":"golden_c","events":[{"item_id":"c","timestamp":1700000020}]})",
                                "application/json", {{"Idempotency-Key", "golden-key-1"}});
  EXPECT_EQ(reused.status, 422) << reused.body;
  EXPECT_NE(reused.body.find("idempotency_key_reused"), std::string::npos) << reused.body;
  EXPECT_EQ(c.request("GET", "/top-k?namespace=golden_c&window=all").body, all_time);
  std::filesystem::remove_all(dir);
}

// History: the snapshot a clean stop writes survives restarts and answers
// where the rings do not reach; after a crash, every snapshot committed
// before it is still there.
TEST(Durability, HistorySurvivesRestartsAndCrashes) {
  const auto dir = testing::make_temp_dir("ebb-history");
  const std::vector<std::string> hourly = {"--history-interval", "1h"};
  {
    EbbServer server(dir, hourly);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"h","k":2,"clock":"event","windows":["1m"],"half_lives":["5m"]})").status, 201);
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"h","events":[{"item_id":"a","timestamp":1700000000,"weight":3},)"
                                            R"({"item_id":"b","timestamp":1700000000},{"item_id":"z","timestamp":1699999999,"weight":0.5}]})").status, 204);
    EXPECT_EQ(server.stop(), 0);  // the last snapshot: t = 1700000000
  }
  {
    EbbServer server(dir, hourly);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"h","events":[{"item_id":"c","timestamp":1700000600,"weight":5}]})").status, 204);
    // 10 minutes back the 1 s buckets are gone: the snapshot answers.
    auto r = c.request("GET", "/top-k?namespace=h&window=1m&timestamp=1700000100");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find(R"("window":{"start":1699999940,"end":1700000000},"window_length":"1m","as_of":1700000000,"source":"history",)"
                          R"("granularity":3600,"items":[{"item_id":"a","estimated_count":3,"lower_bound":3,"upper_bound":3,"rank":1},)"
                          R"({"item_id":"b","estimated_count":1,"lower_bound":1,"upper_bound":1,"rank":2}],"total":4.5,)"),
              std::string::npos) << r.body;
    // Not in that list: no count, and at most the bound the view gave for
    // every item it left out (z's own 0.5, the only one).
    r = c.request("GET", "/count?namespace=h&window=1m&item_id=z&timestamp=1700000100");
    EXPECT_NE(r.body.find(R"("item_id":"z","estimated_count":null,"lower_bound":0,"upper_bound":0.5,)"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find(R"("listed":false)"), std::string::npos) << r.body;
    r = c.request("GET", "/history?namespace=h&item_id=a&half_life=5m&from=0&to=2000000000");
    EXPECT_NE(r.body.find(R"("points":[{"t":1700000000,"estimated_count":3,"lower_bound":3,"upper_bound":3,"rank":1}],"truncated":false)"),
              std::string::npos) << r.body;
    server.stop_hard();  // no snapshot of the second batch
  }
  {
    EbbServer server(dir, {"--history-interval", "100ms"});
    HttpClient c(server.port());
    auto r = c.request("GET", "/history?namespace=h&item_id=c&window=1m&from=0&to=2000000000");
    EXPECT_NE(r.body.find(R"("points":[{"t":1700000000,"estimated_count":null,"lower_bound":0,"upper_bound":0.5,"rank":null})"), std::string::npos) << r.body;
    // Snapshots go on every 100 ms: wait (without a deadline on speed) for
    // one with c, then crash.
    for (int i = 0; i < 600 && r.body.find(R"("t":1700000600)") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      r = c.request("GET", "/history?namespace=h&item_id=c&window=1m&from=0&to=2000000000");
    }
    ASSERT_NE(r.body.find(R"({"t":1700000600,"estimated_count":5,"lower_bound":5,"upper_bound":5,"rank":1})"), std::string::npos) << r.body;
    // Snapshots are 100 ms apart now, but points this old (by the wall
    // clock, as retention thins them) are kept an hour apart.
    r = c.request("GET", "/top-k?namespace=h&window=1m&timestamp=1700000500");
    EXPECT_NE(r.body.find(R"("as_of":1700000000,"source":"history","granularity":3600,)"), std::string::npos) << r.body;
    server.stop_hard();
  }
  EbbServer server(dir, hourly);
  HttpClient c(server.port());
  const auto r = c.request("GET", "/history?namespace=h&item_id=c&window=1m&from=1700000600&to=1700000600");
  EXPECT_NE(r.body.find(R"("points":[{"t":1700000600,"estimated_count":5,"lower_bound":5,"upper_bound":5,"rank":1}])"), std::string::npos) << r.body;
  // A deleted namespace takes its history with it.
  EXPECT_EQ(c.request("DELETE", "/namespaces/h").status, 204);
  EXPECT_EQ(c.request("POST", "/namespaces", R"({"name":"h","k":2,"clock":"event","windows":["1m"]})").status, 201);
  EXPECT_NE(c.request("GET", "/history?namespace=h&item_id=c&window=1m&from=0&to=2000000000").body.find(R"("points":[])"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// A deleted namespace's history never shows under a new namespace of the
// same name: not while the database refuses the drop (a user's sqlite3
// shell holds a write lock), not after a crash before it was dropped.
TEST(Durability, ADeletedNamespacesHistoryNeverReachesANewOneOfTheSameName) {
  const auto dir = testing::make_temp_dir("ebb-history-drop");
  const std::vector<std::string> flags = {"--history-interval", "100ms"};
  const std::string old_history = "/history?namespace=h&item_id=old&window=all&from=0&to=4000000000";
  {
    EbbServer server(dir, flags);
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"h","windows":["all"]})").status, 201);
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"h","events":[{"item_id":"old","weight":100}]})").status, 204);
    for (int i = 0; i < 600 && c.request("GET", old_history).body.find(R"("estimated_count":100)") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_NE(c.request("GET", old_history).body.find(R"("estimated_count":100)"), std::string::npos);
    // A write lock on the database: the delete cannot drop the history.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "history.sqlite3").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    EXPECT_EQ(c.request("DELETE", "/namespaces/h").status, 204);
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"h","windows":["all"]})").status, 201);
    auto r = c.request("GET", old_history);
    EXPECT_NE(r.body.find(R"("points":[])"), std::string::npos) << r.body;
    r = c.request("GET", "/top-k?namespace=h&timestamp=1000000000");
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("still being removed"), std::string::npos) << r.body;
    server.stop_hard();  // the drop still pending
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  {
    // The new namespace's create was logged: it is back, without the old history.
    EbbServer server(dir, flags);
    HttpClient c(server.port());
    EXPECT_EQ(c.request("GET", "/namespaces/h").status, 200);
    const auto r = c.request("GET", old_history);
    EXPECT_NE(r.body.find(R"("points":[])"), std::string::npos) << r.body;
    EXPECT_FALSE(std::filesystem::exists(dir / "history-pending-drops"));  // done, and forgotten
  }
  std::filesystem::remove_all(dir);
}

// History is derived data: a damaged database turns it off (the server
// serves, /readyz says why), and it pauses while the disk is short of room.
TEST(Durability, ADamagedHistoryTurnsHistoryOffAndLowDiskPausesIt) {
  const auto dir = testing::make_temp_dir("ebb-history-off");
  {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "history.sqlite3") << std::string(8192, 'x');
    EbbServer server(dir, {"--history-interval", "100ms"});
    HttpClient c(server.port());
    auto r = c.request("GET", "/readyz");
    EXPECT_EQ(r.status, 200);
    EXPECT_NE(r.body.find("history is off: history: " + (dir / "history.sqlite3").string() + ": prepare: file is not a database (move"), std::string::npos)
        << r.body;
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"h","windows":["all"]})").status, 201);
    r = c.request("GET", "/top-k?namespace=h&timestamp=1000000000");
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("history is off"), std::string::npos) << r.body;
    EXPECT_EQ(metric(c, "ebb_history_snapshots_total"), -1);  // no history metrics: it is off
  }
  std::filesystem::remove(dir / "history.sqlite3");
  {
    EbbServer server(dir, {"--history-interval", "100ms", "--history-min-free", "1000TiB"});
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"h","events":[{"item_id":"a"}]})").status, 204);
    for (int i = 0; i < 600 && metric(c, "ebb_history_passes_total{result=\"low_disk\"}") < 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_GE(metric(c, "ebb_history_passes_total{result=\"low_disk\"}"), 1);
    EXPECT_EQ(metric(c, "ebb_history_passes_total{result=\"ok\"}"), 0);
    EXPECT_EQ(metric(c, "ebb_history_snapshots_total"), 0);
    const auto r = c.request("GET", "/readyz");
    EXPECT_NE(r.body.find("history is paused: "), std::string::npos) << r.body;
  }
  {
    EbbServer server(dir, {"--history-interval", "100ms"});
    HttpClient c(server.port());
    for (int i = 0; i < 600 && metric(c, "ebb_history_snapshots_total") < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_GE(metric(c, "ebb_history_passes_total{result=\"ok\"}"), 1);
    EXPECT_EQ(metric(c, "ebb_history_snapshots_total"), 1);  // one view, one event: its "now" does not move
    EXPECT_GT(metric(c, "ebb_history_bytes"), 0);
  }
  std::filesystem::remove_all(dir);
}

// A full disk: ingest answers 503 with the reason and counts nothing; once
// there is room again writes go on; nothing acknowledged is lost.
TEST(Durability, AFullDiskRefusesWritesAndLosesNothingAcknowledged) {
  const auto dir = testing::make_temp_dir("ebb-full");
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root): " << std::strerror(errno);
  }
  std::string filler_path = (dir / "filler").string();
  {
    EbbServer server(dir / "data", {"--checkpoint-interval", "1h", "--log-segment-bytes", "65536"});
    HttpClient c(server.port());
    ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"f","windows":["all"],"sketch_width":1024})").status, 201);
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"f","events":[{"item_id":"a","weight":3}]})").status, 204);
    {  // fill the disk
      std::ofstream filler(filler_path, std::ios::binary);
      std::string mb(1 << 20, 'x');
      filler.write(mb.data(), static_cast<std::streamsize>(mb.size()));
    }
    std::string big = R"({"namespace":"f","events":[)";
    for (int i = 0; i < 2000; ++i) big += std::string(i ? "," : "") + R"({"item_id":"filler-item-)" + std::to_string(i) + R"("})";
    big += "]}";
    int refused = 0;
    for (int i = 0; i < 50 && refused == 0; ++i) {
      const auto r = c.request("POST", "/events", big);
      if (r.status == 503) {
        ++refused;
        EXPECT_NE(r.body.find("persist_failed"), std::string::npos) << r.body;
        EXPECT_NE(r.body.find("No space left on device"), std::string::npos) << r.body;
        EXPECT_EQ(r.headers.count("retry-after") + r.headers.count("Retry-After"), 1u);
      } else {
        ASSERT_EQ(r.status, 204) << r.body;
      }
    }
    ASSERT_EQ(refused, 1);
    // More writes while the disk is full: each is refused, and the server's
    // log says so once a second, not once a write.
    for (int i = 0; i < 30; ++i) ASSERT_EQ(c.request("POST", "/events", big).status, 503);
    const std::string log = server.log();
    std::size_t lines = 0;
    for (std::size_t at = log.find("log append failed"); at != std::string::npos; at = log.find("log append failed", at + 1)) ++lines;
    EXPECT_GE(lines, 1u);
    EXPECT_LT(lines, 31u) << log;
    const double acknowledged = stat(c, "f", "total_weight");
    EXPECT_GE(metric(c, "ebb_wal_append_errors_total"), 1);
    std::filesystem::remove(filler_path);  // room again
    ASSERT_EQ(c.request("POST", "/events", R"({"namespace":"f","events":[{"item_id":"a","weight":1}]})").status, 204);
    EXPECT_EQ(c.request("GET", "/readyz").status, 200);
    server.stop_hard();
    EbbServer again(dir / "data", {"--checkpoint-interval", "1h"});
    HttpClient c2(again.port());
    EXPECT_EQ(stat(c2, "f", "total_weight"), acknowledged + 1);
  }
  ::umount(dir.c_str());
  std::filesystem::remove_all(dir);
}

// The crash harness: writers on several connections, SIGKILL at random
// moments, restart, check. Every acknowledged batch is counted exactly
// once; a batch without an answer is whole or absent. Each batch has its
// own item with weights 1 + 2 + 4 (so any part of it shows), in a sketch
// wide enough that the few thousand items never collide; the namespace's
// total weight is exact. EBB_CRASH_ROUNDS sets the rounds (make soak: 200).
TEST(Durability, CrashHarnessLosesNothingAcknowledgedAndCountsOnce) {
  const char* env = std::getenv("EBB_CRASH_ROUNDS");
  const int rounds = env ? std::atoi(env) : 20;
  const auto dir = testing::make_temp_dir("ebb-harness");
  std::mt19937_64 rng(42);
  std::set<std::string> acked, unknown;
  std::mutex mu;
  std::atomic<int> next_id{0};
  std::size_t unknown_seen = 0, unknown_counted = 0;  // for the summary line
  for (int round = 0; round <= rounds; ++round) {  // the last one only checks
    // Some rounds checkpoint often, so recoveries start from checkpoints too.
    std::vector<std::string> flags = {"--checkpoint-interval", round % 3 == 0 ? "50ms" : "1h"};
    if (round % 4 == 1) flags.insert(flags.end(), {"--log-segment-bytes", "65536"});
    EbbServer server(dir, flags);
    {
      HttpClient c(server.port());
      if (round == 0) {
        ASSERT_EQ(c.request("POST", "/namespaces", R"({"name":"h","windows":["all"],"sketch_width":1048576,"sketch_depth":4})").status, 201);
      }
      // Check what the previous crash left.
      std::vector<std::string> ids(acked.begin(), acked.end());
      ids.insert(ids.end(), unknown.begin(), unknown.end());
      double expected_weight = 0;
      std::set<std::string> present;
      for (std::size_t at = 0; at < ids.size(); at += 500) {
        std::string body = R"({"namespace":"h","window":"all","item_ids":[)";
        for (std::size_t i = at; i < std::min(ids.size(), at + 500); ++i) body += (i > at ? ",\"" : "\"") + ids[i] + "\"";
        body += "]}";
        const auto r = c.request("POST", "/counts", body);
        ASSERT_EQ(r.status, 200) << r.body;
        simdjson::dom::parser p;
        auto doc = p.parse(r.body);
        std::size_t i = at;
        for (auto item : doc["items"].get_array()) {
          const double n = item["estimated_count"].get_double().value();
          if (acked.contains(ids[i])) {
            ASSERT_EQ(n, 7) << "acknowledged batch " << ids[i] << " after round " << round;
          } else {
            ASSERT_TRUE(n == 0 || n == 7) << "unacknowledged batch " << ids[i] << " partly counted: " << n;
          }
          if (n == 7) present.insert(ids[i]);
          ++i;
        }
      }
      expected_weight = 7.0 * static_cast<double>(present.size());
      ASSERT_EQ(stat(c, "h", "total_weight"), expected_weight) << "round " << round;
      // What is present now is settled: an unknown batch that came back is
      // counted from here on, one that did not never will be.
      for (auto it = unknown.begin(); it != unknown.end();) {
        ++unknown_seen;
        if (present.contains(*it)) {
          acked.insert(*it);
          ++unknown_counted;
        }
        it = unknown.erase(it);
      }
    }
    if (round == rounds) break;
    std::vector<std::thread> writers;
    std::atomic<bool> dead{false};
    for (int w = 0; w < 4; ++w) {
      writers.emplace_back([&, w] {
        HttpClient c(server.port());
        while (!dead) {
          const std::string id = "batch-" + std::to_string(next_id++);
          const std::string body = R"({"namespace":"h","events":[{"item_id":")" + id + R"(","weight":1},{"item_id":")" + id +
                                   R"(","weight":2},{"item_id":")" + id + R"(","weight":4}]})";
          int status = 0;
          try {
            status = c.request("POST", "/events", body).status;
          } catch (const std::exception&) {
            status = -1;
          }
          std::lock_guard lock(mu);
          if (status == 204) acked.insert(id);
          else unknown.insert(id);
          if (status != 204) return;
        }
        (void)w;
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 300)(rng)));
    server.stop_hard();
    dead = true;
    for (auto& t : writers) t.join();
  }
  EXPECT_GT(acked.size(), static_cast<std::size_t>(rounds));
  const std::size_t acknowledged = acked.size() - unknown_counted;
  std::printf("crash harness: %d SIGKILL rounds; %zu acknowledged batches (%zu events), every one counted exactly once; "
              "%zu unanswered at a kill: %zu whole, %zu absent, none partial\n",
              rounds, acknowledged, 3 * acknowledged, unknown_seen, unknown_counted, unknown_seen - unknown_counted);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
