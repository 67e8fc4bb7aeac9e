// Write-ahead log records (service/log_records.hpp): the payloads recovery
// decodes after their checksum passed. Input: one record payload.
// Checks: a refused payload is a FormatError, nothing else; an accepted
// one re-encodes to exactly the same bytes in its own layout (a batch: type
// 1 or the compact type 7; encode(decode(p)) == p), and
// every string it holds points inside the payload.
#include "ebb/core/error.hpp"
#include "ebb/service/log_records.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb;

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  try {
    const auto type = service::record_type(payload);
    if (type == service::RecordType::batch) {
      const service::BatchRecord r = service::decode_batch(payload);
      if (r.key) FUZZ_CHECK(inside(r.key->key, payload));
      for (const auto& g : r.groups) {
        FUZZ_CHECK(inside(g.ns, payload));
        for (const auto& e : g.events) FUZZ_CHECK(inside(e.item, payload));
      }
      std::string again;
      if (static_cast<std::uint8_t>(payload[0]) == service::kCompactBatchByte) {
        service::encode_batch_compact(again, r);
      } else {
        service::encode_batch(again, r);
      }
      FUZZ_CHECK(again == payload);
    } else {
      const service::AdminRecord r = service::decode_admin(payload);
      FUZZ_CHECK(r.type == type);
      FUZZ_CHECK(inside(r.name, payload) && inside(r.config_json, payload) && inside(r.state, payload));
      FUZZ_CHECK(service::encode_admin(r) == payload);
    }
  } catch (const FormatError&) {
  }
  return 0;
}
