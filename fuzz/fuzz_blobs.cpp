// The deserialisers behind checkpoint states (core/binary_io.hpp envelopes):
// CountMin, CandidateHeap, SpaceSaving, ForwardDecay, ExactDecayedCounter,
// AugmentedHeap.
// Input: a digit choosing the type (in that order, from '0'), an option
// byte (bit 0: re-seal every envelope with its right checksum first, so the
// fuzzer reaches the payload; bit 1: summaries are read as a namespace
// reads them, expecting capacity 4), then the blob.
// Checks: a refused blob is a FormatError, nothing else; an accepted one
// answers queries without UB, reports only finite non-negative counts, and
// serialises to a blob that reads back and serialises to the same bytes.
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/decay/exact_decayed_counter.hpp"
#include "ebb/decay/forward_decay.hpp"
#include "ebb/sketch/augmented_heap/augmented_heap.hpp"
#include "ebb/sketch/candidate_heap/candidate_heap.hpp"
#include "ebb/sketch/count_min/count_min.hpp"
#include "ebb/sketch/space_saving/space_saving.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb;

bool finite_count(double v) { return std::isfinite(v) && v >= 0; }

template <typename T>
void check_round_trip(const T& x) {
  const std::string once = x.serialize();
  const std::string twice = T::deserialize(once).serialize();
  FUZZ_CHECK(once == twice);
}

template <typename Summary>
void check_summary(const Summary& s) {
  FUZZ_CHECK(s.size() <= s.capacity());
  FUZZ_CHECK(finite_count(s.threshold()));
  const auto top = s.top(s.size() + 1);
  FUZZ_CHECK(top.size() == s.size());
  std::set<std::string> keys;
  for (std::size_t i = 0; i < top.size(); ++i) {
    FUZZ_CHECK(keys.insert(top[i].key).second);
    FUZZ_CHECK(finite_count(top[i].estimate) && finite_count(top[i].upper) && std::isfinite(top[i].lower));
    if (i > 0) FUZZ_CHECK(!ranks_before(top[i], top[i - 1]));
    const auto found = s.find(top[i].key, hash_key(top[i].key));
    FUZZ_CHECK(found && *found == top[i]);
  }
  check_round_trip(s);
}

void check_augmented(const AugmentedHeap& h) {
  FUZZ_CHECK(h.size() <= h.capacity());
  FUZZ_CHECK(finite_count(h.threshold()) && finite_count(h.absorbed()));
  const auto list = h.top(h.size() + 1);
  FUZZ_CHECK(list.items.size() == h.size() && finite_count(list.unlisted_upper));
  std::set<std::string> keys;
  for (std::size_t i = 0; i < list.items.size(); ++i) {
    const auto& item = list.items[i];
    FUZZ_CHECK(keys.insert(item.key).second);
    FUZZ_CHECK(finite_count(item.lower) && item.lower <= item.estimate && item.estimate <= item.upper && std::isfinite(item.upper));
    if (i > 0) FUZZ_CHECK(!ranks_before(item, list.items[i - 1]));
    const auto found = h.find(item.key, hash_key(item.key));
    FUZZ_CHECK(found && *found == item);
  }
  check_round_trip(h);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const std::uint8_t type = in.digit() % 6;
  const std::uint8_t options = in.byte();
  const std::string blob = options & 1 ? fuzz::fixed_envelopes(in.rest()) : std::string(in.rest());
  const std::optional<std::uint32_t> capacity = options & 2 ? std::optional<std::uint32_t>(4) : std::nullopt;
  if ((type == 1 || type == 2 || type == 5) && !capacity) {
    // A summary's capacity (u32 after the envelope's 16 bytes and 8 or 16
    // bytes of floor/total) may be up to 2^24, and the heap's table is
    // allocated for it: 256 MiB to zero for one input. Valid, and the same
    // code as small ones, but it made the whole target 100 times slower: keep
    // such inputs out of the corpus. (With an expected capacity, as a
    // namespace reads them, they are refused before any allocation.)
    const std::size_t at = 16 + (type == 2 ? 16 : 8);
    std::uint32_t claimed = 0;
    if (blob.size() >= at + 4) std::memcpy(&claimed, blob.data() + at, 4);
    if (claimed > 4096) return -1;
  }
  try {
    switch (type) {
      case 0: {
        const CountMin cms = CountMin::deserialize(blob);
        FUZZ_CHECK(finite_count(cms.total()));
        for (const char* key : {"a", "b", "#rust"}) (void)cms.estimate(hash_key(key));
        check_round_trip(cms);
        break;
      }
      case 1: {
        const CandidateHeap heap = CandidateHeap::deserialize(blob, capacity);
        FUZZ_CHECK(!capacity || heap.capacity() == *capacity);
        check_summary(heap);
        break;
      }
      case 2: {
        const SpaceSaving ss = SpaceSaving::deserialize(blob, capacity);
        FUZZ_CHECK(!capacity || ss.capacity() == *capacity);
        FUZZ_CHECK(finite_count(ss.total()));
        check_summary(ss);
        break;
      }
      case 3: {
        const ForwardDecay clock = ForwardDecay::deserialize(blob);
        FUZZ_CHECK(std::isfinite(clock.lambda()) && clock.lambda() >= 0 && std::isfinite(clock.landmark()));
        FUZZ_CHECK(ForwardDecay::deserialize(clock.serialize()) == clock);
        break;
      }
      case 4: {
        const ExactDecayedCounter c = ExactDecayedCounter::deserialize(blob);
        FUZZ_CHECK(c.views() >= 1);
        for (std::size_t v = 0; v < c.views(); ++v) FUZZ_CHECK(c.top(v, c.size() + 1, 0).size() == c.size());
        check_round_trip(c);
        break;
      }
      case 5: {
        const AugmentedHeap heap = AugmentedHeap::deserialize(blob, capacity);
        FUZZ_CHECK(!capacity || heap.capacity() == *capacity);
        check_augmented(heap);
        break;
      }
    }
  } catch (const FormatError&) {
  }
  return 0;
}
