#pragma once
// The namespace fuzz_namespace_state restores states into, and
// fuzz_make_seeds makes its seed states with: small, so that a whole state
// is a few hundred bytes the fuzzer can mutate.
#include "ebb/engine/namespace.hpp"

namespace ebb::fuzz {

// `exact`: exact counting (one record per item, at most 4) with a 1m window too.
inline engine::NamespaceConfig fixture_config(bool space_saving, bool exact = false) {
  engine::NamespaceConfig c;
  c.name = "fuzz";
  c.k = 3;
  c.all_time = true;
  c.half_lives = {60};
  c.sketch = CountMinShape::with_dimensions(16, 2);
  c.summary = space_saving ? engine::SummaryKind::space_saving : engine::SummaryKind::candidate_heap;
  c.candidates = 4;
  c.clock = engine::ClockMode::event;
  if (exact) {
    c.counting = engine::Counting::exact;
    c.max_items = 4;
    c.windows = {60};
  }
  c.validate();
  return c;
}

inline double fixture_clock() { return 1.7e9; }

}  // namespace ebb::fuzz
