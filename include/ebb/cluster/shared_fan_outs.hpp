#pragma once
// Identical questions asked at once share one fan-out to the partitions
// (ClusterNode::top): at 10k top-k queries a second the fan-outs, not the
// answers, are the cost (docs/cluster.md, "Paper model").
//
// Queries read their writes: a fan-out takes the log's position when it
// begins, so a question may share only a fan-out that has not begun yet.
// One arriving while the same question's fan-out is under way waits for
// the next one, which begins once that one ends (or kMaxHold has passed),
// for every question that arrived meanwhile: each answering all who came
// before it began.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace ebb::cluster {

template <class Answer>
class SharedFanOuts {
 public:
  // How long a question waits for the same question's fan-out under way
  // to end before it begins its own anyway: a fan-out slowed by a
  // partition that does not answer (its whole deadline) must not make the
  // next one's askers wait for two deadlines. A healthy fan-out takes a
  // few milliseconds.
  static constexpr std::chrono::milliseconds kMaxHold{25};

  explicit SharedFanOuts(std::chrono::milliseconds max_hold = kMaxHold) : max_hold_(max_hold) {}

  // The answer of a fan_out() begun after this call (this one's, or that
  // of an identical question's asked meanwhile); its exception, if it threw.
  template <class FanOut>
  Answer run(const std::string& question, FanOut&& fan_out) {
    std::unique_lock lock(mu_);
    if (const auto it = waiting_.find(question); it != waiting_.end()) {
      const std::shared_ptr<Flight> flight = it->second;
      ++flight->riders;
      flight->cv.wait(lock, [&] { return flight->done; });
      ++shared_;
      if (flight->error) std::rethrow_exception(flight->error);
      return *flight->answer;
    }
    const auto flight = std::make_shared<Flight>();
    waiting_.emplace(question, flight);
    if (const auto it = running_.find(question); it != running_.end()) {
      const std::shared_ptr<Flight> before = it->second;
      before->cv.wait_for(lock, max_hold_, [&] { return before->done; });
    }
    auto node = waiting_.extract(question);  // (moves the entry: nothing to allocate, nothing to throw)
    running_.erase(question);  // (one held past max_hold_ is still under way: this one is the newest)
    running_.insert(std::move(node));
    ++fan_outs_;
    lock.unlock();
    try {
      flight->answer.emplace(fan_out());
    } catch (...) {
      flight->error = std::current_exception();
    }
    lock.lock();
    if (const auto it = running_.find(question); it != running_.end() && it->second == flight) running_.erase(it);
    flight->done = true;
    flight->cv.notify_all();
    if (flight->error) std::rethrow_exception(flight->error);
    return *flight->answer;
  }

  // Fan-outs begun, and answers given from another question's fan-out.
  std::uint64_t fan_outs() const {
    std::lock_guard lock(mu_);
    return fan_outs_;
  }
  std::uint64_t shared() const {
    std::lock_guard lock(mu_);
    return shared_;
  }
  // Questions waiting for `question`'s next fan-out besides its first
  // asker (tests).
  std::size_t riders(const std::string& question) const {
    std::lock_guard lock(mu_);
    const auto it = waiting_.find(question);
    return it == waiting_.end() ? 0 : it->second->riders;
  }

 private:
  struct Flight {
    bool done = false;
    std::size_t riders = 0;
    std::optional<Answer> answer;  // (written before done, read after)
    std::exception_ptr error;
    std::condition_variable cv;    // (under mu_) its riders, and the next flight's first asker
  };
  const std::chrono::milliseconds max_hold_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Flight>> waiting_;  // not begun: open to riders
  std::map<std::string, std::shared_ptr<Flight>> running_;  // begun: closed
  std::uint64_t fan_outs_ = 0, shared_ = 0;
};

}  // namespace ebb::cluster
