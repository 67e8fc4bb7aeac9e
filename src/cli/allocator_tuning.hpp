#pragma once

namespace ebb::cli {

// Keeps glibc's malloc from handing memory back to the kernel between one
// batch and the next (see allocator_tuning.cpp). A setting the user made
// through GLIBC_TUNABLES or MALLOC_*_ is left as it is.
void keep_freed_memory_for_reuse() noexcept;

}  // namespace ebb::cli
