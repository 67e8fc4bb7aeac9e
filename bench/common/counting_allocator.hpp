#pragma once
// A counting allocator for the memory benchmarks: global operator new and
// delete by malloc_usable_size (what the heap really hands out, slack
// included). Include it in exactly one translation unit of a program: it
// replaces the program's operator new.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace ebb::bench {
inline std::atomic<std::size_t> g_live{0};
// Bytes the program holds on the heap now.
inline std::size_t live_bytes() noexcept { return g_live.load(); }
}  // namespace ebb::bench

void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (!p) throw std::bad_alloc();
  ebb::bench::g_live += malloc_usable_size(p);
  return p;
}
void operator delete(void* p) noexcept {
  if (!p) return;
  ebb::bench::g_live -= malloc_usable_size(p);
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }
// Aligned forms (a sketch's counters are cache-line or huge-page aligned).
void* operator new(std::size_t n, std::align_val_t align) {
  const auto a = static_cast<std::size_t>(align);
  void* p = std::aligned_alloc(a, (n + a - 1) / a * a);
  if (!p) throw std::bad_alloc();
  ebb::bench::g_live += malloc_usable_size(p);
  return p;
}
void operator delete(void* p, std::align_val_t) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { operator delete(p); }
void* operator new[](std::size_t n, std::align_val_t align) { return operator new(n, align); }
void operator delete[](void* p, std::align_val_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { operator delete(p); }
