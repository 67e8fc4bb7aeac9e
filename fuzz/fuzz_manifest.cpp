// Checkpoint manifests (storage/checkpoint_store.hpp Manifest::parse), read
// from the data directory at startup. Input: one option byte (bit 0: re-seal
// every blob envelope in the input with its right checksum first, so the
// fuzzer reaches the payload parser), then the manifest file.
// Checks: a refused manifest is a FormatError, nothing else; an accepted one
// names no state file outside its folder and serialises back to exactly the
// bytes it was read from (a version 1 or 2 manifest, which this build reads
// and writes as version 3: to a manifest that reads back the same).
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
  for (const auto& p : m.parts) FUZZ_CHECK(p.state_file.find('/') == std::string::npos && !p.state_file.starts_with("."));
  const std::string written = m.serialize();
  // "EBB\0", u16 kind, u16 version: an older version is written as the current one.
  const bool older = blob[7] == 0 && static_cast<std::uint8_t>(blob[6]) < 3;
  if (older) FUZZ_CHECK(storage::Manifest::parse(written).serialize() == written);
  else FUZZ_CHECK(written == blob);
  return 0;
}
