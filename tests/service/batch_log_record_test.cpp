// The batch log record in both layouts: type 1 (fixed widths, what the
// cluster's messages carry and every log before type 7 holds) and type 7
// (compact: varint lengths, a timestamp or weight stored only when it is
// not the batch's receive time or 1), which the local log writes.
// Golden files pin both layouts' bytes; a random property round-trips
// every value bit for bit; a damaged or non-canonical payload is refused.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "ebb/core/error.hpp"
#include "ebb/service/log_records.hpp"

namespace ebb::service {
namespace {

std::string read_golden(const char* name) {
  std::ifstream in(std::string(EBB_TEST_DATA) + "/golden/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The record tests/data/golden/batch-record{,-compact}-v1.bin hold (written
// from docs/formats.md's tables by a separate script, not by this encoder):
// events at the receive time with weight 1, an own timestamp, an own
// weight, an item whose head takes two varint bytes with both numbers
// (weight -0, which is not 1 bit for bit), and a namespace with a UTF-8 name.
struct Golden {
  const std::string long_item = std::string(200, 'x');
  const std::string accented = "caf\xc3\xa9";
  BatchRecord record;
  Golden() {
    const double at = 1.7e9;
    record.received_at = at;
    record.key = IdempotencyStamp{"retry-7", 0x1234567890abcdefULL};
    record.groups.push_back({"tags", {{"#rust", at, 1}, {"#cpp", at - 1, 1}, {"#go", at, 2.5}, {long_item, at - 0.25, -0.0}}});
    record.groups.push_back({"topk:user:42", {{accented, at, 1}}});
  }
};

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

void expect_same(const BatchRecord& got, const BatchRecord& want) {
  EXPECT_TRUE(same_bits(got.received_at, want.received_at));
  ASSERT_EQ(got.key.has_value(), want.key.has_value());
  if (want.key) {
    EXPECT_EQ(got.key->key, want.key->key);
    EXPECT_EQ(got.key->body_hash, want.key->body_hash);
  }
  ASSERT_EQ(got.groups.size(), want.groups.size());
  for (std::size_t g = 0; g < want.groups.size(); ++g) {
    EXPECT_EQ(got.groups[g].ns, want.groups[g].ns);
    ASSERT_EQ(got.groups[g].events.size(), want.groups[g].events.size());
    for (std::size_t i = 0; i < want.groups[g].events.size(); ++i) {
      const auto& a = got.groups[g].events[i];
      const auto& b = want.groups[g].events[i];
      EXPECT_EQ(a.item, b.item) << "group " << g << " event " << i;
      EXPECT_TRUE(same_bits(a.time, b.time)) << "group " << g << " event " << i << ": " << a.time << " vs " << b.time;
      EXPECT_TRUE(same_bits(a.weight, b.weight)) << "group " << g << " event " << i << ": " << a.weight << " vs " << b.weight;
    }
  }
}

TEST(BatchLogRecord, BothLayoutsWriteTheGoldenBytes) {
  const Golden golden;
  const std::string fixed = read_golden("batch-record-v1.bin"), compact = read_golden("batch-record-compact-v1.bin");
  ASSERT_EQ(fixed.size(), 382u);
  ASSERT_EQ(compact.size(), 302u);
  std::string out;
  encode_batch(out, golden.record);
  EXPECT_EQ(out, fixed) << "type 1's bytes changed: existing logs and cluster streams would not read";
  encode_batch_compact(out, golden.record);
  EXPECT_EQ(out, compact) << "type 7's bytes changed: existing logs would not read";
  EXPECT_EQ(record_type(fixed), RecordType::batch);
  EXPECT_EQ(record_type(compact), RecordType::batch);
  expect_same(decode_batch(fixed), golden.record);
  expect_same(decode_batch(compact), golden.record);
}

TEST(BatchLogRecord, AnUsualEventIsItsItemAndOneByte) {
  // No timestamp and weight 1 (what most HTTP and RESP events are): the
  // item and 1 byte, against the item and 20 bytes in type 1.
  const std::string items = "abcdefghijklmnopqrstuvwxyz012345";
  BatchRecord r;
  r.received_at = 1.7e9;
  r.groups.push_back({"hot", {}});
  for (std::size_t i = 0; i < 1000; ++i) r.groups[0].events.push_back({std::string_view(items).substr(i % 24, 8), 1.7e9, 1});
  std::string fixed, compact;
  encode_batch(fixed, r);
  encode_batch_compact(compact, r);
  const std::size_t header = 1 + 8 + 1 + 1 + (1 + 3) + 2;  // type, time, no key, 1 group, "hot", 1000 events
  EXPECT_EQ(compact.size(), header + 1000 * (1 + 8));
  EXPECT_EQ(fixed.size(), 1 + 8 + 1 + 4 + (4 + 3) + 4 + 1000 * (4 + 8 + 16));
  expect_same(decode_batch(compact), r);
}

TEST(BatchLogRecord, RandomRecordsRoundTripBitForBit) {
  std::mt19937_64 rng(20261129);
  std::vector<std::string> pool;
  for (int i = 0; i < 64; ++i) pool.push_back(std::string(std::uniform_int_distribution<int>(0, 300)(rng), static_cast<char>('a' + i % 26)));
  const double specials[] = {1.0, -1.0, 0.0, -0.0, 1.0000000000000002, 0.5, 1e300, -2.5};
  for (int round = 0; round < 300; ++round) {
    BatchRecord r;
    r.received_at = rng() % 4 == 0 ? -0.0 : 1.6e9 + static_cast<double>(rng() % 100000000) / 1000;
    if (rng() % 3 == 0) r.key = IdempotencyStamp{pool[rng() % pool.size()], rng()};
    const auto groups = rng() % 4;
    for (std::uint64_t g = 0; g < groups; ++g) {
      BatchGroup group{pool[rng() % pool.size()], {}};
      const auto n = rng() % 200;
      for (std::uint64_t i = 0; i < n; ++i) {
        engine::Event e{pool[rng() % pool.size()], r.received_at, 1.0};
        if (rng() % 3 == 0) e.time = rng() % 2 ? r.received_at - static_cast<double>(rng() % 1000) : specials[rng() % 8];
        if (rng() % 3 == 0) e.weight = specials[rng() % 8];
        group.events.push_back(e);
      }
      r.groups.push_back(std::move(group));
    }
    std::string fixed, compact;
    encode_batch(fixed, r);
    encode_batch_compact(compact, r);
    expect_same(decode_batch(fixed), r);
    expect_same(decode_batch(compact), r);
    EXPECT_LE(compact.size(), fixed.size());
    if (HasFailure()) break;
  }
}

// Items of every length up to 40, each byte distinct: the compact writer
// copies short items in overlapping fixed pieces, and an item of 9 to 32
// bytes read from or written to the wrong offset shows here. The record is
// also the layout's bytes laid out by hand (head, item), and the span
// encoder writes the same bytes as the record's.
TEST(BatchLogRecord, ItemsOfEveryShortLengthKeepTheirBytes) {
  std::vector<std::string> items;
  for (std::size_t n = 1; n <= 40; ++n) {
    std::string item(n, '\0');
    for (std::size_t i = 0; i < n; ++i) item[i] = static_cast<char>(1 + (n * 7 + i * 13) % 250);
    items.push_back(std::move(item));
  }
  BatchRecord r;
  r.received_at = 1.7e9;
  BatchGroup g{"ns", {}};
  for (const auto& item : items) g.events.push_back({item, r.received_at, 1.0});
  r.groups.push_back(g);
  std::string compact;
  encode_batch_compact(compact, r);
  std::string by_hand(1, static_cast<char>(kCompactBatchByte));
  by_hand.append(reinterpret_cast<const char*>(&r.received_at), 8);
  by_hand += '\0';    // no key
  by_hand += '\x01';  // one group
  by_hand += '\x02';
  by_hand += "ns";
  by_hand += static_cast<char>(items.size());
  for (const auto& item : items) {
    // head: length x 4, no time, no weight (a varint: two bytes from 32 on)
    for (std::size_t head = item.size() * 4;; head >>= 7) {
      by_hand += static_cast<char>(head < 0x80 ? head : (head & 0x7F) | 0x80);
      if (head < 0x80) break;
    }
    by_hand += item;
  }
  EXPECT_EQ(compact, by_hand);
  const BatchGroupView view{"ns", g.events};
  std::string from_views;
  encode_batch_compact(from_views, r.received_at, std::nullopt, std::span(&view, 1));
  EXPECT_EQ(from_views, compact);
  expect_same(decode_batch(compact), r);
}

// The service writes each record at the front of one reused buffer: a
// record shorter than the one before is its own bytes (not the stale tail),
// and one longer than the buffer grows it, mid-group included.
TEST(BatchLogRecord, ARecordAtTheFrontOfAReusedBufferIsTheSameBytes) {
  const std::string golden = read_golden("batch-record-compact-v1.bin");
  const BatchRecord r = decode_batch(golden);
  std::vector<BatchGroupView> views;
  for (const auto& g : r.groups) views.push_back({g.ns, g.events});
  std::string buffer;
  EXPECT_EQ(encode_batch_compact_at_front(buffer, r.received_at, r.key, views), golden);  // grown from nothing
  buffer.assign(golden.size() * 3, 'x');
  EXPECT_EQ(encode_batch_compact_at_front(buffer, r.received_at, r.key, views), golden);  // a longer stale buffer
  EXPECT_EQ(buffer.size(), golden.size() * 3);
  for (std::size_t kept = 1; kept < golden.size(); kept += 7) {
    buffer.assign(kept, 'x');
    EXPECT_EQ(encode_batch_compact_at_front(buffer, r.received_at, r.key, views), golden) << kept << " bytes to start with";
  }
}

TEST(BatchLogRecord, EveryTruncationIsRefused) {
  const std::string compact = read_golden("batch-record-compact-v1.bin");
  ASSERT_FALSE(compact.empty());
  for (std::size_t n = 1; n < compact.size(); ++n) {
    EXPECT_THROW(decode_batch(compact.substr(0, n)), FormatError) << n << " bytes";
  }
  EXPECT_THROW(decode_batch(compact + '\0'), FormatError);
}

// A record that decodes to the same values from other bytes would not
// re-encode to its own bytes: the layout has one spelling of each record.
TEST(BatchLogRecord, NonCanonicalCompactRecordsAreRefused) {
  const double at = 1.7e9;
  auto with_event = [&](std::string event) {
    std::string p(1, static_cast<char>(kCompactBatchByte));
    p.append(reinterpret_cast<const char*>(&at), 8);
    p += '\0';                  // no key
    p += '\x01';                // 1 group
    p += "\x03" "hot";          // namespace
    p += '\x01';                // 1 event
    return p + event;
  };
  auto f64 = [](double v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
  const std::string ok = with_event("\x04" "a");  // "a", at the receive time, weight 1
  const BatchRecord r = decode_batch(ok);
  ASSERT_EQ(r.groups.at(0).events.size(), 1u);
  EXPECT_EQ(r.groups[0].events[0].item, "a");
  EXPECT_EQ(r.groups[0].events[0].time, at);
  EXPECT_EQ(r.groups[0].events[0].weight, 1.0);

  EXPECT_THROW(decode_batch(with_event(std::string("\x84\x00", 2) + "a")), FormatError);  // the head in two bytes
  EXPECT_THROW(decode_batch(with_event("\x06" "a" + f64(at))), FormatError);                // the receive time stored
  EXPECT_THROW(decode_batch(with_event("\x05" "a" + f64(1.0))), FormatError);               // weight 1 stored
  EXPECT_NO_THROW(decode_batch(with_event("\x05" "a" + f64(-0.0))));                        // -0 is not 1
  EXPECT_NO_THROW(decode_batch(with_event("\x06" "a" + f64(at - 1))));
  // A varint past 64 bits (its tenth byte may hold one bit): read as 0
  // without the check.
  EXPECT_THROW(decode_batch(with_event(std::string(9, '\x80') + "\x02")), FormatError);
  // Counts far past what the payload can hold (2^63 - 1): refused, with no
  // memory spent on them.
  const std::string huge = std::string(8, '\xff') + "\x7f";
  std::string many_groups = ok;
  many_groups.replace(10, 1, huge);
  EXPECT_THROW(decode_batch(many_groups), FormatError);
  std::string many_events = ok;
  many_events.replace(15, 1, huge);
  EXPECT_THROW(decode_batch(many_events), FormatError);
  std::string bad_key_flag = ok;
  bad_key_flag[9] = '\x02';
  EXPECT_THROW(decode_batch(bad_key_flag), FormatError);
}

}  // namespace
}  // namespace ebb::service
