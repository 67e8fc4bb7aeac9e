// The commit record is in the cluster's stream: its bytes must stay what
// docs/formats.md says (a change that breaks existing streams fails here).
// Queries and replies round trip.
#include <gtest/gtest.h>

#include "ebb/cluster/cluster_records.hpp"
#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/service/cluster_link.hpp"

namespace ebb::cluster {
namespace {

TEST(ClusterRecords, CommitRecordBytesAreTheDocumentedLayout) {
  const CommitRecord c{"r01", {{2, 7}, {5, 0x0102030405060708ULL}}, {{"tags", 3}}};
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
