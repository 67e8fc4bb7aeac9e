#pragma once
// When a reader of the stream must ask where the stream starts
// (docs/cluster.md, "Retention"). JetStream moves a reader whose next
// record was dropped up to the stream's start unawares, so a reader left
// behind must find out before it applies what comes next. Asking is a
// JetStream request (stream info: costly for the server too), which every
// partition replica and the catalog made for every fetch: a fifth of a
// node's CPU under ingest.
//
// Retention never drops a record stored within the last --nats-retention
// (the purge floor is at most the first such record). Records after the
// last one applied were stored after it, so while that one is younger
// than half of --nats-retention nothing after it can be gone: the reader
// asks when it has none yet (a start), when it lags by more, and besides
// at least every kRecheck of this machine's time including any suspend
// (CLOCK_BOOTTIME): a reader that was paused, a node whose wall clock came
// back wrong from a suspended VM, another node purging with a shorter
// --nats-retention or a purge made by hand are then noticed at the next
// fetch, or within kRecheck.
#include <time.h>

#include <chrono>
#include <cstdint>

namespace ebb::cluster {

class GapGuard {
 public:
  static constexpr std::chrono::seconds kRecheck{5};

  GapGuard() = default;  // off: the stream drops nothing
  explicit GapGuard(std::chrono::nanoseconds retention) : margin_ns_(retention.count() / 2) {}

  bool on() const noexcept { return margin_ns_ > 0; }
  // Before applying records fetched after the last applied one.
  bool must_ask() const {
    if (!on()) return false;
    if (last_ns_ == 0 || boot_ns() - asked_ns_ >= std::chrono::nanoseconds(kRecheck).count()) return true;
    const std::int64_t now_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return now_ns - last_ns_ >= margin_ns_;
  }
  // The stream's start was asked (and the reader is not behind it).
  void asked() noexcept { asked_ns_ = boot_ns(); }
  // A record applied, with the time the stream stored it.
  void applied(std::int64_t stored_ns) noexcept { last_ns_ = stored_ns; }

 private:
  static std::int64_t boot_ns() noexcept {
    timespec t{};
    clock_gettime(CLOCK_BOOTTIME, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  }
  std::int64_t margin_ns_ = 0;
  std::int64_t last_ns_ = 0;   // stored time of the last record applied (0: none known)
  std::int64_t asked_ns_ = 0;  // CLOCK_BOOTTIME of the last ask
};

}  // namespace ebb::cluster
