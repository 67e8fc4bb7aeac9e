// Checkpoint manifests (storage/checkpoint_store.hpp Manifest::parse), read
// from the data directory at startup. Input: one option byte (bit 0: re-seal
// every blob envelope in the input with its right checksum first, so the
// fuzzer reaches the payload parser), then the manifest file.
// Checks: a refused manifest is a FormatError, nothing else; an accepted one
// names no state file outside its folder and serialises back to exactly the
// bytes it was read from.
#include "ebb/core/error.hpp"
#include "ebb/storage/checkpoint_store.hpp"
#include "fuzz_support.hpp"

using namespace ebb;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const std::uint8_t options = in.byte();
  const std::string blob = options & 1 ? fuzz::fixed_envelopes(in.rest()) : std::string(in.rest());
  storage::Manifest m;
  try {
    m = storage::Manifest::parse(blob);
  } catch (const FormatError&) {
    return 0;
  }
  for (const auto& ns : m.namespaces) FUZZ_CHECK(ns.state_file.find('/') == std::string::npos && !ns.state_file.starts_with("."));
  FUZZ_CHECK(m.serialize() == blob);
  return 0;
}
