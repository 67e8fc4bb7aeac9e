#include "ebb/service/namespace_spec.hpp"

#include <gtest/gtest.h>

#include "ebb/service/service_error.hpp"

namespace ebb::service {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ServiceError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

// An unknown field whose name starts with NUL ("\u0000") used to make an
// empty message (what() ends at the NUL): the bug fuzz/fuzz_event_body found
// in the POST /events parser, here too; fuzz/fuzz_namespace_spec checks it.
TEST(NamespaceSpec, NulInAnUnknownFieldNameIsSpelledOutInTheMessage) {
  const ServiceLimits limits;
  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"a","\u0000x":1})", limits); }),
            "\\0x: unknown field (see docs/api.md for the namespace fields)");
  const auto spec = parse_namespace_spec(R"({"name":"a"})", limits);
  EXPECT_EQ(message_of([&] { patch_namespace_spec(spec, R"({"\u0000k":1})", limits); }), "\\0k: unknown field");
}

}  // namespace
}  // namespace ebb::service
