#include "allocator_tuning.hpp"

#include <cstdlib>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ebb::cli {

// Why: a server's batches allocate and free their scratch (events, hashes,
// the log record, the reply) on every request, tens to hundreds of KiB on
// an event loop's arena. With glibc's defaults a free that leaves more than
// the trim threshold at the top of a thread's arena gives it back
// (madvise(MADV_DONTNEED), a TLB shootdown on every core) and the next
// batch faults the same pages in again: on pipelined RESP TOPK.ADD x100,
// thousands of page faults a million events and up to 1.7x the server CPU
// an event (docs/design.md, "ebb serve", Allocation). The cost is memory
// already used staying mapped (bounded by the largest batch a thread
// handled), not growth.
//
// Setting any of these turns off glibc's dynamic mmap threshold, so the
// threshold is set too: blocks up to 32 MiB (the largest glibc allows)
// come from the arenas and are reused; larger ones are mapped and unmapped.
void keep_freed_memory_for_reuse() noexcept {
#if defined(__GLIBC__)
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t != nullptr && std::strstr(t, "glibc.malloc.") != nullptr) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  mallopt(M_TOP_PAD, 1 << 20);
#endif
}

}  // namespace ebb::cli
