// Identical questions at once share one fan-out, never one begun before
// they were asked (cluster/shared_fan_outs.hpp).
#include "ebb/cluster/shared_fan_outs.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ebb::cluster {
namespace {

// Lets a held fan-out end, at the latest when the test does (a failed
// assertion must not leave it waiting: the test would never end).
struct Gate {
  std::promise<void> promise;
  std::shared_future<void> opened = promise.get_future().share();
  bool open_ = false;
  void open() {
    if (!open_) promise.set_value();
    open_ = true;
  }
  ~Gate() { open(); }
};
// (Declared after the futures that wait on it: it opens before they join.)

// Polls until `done` (a few seconds at most; the test fails past that).
template <class Done>
bool eventually(Done done) {
  for (int i = 0; i < 5000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done();
}

// A fan-out of "q" answering 1, begun and held open until `gate` opens.
std::future<int> held_fan_out(SharedFanOuts<int>& flights, Gate& gate, const std::string& question = "q") {
  const auto before = flights.fan_outs();
  auto f = std::async(std::launch::async, [&flights, opened = gate.opened, question] {
    return flights.run(question, [&] {
      opened.wait();
      return 1;
    });
  });
  EXPECT_TRUE(eventually([&] { return flights.fan_outs() > before; }));
  return f;
}

// A fan-out under way answers only who asked before it began: five askers
// arriving meanwhile wait for the next one, which they share.
TEST(SharedFanOuts, AskersArrivingDuringAFanOutShareTheNextOne) {
  SharedFanOuts<int> flights{std::chrono::hours(1)};  // (the next waits for the first, however long)
  std::atomic<int> second_runs{0};
  std::future<int> first;
  std::vector<std::future<int>> later;
  Gate gate;
  first = held_fan_out(flights, gate);
  for (int i = 0; i < 5; ++i) {
    later.push_back(std::async(std::launch::async, [&] {
      return flights.run("q", [&] {
        ++second_runs;
        return 2;
      });
    }));
  }
  ASSERT_TRUE(eventually([&] { return flights.riders("q") == 4; }));  // (the fifth leads the next fan-out)
  EXPECT_EQ(flights.fan_outs(), 1u);  // the next waits for the first to end
  gate.open();
  EXPECT_EQ(first.get(), 1);
  for (auto& f : later) EXPECT_EQ(f.get(), 2);
  EXPECT_EQ(second_runs.load(), 1);
  EXPECT_EQ(flights.fan_outs(), 2u);
  EXPECT_EQ(flights.shared(), 4u);
}

TEST(SharedFanOuts, OtherQuestionsDoNotWaitNorShare) {
  SharedFanOuts<int> flights;
  std::future<int> a;
  Gate gate;
  a = held_fan_out(flights, gate, "a");
  EXPECT_EQ(flights.run("b", [] { return 2; }), 2);  // while "a" is under way
  gate.open();
  EXPECT_EQ(a.get(), 1);
  EXPECT_EQ(flights.fan_outs(), 2u);
  EXPECT_EQ(flights.shared(), 0u);
}

// A fan-out held past the hold (a partition not answering) does not hold
// the next question's: it begins, and answers, while the first is still
// under way; the one after shares nothing begun before it either.
TEST(SharedFanOuts, AFanOutHeldPastTheHoldDoesNotHoldTheNext) {
  SharedFanOuts<int> flights{std::chrono::milliseconds(0)};
  std::future<int> first;
  Gate gate;
  first = held_fan_out(flights, gate);
  EXPECT_EQ(flights.run("q", [] { return 2; }), 2);  // (the first still held)
  EXPECT_EQ(flights.run("q", [] { return 3; }), 3);
  EXPECT_EQ(flights.fan_outs(), 3u);
  gate.open();
  EXPECT_EQ(first.get(), 1);
}

// A fan-out that fails fails for every asker that shared it; the next
// question fans out again.
TEST(SharedFanOuts, AFailureReachesEveryAskerAndIsNotKept) {
  SharedFanOuts<int> flights{std::chrono::hours(1)};
  std::future<int> first;
  std::vector<std::future<int>> later;
  Gate gate;
  first = held_fan_out(flights, gate);
  auto failing = []() -> int { throw std::runtime_error("partition 3: no answer"); };
  for (int i = 0; i < 3; ++i) later.push_back(std::async(std::launch::async, [&] { return flights.run("q", failing); }));
  ASSERT_TRUE(eventually([&] { return flights.riders("q") == 2; }));
  gate.open();
  EXPECT_EQ(first.get(), 1);
  for (auto& f : later) EXPECT_THROW(f.get(), std::runtime_error);
  EXPECT_EQ(flights.run("q", [] { return 3; }), 3);
  EXPECT_EQ(flights.fan_outs(), 3u);
}

}  // namespace
}  // namespace ebb::cluster
