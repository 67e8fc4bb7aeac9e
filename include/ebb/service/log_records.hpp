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

enum class RecordType : std::uint8_t { batch = 1, create = 2, patch = 3, remove = 4, distribution_incr = 5, state = 6 };

struct BatchGroup {
  std::string_view ns;
  std::vector<engine::Event> events;  // items point into the record (or the request)
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

void encode_batch(std::string& out, const BatchRecord& r);
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
