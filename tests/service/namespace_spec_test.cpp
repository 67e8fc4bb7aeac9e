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

// What the server stores of a namespace (log records, checkpoints) parses
// back at restart whatever the request held: a hot_key_threshold of 2.2e20
// was stored as 21 bare digits that the parser refuses, so the namespace
// did not load. Found by fuzz/fuzz_namespace_spec.
TEST(NamespaceSpec, StoredFormOfAHugeThresholdParsesBack) {
  const ServiceLimits limits;
  const auto spec = parse_namespace_spec(R"({"name":"hot","hot_key_threshold":2.18446744073709551616e20})", limits);
  const std::string stored = write_namespace_spec(spec, true);
  EXPECT_NE(stored.find(R"("hot_key_threshold":2.1844674407370955e+20,)"), std::string::npos) << stored;
  const auto again = parse_namespace_spec(stored, limits, SpecSource::stored);
  ASSERT_TRUE(again.config.hot_key_threshold.has_value());
  EXPECT_EQ(*again.config.hot_key_threshold, 2.1844674407370955e20);
  EXPECT_EQ(write_namespace_spec(again, true), stored);
}

}  // namespace
}  // namespace ebb::service
