#include "ebb/service/namespace_spec.hpp"

#include <gtest/gtest.h>

#include "ebb/core/error.hpp"
#include "ebb/engine/decayed_view.hpp"
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

// "memory" sizes a view's sketch and candidates (DecayedView::fit_budget)
// and is echoed; given with what it sizes, it is refused; a stored
// configuration holds both, and its shape stands.
TEST(NamespaceSpec, MemorySizesTheSketchAndCandidates) {
  const ServiceLimits limits;
  const auto spec = parse_namespace_spec(R"({"name":"m","k":100,"memory":"128KiB"})", limits);
  EXPECT_EQ(spec.config.memory, 131072u);
  EXPECT_EQ(spec.config.sketch.width, 2048u);
  EXPECT_EQ(spec.config.sketch.depth, 3u);
  EXPECT_EQ(spec.config.candidates, engine::DecayedView::fit_budget(131072, 100).candidates);
  EXPECT_GE(spec.config.candidates, 500u);
  EXPECT_LE(engine::DecayedView::reserved_bytes(spec.config.sketch, spec.config.candidates), 131072u);
  const std::string stored = write_namespace_spec(spec, true);
  EXPECT_NE(stored.find(R"("memory":"128KiB")"), std::string::npos) << stored;
  const auto again = parse_namespace_spec(stored, limits, SpecSource::stored);
  EXPECT_EQ(write_namespace_spec(again, true), stored);
  // A stored shape stands even if the sizing rule changes: here a narrower sketch.
  std::string narrower = stored;
  narrower.replace(narrower.find(R"("sketch_width":2048)"), 19, R"("sketch_width":1024)");
  EXPECT_EQ(parse_namespace_spec(narrower, limits, SpecSource::stored).config.sketch.width, 1024u);
  EXPECT_EQ(parse_namespace_spec(R"({"name":"m","memory":65536})", limits).config.memory, 65536u);

  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"m","memory":"128KiB","sketch_width":4096})", limits); }),
            "memory: sizes the sketch and the candidates itself: give memory or sketch_width, not both");
  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"m","memory":"128KiB","candidates":300})", limits); }),
            "memory: sizes the sketch and the candidates itself: give memory or candidates, not both");
  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"m","memory":"0"})", limits); }),
            "memory: must be a size above 0, e.g. \"128KiB\"");
  EXPECT_NE(message_of([&] { parse_namespace_spec(R"({"name":"m","memory":"lots"})", limits); }).find("memory: "), std::string::npos);
  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"m","k":1000,"memory":"8KiB"})", limits); }).substr(0, 48),
            "memory: 8192 bytes cannot hold a view of 1000 ca");
  // Found by the hostile tester: Space-Saving ignored the budget, windows
  // alone have nothing it sizes, 1 TiB made `ebb top` throw bad_alloc, the
  // stated least budget did not fit, a NUL cut the message, PATCH called
  // the field unknown.
  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"m","memory":"128KiB","summary":"space_saving"})", limits); }),
            "memory: sizes the candidate heap (\"summary\": \"candidate_heap\"), not Space-Saving");
  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"m","memory":"128KiB","windows":["1h"]})", limits); }),
            "memory: sizes the all-time and decayed views, and this namespace keeps windows only (window_sketch_width sizes those)");
  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"m","memory":"1TiB"})", limits); }),
            "memory: at most 1 GiB a view (got 1099511627776 bytes)");
  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"m","memory":"128KiB\u0000zz"})", limits); }),
            "memory: must be a size such as \"128KiB\" or a number of bytes (got '128KiB\\0zz')");
  for (std::uint32_t k : {1u, 100u, 1000u}) {
    std::string message;
    try {
      engine::DecayedView::fit_budget(2000, k);
    } catch (const InvalidArgument& e) {
      message = e.what();
    }
    const auto at = message.find("at least ");
    ASSERT_NE(at, std::string::npos) << message;
    const std::uint64_t least = std::stoull(message.substr(at + 9));
    EXPECT_NO_THROW(engine::DecayedView::fit_budget(least, k)) << message;
  }
  EXPECT_EQ(message_of([&] { patch_namespace_spec(spec, R"({"memory":"1MiB"})", limits); }).substr(0, 8), "memory: ");
  EXPECT_EQ(message_of([&] { parse_namespace_spec(R"({"name":"m","counting":"exact","memory":"128KiB"})", limits); }).substr(0, 35),
            "memory: does not apply to \"counting");
}

}  // namespace
}  // namespace ebb::service
