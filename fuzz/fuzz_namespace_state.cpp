// Checkpoint states (engine/namespace.hpp Namespace::restore_state), read at
// startup into a namespace built from its stored configuration. Input: one
// option byte (bit 0: re-seal every envelope, outer and nested, with its
// right checksum first, so the fuzzer reaches every payload parser; bit 1:
// Space-Saving summaries instead of candidate heaps; bit 2: an exact-counting
// namespace instead, its table and window rings), then the state blob.
// Checks: a refused state is a FormatError and leaves the namespace as it
// was; an accepted one answers top-K and point queries (at most k distinct
// items, in report order), saves a state that restores to the same bytes,
// and still counts a batch.
#include <set>

#include "ebb/core/error.hpp"
#include "ebb/engine/namespace.hpp"
#include "fuzz_support.hpp"
#include "namespace_fixture.hpp"

namespace {

using namespace ebb;

void check_answers(const engine::Namespace& ns) {
  for (const auto& view : ns.views()) {
    const auto top = ns.top(view->spec());
    FUZZ_CHECK(top.items.size() <= ns.config().k);
    std::set<std::string> keys;
    for (std::size_t i = 0; i < top.items.size(); ++i) {
      FUZZ_CHECK(keys.insert(top.items[i].key).second);
      if (i > 0) {
        const auto& a = top.items[i - 1];
        const auto& b = top.items[i];
        FUZZ_CHECK_MSG(!ranks_before(b, a), a.key + " " + std::to_string(a.estimate) + " before " + b.key + " " + std::to_string(b.estimate) +
                                                " in view " + view->spec().label() + " as of " + std::to_string(top.as_of));
      }
    }
    (void)ns.count("a", view->spec());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const std::uint8_t options = in.byte();
  const std::string blob = options & 1 ? fuzz::fixed_envelopes(in.rest()) : std::string(in.rest());
  const engine::NamespaceConfig cfg = fuzz::fixture_config(options & 2, options & 4);

  engine::Namespace ns(cfg, fuzz::fixture_clock);
  const std::string empty = ns.serialize_state();
  try {
    ns.restore_state(blob);
  } catch (const FormatError&) {
    FUZZ_CHECK(ns.serialize_state() == empty);  // unchanged
    return 0;
  }
  check_answers(ns);

  const std::string saved = ns.serialize_state();
  engine::Namespace again(cfg, fuzz::fixture_clock);
  again.restore_state(saved);
  FUZZ_CHECK(again.serialize_state() == saved);

  const engine::Event events[] = {{"a", 1e6, 1}, {"b", 1e6 + 1, 2.5}, {"a", 1e6 + 2, 1}};
  try {
    ns.apply(events);
  } catch (const BatchError&) {
    return 0;  // e.g. the restored newest event time is past these
  }
  check_answers(ns);
  return 0;
}
