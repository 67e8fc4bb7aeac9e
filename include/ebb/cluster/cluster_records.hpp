#pragma once
// What ebb's cluster nodes write to JetStream besides the service's own
// log records, and what they send each other for queries (docs/cluster.md
// has the byte layouts). Little-endian, like the log records:
//
// Commit (subject <prefix>.c, beside the admin records):
//   u8 0x40, str batch_id, u32 n, n x (u32 partition, u64 part's stream sequence),
//   u32 m, m x (str namespace, u64 configuration revision the batch was checked against)
// Query (request on <prefix>.q.<partition>):
//   u8 kind (1 top, 2 counts, 3 trending, 4 hot keys, 5 distribution, 6 distributions held, 7 check an increment),
//   str namespace (5: the distribution), u8 has_view [u8 view kind, f64 half_life, f64 window],
//   u8 has_k [u64 k] (5: N most probable), u32 n, n x str item (4: keys watched; 5, 7: fields), u64 min_position, u32 wait_ms;
//   top and counts only: f64 as_of (0: now);
//   trending only: f64 short half-life, f64 long half-life, f64 min_count, f64 since (0: none);
//   distribution only: f64 now, u8 has_rate [f64 rate]; check an increment (items: its fields): f64 received_at, f64 N
// Reply:
//   u32 partition, u8 ok; ok: the answer (kind 1: TopKAnswer; 2: u32 n,
//   n x PointAnswer, then the view's TopKAnswer; 3: TrendingAnswer; 4:
//   HotKeysAnswer: its hot keys, then the watched ones not hot; 5: u8 found [DistributionAnswer]; 6: u64 count; 7: nothing); not ok:
//   u8 error kind, str code, str message
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/engine/answers.hpp"
#include "ebb/engine/trending.hpp"
#include "ebb/service/service.hpp"
#include "ebb/service/service_error.hpp"

namespace ebb::cluster {

// The commit record's type byte: past the service's record types (1-6).
inline constexpr std::uint8_t kCommitRecord = 0x40;

struct PartRef {
  std::uint32_t partition = 0;
  std::uint64_t sequence = 0;  // the part's stream sequence
  friend bool operator==(const PartRef&, const PartRef&) = default;
};

// A batch is counted once this is in the log: it names every part.
struct CommitRecord {
  std::string batch_id;
  std::vector<PartRef> parts;
  // Per namespace of the batch: the log position of the configuration it
  // was checked against. A part's group counts only if that is still the
  // namespace's configuration at the commit (otherwise no partition counts it).
  std::vector<std::pair<std::string, std::uint64_t>> configs;
};

std::string encode_commit(const CommitRecord& r);
bool is_commit(std::string_view payload) noexcept;
// Throws FormatError naming what is wrong.
CommitRecord decode_commit(std::string_view payload);

struct QueryRequest {
  enum class Kind : std::uint8_t { top = 1, counts = 2, trending = 3, hot_keys = 4, distribution = 5, distributions = 6, check_incr = 7 };
  Kind kind = Kind::top;
  std::string ns;
  std::optional<engine::ViewSpec> view;
  std::optional<std::uint64_t> k;
  std::vector<std::string> items;  // counts
  // Read-your-writes: the owner answers once it has applied the log to here.
  std::uint64_t min_position = 0;
  std::uint32_t wait_ms = 0;  // how long it may wait for that
  // trending: the two half-lives (resolved by the asking node), the
  // support asked for, and the stream's start over every partition (0:
  // each partition's own; the asking node asks again with the earliest).
  double short_half_life = 0, long_half_life = 0, min_count = 0, since = 0;
  // distribution: the time to decay to, and the rate asked for;
  // check_incr: the increment's time and N.
  double now = 0;
  std::optional<double> rate;
  double n = 0;
  double as_of = 0;  // top, counts: as of then, from memory (0: now)
};

std::string encode_query(const QueryRequest& q);
QueryRequest decode_query(std::string_view payload);

struct QueryReply {
  std::uint32_t partition = 0;
  std::optional<service::ServiceError> error;
  engine::TopKAnswer top;                  // top; counts: the view block
  std::vector<engine::PointAnswer> points; // counts
  engine::TrendingAnswer trending;         // trending
  service::HotKeysAnswer hot;              // hot keys
  std::optional<engine::DistributionAnswer> distribution;  // distribution (none: it holds nothing)
  std::uint64_t count = 0;                 // distributions held
};

std::string encode_reply(const QueryReply& r, QueryRequest::Kind kind);
QueryReply decode_reply(std::string_view payload, QueryRequest::Kind kind);

}  // namespace ebb::cluster
