#pragma once
// Taking a mutex that is held only briefly: try for some microseconds
// before sleeping. On a contended std::mutex the waiter sleeps in the
// kernel and the holder makes a second system call to wake it; on the
// virtual machines ebb runs on, that pair costs more than the work the
// holder is doing (a log record's write: two event-loop threads appending
// /incr records halved the server's throughput, 226k vs 94k requests/s).
// The wait is bounded, so a holder that is descheduled or slow costs at
// most the spin before the waiter sleeps as usual.
#include <mutex>
#include <thread>

namespace ebb {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  std::this_thread::yield();
#endif
}

// Locks `mu`, trying up to `spins` times with a relax instruction between
// tries before blocking: at the default, 1 to 10 us (x86's PAUSE takes 10
// to 140 cycles, depending on the generation). Use as
//   lock_spinning(mu); std::lock_guard lock(mu, std::adopt_lock);
template <class Mutex>
void lock_spinning(Mutex& mu, int spins = 200) {
  for (int i = 0; i < spins; ++i) {
    if (mu.try_lock()) return;
    cpu_relax();
  }
  mu.lock();
}

}  // namespace ebb
