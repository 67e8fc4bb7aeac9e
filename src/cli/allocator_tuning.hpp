#pragma once

namespace ebb::cli {

// Keeps glibc's malloc from handing memory back to the kernel between one
// batch and the next (see allocator_tuning.cpp). Left alone when the user
// tunes malloc through GLIBC_TUNABLES.
void keep_freed_memory_for_reuse() noexcept;

}  // namespace ebb::cli
