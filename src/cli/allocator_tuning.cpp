#include "allocator_tuning.hpp"

#include <cstdlib>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ebb::cli {

// Why: a server's batches allocate and free their scratch (events, hashes,
// the log record, the reply: tens to hundreds of KiB) on every request, on
// the arena of the event loop's thread. With glibc's defaults a free that
// leaves more than the trim threshold (dynamic, about twice the largest
// block freed lately) at the top of an arena gives it back to the kernel
// (madvise(MADV_DONTNEED), a TLB shootdown on the other cores running the
// process) and the next batch faults the same pages in again: on pipelined
// RESP TOPK.ADD, thousands of page faults a million events and up to 1.7x
// the server CPU an event (docs/design.md, "ebb serve", Allocation).
//
// - Trim threshold 16 MiB: an arena keeps up to that much free at its top
//   (far above a batch's scratch); past it, it gives back all but the top
//   pad, as before.
// - Setting it turns glibc's dynamic mmap threshold off, which would leave
//   it at 128 KiB (a batch's larger blocks mapped and unmapped each time).
//   Fixed at 32 MiB instead, the most glibc allows and where the dynamic
//   one settles once a block that large was freed: a batch as large as the
//   default --max-body-bytes (16 MiB) comes from the arenas. Blocks of
//   128 KiB to 32 MiB that live long (sketches) sit in the arenas then, as
//   they would once the dynamic threshold rose; a deleted namespace's
//   memory is reused by the process rather than returned.
// - Top pad 1 MiB: an arena grows by at least that, in fewer steps.
//
// A setting the user made through the environment (GLIBC_TUNABLES or
// glibc's older MALLOC_*_ variables) is left alone. Sanitizer builds
// replace mallopt with a stub: tests under ASan do not run with these.
namespace {

bool tuned_by_user(const char* tunable, const char* variable) {
  const char* t = std::getenv("GLIBC_TUNABLES");
  return (t != nullptr && std::strstr(t, tunable) != nullptr) || std::getenv(variable) != nullptr;
}

}  // namespace

void keep_freed_memory_for_reuse() noexcept {
#if defined(__GLIBC__)
  if (!tuned_by_user("glibc.malloc.mmap_threshold", "MALLOC_MMAP_THRESHOLD_") && mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1) {
    return;  // (refused, as by a 32-bit glibc: the others would freeze it at 128 KiB)
  }
  if (!tuned_by_user("glibc.malloc.trim_threshold", "MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, 16 << 20);
  if (!tuned_by_user("glibc.malloc.top_pad", "MALLOC_TOP_PAD_")) mallopt(M_TOP_PAD, 1 << 20);
#endif
}

}  // namespace ebb::cli
