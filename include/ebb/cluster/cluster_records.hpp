#pragma once
// What ebb's cluster nodes write to JetStream besides the service's own
// log records, and what they send each other for queries (docs/cluster.md
// has the byte layouts). Little-endian, like the log records:
//
// Commit (subject <prefix>.c, beside the admin records):
//   u8 0x40, str batch_id, u32 n, n x (u32 partition, u64 part's stream sequence),
//   u32 m, m x (str namespace, u64 configuration revision the batch was checked against)
// or, when the batch has event-clock namespaces or namespaces with windows, u8 0x41 and the same, then
//   u32 c, c x (str namespace, f64 event clock it was checked against (NaN: none), f64 newest event time after it)
// or, when the batch came with an idempotency key, u8 0x43 and the same as 0x41 (c may be 0), then
//   str key, u64 body hash
// Merge (CMS.MERGE; subject <prefix>.c, ordered with the commits):
//   u8 0x42, str destination, u32 n, n x (str source, f64 weight),
//   u32 m, m x (str namespace, u64 configuration revision it was checked against)
// Query (request on <prefix>.q.<partition>):
//   u8 kind (1 top, 2 counts, 3 trending, 4 hot keys, 5 distribution, 6 distributions held, 7 check an increment,
//   8 namespaces' stats, 9 an item's history, 10 namespaces' accuracy audits), str namespace (5: the distribution;
//   8, 10: "" for every namespace, or those named as items), u8 has_view [u8 view kind, f64 half_life, f64 window],
//   u8 has_k [u64 k] (5: N most probable), u32 n, n x str item (4: keys watched; 5, 7: fields), u64 min_position, u32 wait_ms;
//   top and counts only: f64 as_of (0: now);
//   trending only: f64 short half-life, f64 long half-life, f64 min_count, f64 since (0: none);
//   distribution only: f64 now, u8 has_rate [f64 rate]; check an increment (items: its fields): f64 received_at, f64 N;
//   history only (items: the item; k: the most points): f64 from, f64 to
// Reply:
//   u32 partition, u8 ok; ok: the answer (kind 1: TopKAnswer; 2: u32 n,
//   n x PointAnswer, then the view's TopKAnswer; 3: TrendingAnswer; 4:
//   HotKeysAnswer: its hot keys, then the watched ones not hot; 5: u8 found [DistributionAnswer]; 6: u64 count; 7: nothing;
//   8: u32 n, n x (str namespace, NamespaceStats); 9: view, u8 truncated, u32 n, n x (f64 t, u8 listed
//   [u32 rank], f64 estimate, f64 lower, f64 upper); 10: u32 n, n x (str namespace, u8 audited, u64 sampled
//   items, u64 top items, f64 sample share, u8 from start, u32 views, views x (view, f64 as_of, u64 compared,
//   u64 outside bound, f64 max error, f64 max relative error, f64 error bound, u64 top compared, f64 top max
//   error share, u32 suggested growth, 10 x u64 histogram bucket counts, u64 count, f64 sum))); not ok:
//   u8 error kind, str code, str message
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/engine/answers.hpp"
#include "ebb/engine/trending.hpp"
#include "ebb/service/cluster_link.hpp"
#include "ebb/service/service.hpp"
#include "ebb/service/service_error.hpp"

namespace ebb::cluster {

// The commit record's type byte: past the service's record types (1-6);
// 0x41 a commit carrying event clocks (written only then, so a cluster of
// wall-clock namespaces writes what earlier versions read).
inline constexpr std::uint8_t kCommitRecord = 0x40;
inline constexpr std::uint8_t kClockedCommitRecord = 0x41;
// 0x43 a commit naming the batch's idempotency key (and clocks, if any).
inline constexpr std::uint8_t kKeyedCommitRecord = 0x43;
// CMS.MERGE as an operation every partition applies to its own part of the
// namespaces (docs/cluster.md: why not the result, as a single node logs).
inline constexpr std::uint8_t kMergeRecord = 0x42;

// An event-clock namespace's clock at a batch's check and after it
// (service/cluster_link.hpp).
using CommitClock = service::EventClockCheck;

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
  std::vector<CommitClock> clocks;  // event-clock namespaces and namespaces with windows
  // The batch's Idempotency-Key and its body's hash: every node's catalog
  // remembers the keys whose batches counted, so that a retry on any node
  // answers as the first attempt did (a single node's key table).
  struct Key {
    std::string key;
    std::uint64_t body_hash = 0;
    friend bool operator==(const Key&, const Key&) = default;
  };
  std::optional<Key> key;
};

std::string encode_commit(const CommitRecord& r);
bool is_commit(std::string_view payload) noexcept;
// Throws FormatError naming what is wrong.
CommitRecord decode_commit(std::string_view payload);

// A merge: the destination's counts become the weighted sum of the
// sources', in every partition whose namespaces all still have the
// configurations named (a change logged between the check and the merge
// voids it, in every partition alike).
struct MergeRecord {
  std::string destination;
  std::vector<std::pair<std::string, double>> sources;  // source, weight
  std::vector<std::pair<std::string, std::uint64_t>> configs;
  friend bool operator==(const MergeRecord&, const MergeRecord&) = default;
};

std::string encode_merge(const MergeRecord& r);
bool is_merge(std::string_view payload) noexcept;
MergeRecord decode_merge(std::string_view payload);  // FormatError

struct QueryRequest {
  enum class Kind : std::uint8_t { top = 1, counts = 2, trending = 3, hot_keys = 4, distribution = 5, distributions = 6, check_incr = 7, stats = 8, history = 9, audit = 10 };
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
  double from = 0, to = 0;  // history: the points' time range
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
  // Namespaces' stats (what this partition counted); audit: only their
  // audit figures (the views' specs and audits, the audit summary).
  std::vector<std::pair<std::string, engine::NamespaceStats>> stats;
  service::HistorySeries history;          // an item's history
};

std::string encode_reply(const QueryReply& r, QueryRequest::Kind kind);
QueryReply decode_reply(std::string_view payload, QueryRequest::Kind kind);

}  // namespace ebb::cluster
