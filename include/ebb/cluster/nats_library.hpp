#pragma once
// libnats is opened when cluster mode starts, not when ebb starts: linked
// in, it brought libssl and libcrypto (some 25,000 symbol relocations) into
// every run of every ebb command, a third of `ebb top`'s start.
// src/cluster/nats_library.cpp defines the libnats functions ebb calls
// (scripts/gen-nats-functions lists them), each calling the library's own.

namespace ebb::cluster {

// Opens libnats (once; later calls return at once). Throws
// std::runtime_error saying which library is missing and which Debian
// package has it. A libnats function called first opens it too.
void load_nats_library();

}  // namespace ebb::cluster
