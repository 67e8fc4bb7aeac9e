#pragma once
// What the service writes to its log: one record per accepted batch and per
// namespace change, so a replay from a checkpoint rebuilds the same state,
// bit for bit. The batch record carries its receive time: every rule that
// reads the clock (future skew, maximum event age) reads that instead.
// docs/formats.md has the byte layout; payloads are little-endian:
//
//   u8 type, then
//   1 batch:  f64 received_at, u8 has_key, [str key, u64 body_hash],
//             u32 groups, per group: str namespace, u32 n, n x (str item, f64 time, f64 weight)
//   7 batch, compact (what the local log writes since type 7 was added;
//             type 1 stays readable, and is what the cluster's messages carry):
//             f64 received_at, u8 has_key, [vstr key, u64 body_hash],
//             var groups, per group: vstr namespace, var n, n x event:
//             var head = item length << 2 | 2 (own time) | 1 (own weight),
//             item bytes, [f64 time: when not received_at], [f64 weight: when not 1]
//             (var = LEB128, canonical; vstr = var length + bytes). An event
//             of the usual kind (no timestamp, weight 1) is its item and one
//             byte, against the item and 20 bytes in type 1.
//   2 create: str config_json
//   3 patch:  str name, str config_json (the whole new configuration)
//   4 delete: str name
//   5 distribution increment: f64 received_at, str distribution, f64 n,
//             f64 rate (of the distribution if this creates it), u32 fields, fields x str field,
//             [u8 decay: 1 Poisson (likewise); absent: exact]
//   6 state:  str name, str state (the namespace's whole new counting state,
//             Namespace::serialize_state(): CMS.MERGE, whose result depends
//             on other namespaces' states at the time, which a replay from
//             per-namespace checkpoints cannot rebuild)
//   (str = u32 length + bytes)
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/engine/distribution_store.hpp"
#include "ebb/engine/event.hpp"

namespace ebb::service {

// What a record is. A batch has two layouts, told apart by the payload's
// first byte (1, or kCompactBatchByte): record_type() says batch for both
// and decode_batch() reads both.
enum class RecordType : std::uint8_t { batch = 1, create = 2, patch = 3, remove = 4, distribution_incr = 5, state = 6 };
inline constexpr std::uint8_t kCompactBatchByte = 7;

struct BatchGroup {
  std::string_view ns;
  std::vector<engine::Event> events;  // items point into the record (or the request)
};

// A group as the encoders read it: the events where they lie (a request's,
// not copied into a BatchRecord).
struct BatchGroupView {
  std::string_view ns;
  std::span<const engine::Event> events;
};

struct IdempotencyStamp {
  std::string_view key;
  std::uint64_t body_hash = 0;
};

struct BatchRecord {
  double received_at = 0;
  std::optional<IdempotencyStamp> key;
  std::vector<BatchGroup> groups;
};

struct AdminRecord {
  RecordType type = RecordType::create;
  std::string_view name;         // patch, remove, state
  std::string_view config_json;  // create, patch
  std::string_view state;        // state
};

// GET /incr: n added to each field of a distribution at received_at.
struct DistributionIncrRecord {
  double received_at = 0;
  std::string_view distribution;
  double n = 1;
  double rate = 0;  // the decay rate the distribution gets if this creates it (the server's default then)
  std::vector<std::string_view> fields;
  engine::DistributionDecay decay = engine::DistributionDecay::exact;  // likewise
};

void encode_batch(std::string& out, const BatchRecord& r);          // type 1
void encode_batch_compact(std::string& out, const BatchRecord& r);  // type 7
void encode_batch_compact(std::string& out, double received_at, const std::optional<IdempotencyStamp>& key,
                          std::span<const BatchGroupView> groups);  // the same bytes
// The same record, written at the front of `buffer`, whose size only grows
// (a buffer reused record after record is not filled again for each) and
// is not the record's: the record is the view returned, valid until the
// buffer changes.
std::string_view encode_batch_compact_at_front(std::string& buffer, double received_at, const std::optional<IdempotencyStamp>& key,
                                               std::span<const BatchGroupView> groups);
void encode_distribution_incr(std::string& out, const DistributionIncrRecord& r);
std::string encode_admin(const AdminRecord& r);

// Decodes a payload; views point into it. Throws FormatError naming what is
// wrong (a record that passed its checksum but does not decode is a bug or
// a foreign log: recovery stops there).
RecordType record_type(std::string_view payload);
BatchRecord decode_batch(std::string_view payload);
AdminRecord decode_admin(std::string_view payload);
DistributionIncrRecord decode_distribution_incr(std::string_view payload);

}  // namespace ebb::service
