// HTTP request targets (server/http_types.hpp parse_target: path, query,
// percent-decoding, absolute form) and percent-encoding (core/percent_encoding.hpp).
// Input: a request target as it arrives.
// Checks: a refused target is ApiError 400 bad_request, nothing else; an
// origin-form target ("/...") reads the same in absolute form
// ("http://host/..."); and, taking the input as arbitrary bytes x split in
// two halves a and b, percent_encode writes only unreserved bytes and %XX,
// and parse_target("/" + enc(x) + "?" + enc(a) + "=" + enc(b)) gives back
// exactly the path "/" + x and the one parameter a = b.
#include <map>

#include "ebb/core/percent_encoding.hpp"
#include "ebb/server/http_types.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb;
using Query = std::multimap<std::string, std::string>;

bool parse(std::string_view target, std::string& path, Query& query) {
  try {
    server::parse_target(target, path, query);
    return true;
  } catch (const server::ApiError& e) {
    FUZZ_CHECK(e.status() == 400 && e.code() == "bad_request");
    return false;
  }
}

bool is_hex_upper(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

std::string encode(std::string_view s) {
  const std::string out = percent_encode(s, "-_.~");
  std::size_t escaped = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (c == '%') {
      FUZZ_CHECK(i + 2 < out.size() && is_hex_upper(out[i + 1]) && is_hex_upper(out[i + 2]));
      i += 2;
      ++escaped;
    } else {
      FUZZ_CHECK((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~');
    }
  }
  FUZZ_CHECK(out.size() == s.size() + 2 * escaped);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view target(reinterpret_cast<const char*>(data), size);
  std::string path;
  Query query;
  const bool ok = parse(target, path, query);

  if (target.starts_with("/")) {
    std::string path2;
    Query query2;
    const bool ok2 = parse("http://ebb.example:8080" + std::string(target), path2, query2);
    FUZZ_CHECK(ok == ok2);
    if (ok) FUZZ_CHECK(path == path2 && query == query2);
  }

  const std::string_view a = target.substr(0, size / 2), b = target.substr(size / 2);
  const std::string encoded = "/" + encode(target) + "?" + encode(a) + "=" + encode(b);
  FUZZ_CHECK(parse(encoded, path, query));
  FUZZ_CHECK(path == "/" + std::string(target));
  FUZZ_CHECK(query.size() == 1 && query.begin()->first == a && query.begin()->second == b);
  return 0;
}
