// What cluster nodes send each other (cluster/cluster_records.hpp): commit
// records read back from JetStream, and the queries and replies of NATS
// request/reply, which any client on the NATS servers can send. Input: one
// option byte, then the bytes. (Option - '0') % 12: 0 a commit record, 1 a
// query, 2-10 a reply to a query of kind 1-9, 11 a merge record (seeds:
// '0', '1', '2'-':', ';').
// Checks: a refused input is a FormatError, nothing else; an accepted one
// re-encodes to bytes that decode and re-encode to themselves (the format
// keeps everything it read; booleans read as any non-zero byte).
#include "ebb/cluster/cluster_records.hpp"
#include "ebb/core/error.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ebb::cluster;
  if (size == 0) return 0;
  const int option = static_cast<int>((data[0] + 256u - '0') % 12);
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (option == 0) {
      const std::string once = encode_commit(decode_commit(bytes));
      FUZZ_CHECK(is_commit(once));
      FUZZ_CHECK(encode_commit(decode_commit(once)) == once);
    } else if (option == 11) {
      const std::string once = encode_merge(decode_merge(bytes));
      FUZZ_CHECK(is_merge(once) && !is_commit(once));
      FUZZ_CHECK(encode_merge(decode_merge(once)) == once);
    } else if (option == 1) {
      const std::string once = encode_query(decode_query(bytes));
      FUZZ_CHECK(encode_query(decode_query(once)) == once);
    } else {
      const auto kind = static_cast<QueryRequest::Kind>(option - 1);
      const std::string once = encode_reply(decode_reply(bytes, kind), kind);
      FUZZ_CHECK(encode_reply(decode_reply(once, kind), kind) == once);
    }
  } catch (const ebb::FormatError&) {
  }
  return 0;
}
