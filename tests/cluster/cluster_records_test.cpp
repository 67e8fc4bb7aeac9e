// The commit record is in the cluster's stream: its bytes must stay what
// docs/formats.md says (a change that breaks existing streams fails here).
// Queries and replies round trip.
#include <gtest/gtest.h>

#include <limits>

#include <algorithm>
#include <cmath>
#include <map>

#include "ebb/cluster/cluster_node.hpp"
#include "ebb/cluster/cluster_records.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/service/cluster_link.hpp"

namespace ebb::cluster {
namespace {

TEST(ClusterRecords, CommitRecordBytesAreTheDocumentedLayout) {
  const CommitRecord c{"r01", {{2, 7}, {5, 0x0102030405060708ULL}}, {{"tags", 3}}, {}, std::nullopt};
  const std::string bytes = encode_commit(c);
  const std::string golden = std::string("\x40", 1) + std::string("\x03\x00\x00\x00", 4) + "r01" + std::string("\x02\x00\x00\x00", 4) +
                             std::string("\x02\x00\x00\x00", 4) + std::string("\x07\x00\x00\x00\x00\x00\x00\x00", 8) +
                             std::string("\x05\x00\x00\x00", 4) + std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8) +
                             std::string("\x01\x00\x00\x00", 4) + std::string("\x04\x00\x00\x00", 4) + "tags" +
                             std::string("\x03\x00\x00\x00\x00\x00\x00\x00", 8);
  EXPECT_EQ(bytes, golden);
  EXPECT_TRUE(is_commit(bytes));
  const CommitRecord back = decode_commit(bytes);
  EXPECT_EQ(back.batch_id, "r01");
  EXPECT_EQ(back.parts, c.parts);
  EXPECT_EQ(back.configs, c.configs);
  // A service record (type 1-6) is not a commit; a truncated commit is refused.
  EXPECT_FALSE(is_commit(std::string("\x01", 1)));
  EXPECT_THROW(decode_commit(bytes.substr(0, bytes.size() - 1)), FormatError);
  EXPECT_THROW(decode_commit(bytes + "x"), FormatError);

  // With event clocks: type 0x41, the same, then the clocks (NaN: no event yet).
  CommitRecord clocked = c;
  clocked.clocks = {{"tags", std::nan(""), 1700000000.5}};
  const std::string with = encode_commit(clocked);
  std::string want = golden;
  want[0] = '\x41';
  const double before = std::nan(""), after = 1700000000.5;
  want += std::string("\x01\x00\x00\x00", 4) + std::string("\x04\x00\x00\x00", 4) + "tags";
  want.append(reinterpret_cast<const char*>(&before), 8).append(reinterpret_cast<const char*>(&after), 8);
  EXPECT_EQ(with, want);
  EXPECT_TRUE(is_commit(with));
  const CommitRecord clocks_back = decode_commit(with);
  EXPECT_EQ(clocks_back.configs, c.configs);
  EXPECT_EQ(clocks_back.clocks, clocked.clocks);
  EXPECT_TRUE(decode_commit(bytes).clocks.empty());

  // With an idempotency key: type 0x43, the clocks (here none), then the key
  // and the body's hash.
  CommitRecord keyed = c;
  keyed.key = CommitRecord::Key{"retry-1", 0x1122334455667788ULL};
  std::string keyed_want = golden;
  keyed_want[0] = '\x43';
  keyed_want += std::string("\x00\x00\x00\x00", 4) + std::string("\x07\x00\x00\x00", 4) + "retry-1" +
                std::string("\x88\x77\x66\x55\x44\x33\x22\x11", 8);
  EXPECT_EQ(encode_commit(keyed), keyed_want);
  EXPECT_TRUE(is_commit(keyed_want));
  const CommitRecord keyed_back = decode_commit(keyed_want);
  EXPECT_EQ(keyed_back.key, keyed.key);
  EXPECT_TRUE(keyed_back.clocks.empty());
  EXPECT_EQ(keyed_back.parts, c.parts);
  // With clocks and a key: both come back.
  keyed.clocks = clocked.clocks;
  const CommitRecord both = decode_commit(encode_commit(keyed));
  EXPECT_EQ(both.clocks, clocked.clocks);
  EXPECT_EQ(both.key, keyed.key);
  EXPECT_FALSE(decode_commit(with).key.has_value());
  // Clocks that are no times are refused (a forged commit must not reach a
  // state no checkpoint restores).
  for (const double bad_after : {-1.0, std::nan(""), 1.0 / 0.0}) {
    CommitRecord forged = c;
    forged.clocks = {{"tags", std::nan(""), bad_after}};
    EXPECT_THROW(decode_commit(encode_commit(forged)), FormatError) << bad_after;
  }
  // -inf is what c9355fe wrote for a first batch whose events were all
  // excluded: such a commit in a stream stays readable, its clock moving
  // nothing (NaN), so old and new replicas count its other parts alike.
  CommitRecord old_build = c;
  old_build.clocks = {{"tags", std::nan(""), -1.0 / 0.0}, {"other", 5.0, 7.0}};
  const CommitRecord read = decode_commit(encode_commit(old_build));
  ASSERT_EQ(read.clocks.size(), 2u);
  EXPECT_TRUE(std::isnan(read.clocks[0].after));
  EXPECT_EQ(read.clocks[1].after, 7.0);
  EXPECT_EQ(read.parts, c.parts);
}

TEST(ClusterRecords, MergeRecordBytesAreTheDocumentedLayout) {
  const MergeRecord m{"sum", {{"a", 2}, {"sum", 1}}, {{"a", 3}, {"sum", 4}}};
  const std::string bytes = encode_merge(m);
  auto str = [](std::string_view s) {
    const auto n = static_cast<std::uint32_t>(s.size());
    return std::string(reinterpret_cast<const char*>(&n), 4) + std::string(s);
  };
  auto f64 = [](double d) { return std::string(reinterpret_cast<const char*>(&d), 8); };
  auto u64 = [](std::uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
  const std::string golden = std::string("\x42", 1) + str("sum") + std::string("\x02\x00\x00\x00", 4) + str("a") + f64(2) + str("sum") +
                             f64(1) + std::string("\x02\x00\x00\x00", 4) + str("a") + u64(3) + str("sum") + u64(4);
  EXPECT_EQ(bytes, golden);
  EXPECT_TRUE(is_merge(bytes));
  EXPECT_FALSE(is_commit(bytes));  // (a node that reads it as a commit would skip every later batch's check)
  EXPECT_EQ(decode_merge(bytes), m);
  EXPECT_THROW(decode_merge(bytes.substr(0, bytes.size() - 1)), FormatError);
  EXPECT_THROW(decode_merge(bytes + "x"), FormatError);
  const MergeRecord none{"sum", {}, {}};
  EXPECT_THROW(decode_merge(encode_merge(none)), FormatError);  // a merge without sources
}

TEST(ClusterRecords, QueriesAndRepliesRoundTrip) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::counts;
  q.ns = "tags";
  q.view = engine::ViewSpec::decayed(300);
  q.k = 7;
  q.items = {"a", "b\xc3\xa9"};
  q.min_position = 99;
  q.wait_ms = 1500;
  const QueryRequest back = decode_query(encode_query(q));
  EXPECT_EQ(back.kind, q.kind);
  EXPECT_EQ(back.ns, q.ns);
  EXPECT_EQ(back.view, q.view);
  EXPECT_EQ(back.k, q.k);
  EXPECT_EQ(back.items, q.items);
  EXPECT_EQ(back.min_position, 99u);
  EXPECT_EQ(back.wait_ms, 1500u);

  QueryReply r;
  r.partition = 3;
  r.top.view = engine::ViewSpec::all_time();
  r.top.items = {{"x", 5, 4, 6}};
  r.top.total = 11;
  r.top.unlisted_upper = 2;
  r.top.accuracy.candidates = 64;
  r.top.accuracy.tail_uncertain = true;
  engine::PointAnswer p;
  p.item = {"x", 5, 4, 6};
  p.tracked = true;
  p.listed = false;
  p.rate = 0.5;
  r.points = {p};
  const QueryReply rb = decode_reply(encode_reply(r, QueryRequest::Kind::counts), QueryRequest::Kind::counts);
  EXPECT_EQ(rb.partition, 3u);
  EXPECT_FALSE(rb.error);
  EXPECT_EQ(rb.top.items, r.top.items);
  EXPECT_EQ(rb.top.total, 11);
  EXPECT_EQ(rb.top.unlisted_upper, 2);
  EXPECT_EQ(rb.top.accuracy.candidates, 64u);
  EXPECT_TRUE(rb.top.accuracy.tail_uncertain);
  ASSERT_EQ(rb.points.size(), 1u);
  EXPECT_EQ(rb.points[0].item, p.item);
  EXPECT_EQ(rb.points[0].listed, std::optional<bool>(false));
  EXPECT_EQ(rb.points[0].rate, 0.5);

  QueryReply e;
  e.partition = 1;
  e.error.emplace(service::ErrorKind::not_found, "namespace_not_found", "namespace: no namespace 'x'");
  const QueryReply eb = decode_reply(encode_reply(e, QueryRequest::Kind::top), QueryRequest::Kind::top);
  ASSERT_TRUE(eb.error);
  EXPECT_EQ(eb.error->kind(), service::ErrorKind::not_found);
  EXPECT_EQ(eb.error->code(), "namespace_not_found");
  EXPECT_STREQ(eb.error->what(), "namespace: no namespace 'x'");
}

TEST(ClusterRecords, TrendingAndHotKeyQuestionsAndRepliesRoundTrip) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::trending;
  q.ns = "tags";
  q.k = 7;
  q.short_half_life = 300;
  q.long_half_life = 3600;
  q.min_count = 5;
  q.since = 1700000000.25;
  const QueryRequest back = decode_query(encode_query(q));
  EXPECT_EQ(back.kind, q.kind);
  EXPECT_EQ(back.k, q.k);
  EXPECT_EQ(back.short_half_life, 300);
  EXPECT_EQ(back.long_half_life, 3600);
  EXPECT_EQ(back.min_count, 5);
  EXPECT_EQ(back.since, 1700000000.25);
  // The trending fields follow only a trending question.
  std::string top = encode_query(q);
  q.kind = QueryRequest::Kind::hot_keys;
  EXPECT_EQ(encode_query(q).size() + 32, top.size());
  EXPECT_THROW(decode_query(top.substr(0, top.size() - 1)), FormatError);

  QueryReply r;
  r.partition = 2;
  r.trending.short_view = engine::ViewSpec::decayed(300);
  r.trending.long_view = engine::ViewSpec::decayed(3600);
  r.trending.as_of = 1700003600;
  r.trending.min_count = 5;
  r.trending.since = 1700000000;
  r.trending.first_event = 1700003540;
  r.trending.candidates = 12;
  r.trending.items = {{"new", 4.5, 0.2, 0.01, {"new", 55, 54, 56}, {"new", 59, 58, 60}}};
  const QueryReply rb = decode_reply(encode_reply(r, QueryRequest::Kind::trending), QueryRequest::Kind::trending);
  EXPECT_EQ(rb.trending.short_view, r.trending.short_view);
  EXPECT_EQ(rb.trending.long_view, r.trending.long_view);
  EXPECT_EQ(rb.trending.since, 1700000000);
  EXPECT_EQ(rb.trending.first_event, 1700003540);
  EXPECT_EQ(rb.trending.candidates, 12u);
  ASSERT_EQ(rb.trending.items.size(), 1u);
  EXPECT_EQ(rb.trending.items[0].key, "new");
  EXPECT_EQ(rb.trending.items[0].score, 4.5);
  EXPECT_EQ(rb.trending.items[0].long_count, r.trending.items[0].long_count);

  QueryReply h;
  h.partition = 5;
  h.hot = {"tags", 20, 10, 0.8, 1700003600.5, false, {{"hot-1", 90.5, 1700003599}}, {}, {{"cold-1", 3.5, 0}}};
  const QueryReply hb = decode_reply(encode_reply(h, QueryRequest::Kind::hot_keys), QueryRequest::Kind::hot_keys);
  EXPECT_EQ(hb.hot.ns, "tags");
  EXPECT_EQ(hb.hot.threshold, 20);
  EXPECT_EQ(hb.hot.evaluated_at, 1700003600.5);
  EXPECT_FALSE(hb.hot.complete);
  ASSERT_EQ(hb.hot.items.size(), 1u);
  EXPECT_EQ(hb.hot.items[0].key, "hot-1");
  EXPECT_EQ(hb.hot.items[0].rate, 90.5);
  EXPECT_EQ(hb.hot.items[0].since, 1700003599);
  ASSERT_EQ(hb.hot.watched.size(), 1u);
  EXPECT_EQ(hb.hot.watched[0].key, "cold-1");
  EXPECT_EQ(hb.hot.watched[0].rate, 3.5);
}

TEST(ClusterRecords, DistributionQuestionsAndRepliesRoundTrip) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::distribution;
  q.ns = "colors";
  q.items = {"red", "blue"};
  q.k = 3;
  q.now = 1700000000.5;
  q.rate = 0.25;
  QueryRequest back = decode_query(encode_query(q));
  EXPECT_EQ(back.items, q.items);
  EXPECT_EQ(back.now, q.now);
  EXPECT_EQ(back.rate, q.rate);
  q.rate.reset();
  EXPECT_FALSE(decode_query(encode_query(q)).rate);
  q.kind = QueryRequest::Kind::check_incr;
  q.n = 2.5;
  back = decode_query(encode_query(q));
  EXPECT_EQ(back.kind, QueryRequest::Kind::check_incr);
  EXPECT_EQ(back.n, 2.5);
  EXPECT_EQ(back.now, q.now);

  QueryReply r;
  r.partition = 4;
  engine::DistributionAnswer a;
  a.distribution = "colors";
  a.z = 6;
  a.t = 1700000000;
  a.rate = 0.25;
  a.decay = engine::DistributionDecay::poisson;
  a.bins = {{"red", 3.5, 0.58}, {"blue", 2.5, 0.42}};
  r.distribution = a;
  auto rb = decode_reply(encode_reply(r, QueryRequest::Kind::distribution), QueryRequest::Kind::distribution);
  ASSERT_TRUE(rb.distribution);
  EXPECT_EQ(rb.distribution->distribution, "colors");
  EXPECT_EQ(rb.distribution->z, 6);
  EXPECT_EQ(rb.distribution->decay, engine::DistributionDecay::poisson);
  ASSERT_EQ(rb.distribution->bins.size(), 2u);
  EXPECT_EQ(rb.distribution->bins[1].bin, "blue");
  EXPECT_EQ(rb.distribution->bins[1].p, 0.42);
  r.distribution.reset();
  EXPECT_FALSE(decode_reply(encode_reply(r, QueryRequest::Kind::distribution), QueryRequest::Kind::distribution).distribution);
  r.count = 12345;
  EXPECT_EQ(decode_reply(encode_reply(r, QueryRequest::Kind::distributions), QueryRequest::Kind::distributions).count, 12345u);
}

// The audit's question (kind 10) carries each namespace's audit figures
// alone; a partition's figures add into the node's stats by view.
TEST(ClusterRecords, AuditQuestionsAndRepliesRoundTrip) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::audit;
  q.items = {"tags"};
  EXPECT_EQ(decode_query(encode_query(q)).kind, QueryRequest::Kind::audit);
  QueryReply r;
  r.partition = 5;
  engine::NamespaceStats s;
  s.audit = {true, 40, 3, 0.25, false};
  engine::ViewAudit a;
  a.as_of = 1700000000.5;
  a.compared = 43;
  a.outside_bound = 2;
  a.max_error = 7;
  a.max_relative_error = std::numeric_limits<double>::infinity();
  a.error_bound = 3.5;
  a.top_compared = 3;
  a.top_max_error_share = 0.02;
  a.suggested_growth = 4;
  a.histogram.observe(0.3);
  a.histogram.observe(20);
  s.views = {{engine::ViewSpec::all_time(), 1024, 0, {}}, {engine::ViewSpec::decayed(60), 2048, 0, a}};
  r.stats = {{"tags", s}};
  const auto rb = decode_reply(encode_reply(r, QueryRequest::Kind::audit), QueryRequest::Kind::audit);
  ASSERT_EQ(rb.stats.size(), 1u);
  const auto& got = rb.stats[0].second;
  EXPECT_TRUE(got.audit.enabled);
  EXPECT_EQ(got.audit.sampled_items, 40u);
  EXPECT_EQ(got.audit.top_items, 3u);
  EXPECT_EQ(got.audit.sample_share, 0.25);
  EXPECT_FALSE(got.audit.from_start);
  ASSERT_EQ(got.views.size(), 2u);
  EXPECT_FALSE(got.views[0].audit.passed());
  EXPECT_EQ(got.views[0].memory_bytes, 0u) << "the audit's question carries no stats";
  const auto& ga = got.views[1].audit;
  EXPECT_EQ(got.views[1].view, engine::ViewSpec::decayed(60));
  EXPECT_EQ(ga.as_of, a.as_of);
  EXPECT_EQ(ga.compared, 43u);
  EXPECT_EQ(ga.outside_bound, 2u);
  EXPECT_EQ(ga.max_error, 7);
  EXPECT_EQ(ga.max_relative_error, a.max_relative_error);
  EXPECT_EQ(ga.top_max_error_share, 0.02);
  EXPECT_EQ(ga.suggested_growth, 4u);
  EXPECT_EQ(ga.histogram.counts, a.histogram.counts);
  EXPECT_EQ(ga.histogram.sum, a.histogram.sum);
  // Into a node's stats: counts summed, maxima kept, by view.
  engine::NamespaceStats node;
  node.views = {{engine::ViewSpec::all_time(), 0, 0, {}}, {engine::ViewSpec::decayed(60), 0, 0, {}}};
  node.add_audit(got);
  node.add_audit(got);
  EXPECT_EQ(node.views[1].audit.compared, 86u);
  EXPECT_EQ(node.views[1].audit.max_error, 7);
  EXPECT_EQ(node.audit.sampled_items, 80u);
  EXPECT_EQ(node.views[1].audit.histogram.count, 4u);
}

TEST(ClusterRecords, StatsQuestionsAndRepliesRoundTrip) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::stats;
  q.ns = "";  // every namespace
  q.min_position = 77;
  const QueryRequest back = decode_query(encode_query(q));
  EXPECT_EQ(back.kind, QueryRequest::Kind::stats);
  EXPECT_EQ(back.ns, "");
  EXPECT_EQ(back.min_position, 77u);

  QueryReply r;
  r.partition = 2;
  engine::NamespaceStats s;
  s.events = 10;
  s.excluded = 1;
  s.batches = 3;
  s.weight = 12.5;
  s.newest_time = 1700000000.25;
  s.memory_bytes = 4096;
  s.views = {{engine::ViewSpec::all_time(), 1024, 0, {}}, {engine::ViewSpec::sliding(3600), 2048, 4, {}}};
  r.stats = {{"tags", s}, {"other", {}}};
  const auto rb = decode_reply(encode_reply(r, QueryRequest::Kind::stats), QueryRequest::Kind::stats);
  ASSERT_EQ(rb.stats.size(), 2u);
  EXPECT_EQ(rb.stats[0].first, "tags");
  const auto& got = rb.stats[0].second;
  EXPECT_EQ(got.events, 10u);
  EXPECT_EQ(got.excluded, 1u);
  EXPECT_EQ(got.batches, 3u);
  EXPECT_EQ(got.weight, 12.5);
  EXPECT_EQ(got.newest_time, 1700000000.25);
  EXPECT_EQ(got.memory_bytes, 4096u);
  ASSERT_EQ(got.views.size(), 2u);
  EXPECT_EQ(got.views[1].view, engine::ViewSpec::sliding(3600));
  EXPECT_EQ(got.views[1].memory_bytes, 2048u);
  EXPECT_EQ(got.views[1].dropped, 4u);
  EXPECT_EQ(rb.stats[1].first, "other");
  EXPECT_EQ(rb.stats[1].second.events, 0u);
}

TEST(ClusterRecords, HistoryQuestionsAndRepliesRoundTrip) {
  QueryRequest q;
  q.kind = QueryRequest::Kind::history;
  q.ns = "tags";
  q.view = engine::ViewSpec::decayed(300);
  q.k = 500;
  q.items = {"#rust"};
  q.from = 1700000000.5;
  q.to = 1700003600.25;
  const QueryRequest back = decode_query(encode_query(q));
  EXPECT_EQ(back.kind, QueryRequest::Kind::history);
  EXPECT_EQ(back.view, q.view);
  EXPECT_EQ(back.k, q.k);
  EXPECT_EQ(back.items, q.items);
  EXPECT_EQ(back.from, q.from);
  EXPECT_EQ(back.to, q.to);

  QueryReply r;
  r.history.view = engine::ViewSpec::sliding(3600);
  r.history.truncated = true;
  r.history.points.resize(2);
  r.history.points[0].t = 1700000010;
  r.history.points[0].rank = 3;
  r.history.points[0].estimate = 12;
  r.history.points[0].lower = 11;
  r.history.points[0].upper = 13;
  r.history.points[1].t = 1700000020;
  r.history.points[1].upper = 4;
  const auto rb = decode_reply(encode_reply(r, QueryRequest::Kind::history), QueryRequest::Kind::history);
  EXPECT_EQ(rb.history.view, r.history.view);
  EXPECT_TRUE(rb.history.truncated);
  ASSERT_EQ(rb.history.points.size(), 2u);
  EXPECT_EQ(rb.history.points[0].rank, std::optional<std::uint32_t>(3));
  EXPECT_EQ(rb.history.points[0].lower, 11);
  EXPECT_EQ(rb.history.points[0].upper, 13);
  EXPECT_FALSE(rb.history.points[1].rank);
  EXPECT_EQ(rb.history.points[1].upper, 4);
  // A count of points the bytes cannot hold is refused before anything is reserved.
  std::string forged = encode_reply(r, QueryRequest::Kind::history);
  forged.resize(forged.size() - 2 * 33);
  EXPECT_THROW(decode_reply(forged, QueryRequest::Kind::history), FormatError);
}

TEST(ClusterRecords, PartitionsSpreadItemsEvenly) {
  // 16 partitions, 160k keys: each within 3% of its share.
  std::vector<int> n(16);
  std::string key;
  for (int i = 0; i < 160000; ++i) {
    key = "key-";
    key += std::to_string(i);
    ++n[service::partition_of(hash_key(key), 16)];
  }
  for (int c : n) EXPECT_NEAR(c, 10000, 300);
}

}  // namespace
}  // namespace ebb::cluster

namespace ebb::cluster {
namespace {

// Owners: every node its share (rounded down or up), the same answer
// whatever the order the members come in, and a join moves little.
TEST(PartitionOwners, EveryNodeHoldsItsShareAndAJoinMovesLittle) {
  for (std::uint32_t partitions : {1u, 8u, 16u, 64u}) {
    for (std::size_t n = 1; n <= 7; ++n) {
      std::vector<std::string> nodes;
      auto id = [](std::size_t i) {
        std::string out = "n";
        out += std::to_string(i);
        return out;
      };
      for (std::size_t i = 0; i < n; ++i) nodes.push_back(id(i + 1));
      const auto owners = assign_partitions(partitions, nodes);
      std::map<std::string, std::uint32_t> load;
      for (const auto& o : owners) {
        ASSERT_FALSE(o.empty());
        ++load[o];
      }
      for (const auto& id : nodes) {
        EXPECT_GE(load[id], partitions / n) << partitions << " partitions, " << n << " nodes, " << id;
        EXPECT_LE(load[id], (partitions + n - 1) / n) << partitions << " partitions, " << n << " nodes, " << id;
      }
      std::vector<std::string> reversed(nodes.rbegin(), nodes.rend());
      EXPECT_EQ(assign_partitions(partitions, reversed), owners);
      // A join: the new node takes its share, and the moves that make room
      // for it between the others are at most as many again.
      nodes.push_back(id(n + 1));
      const auto after = assign_partitions(partitions, nodes);
      const std::uint32_t share = partitions / static_cast<std::uint32_t>(n + 1);
      std::uint32_t moved = 0, to_new = 0;
      for (std::uint32_t p = 0; p < partitions; ++p) {
        moved += after[p] != owners[p];
        to_new += after[p] == nodes.back();
      }
      EXPECT_GE(to_new, share) << partitions << " partitions, " << n << " nodes";
      EXPECT_LE(moved - to_new, share + 1) << partitions << " partitions, " << n << " nodes";
      if (n == 1) {
        EXPECT_EQ(moved, to_new);  // two nodes: whatever moves goes to the new one
      }
      // A leave (the newest node goes again): back to the first answer.
      nodes.pop_back();
      EXPECT_EQ(assign_partitions(partitions, nodes), owners);
    }
  }
  // The three nodes plain rendezvous hashing left one without any of 8.
  const auto owners = assign_partitions(8, {"n1", "n2", "n3"});
  EXPECT_GE(std::count(owners.begin(), owners.end(), "n3"), 2);
}

}  // namespace
}  // namespace ebb::cluster
