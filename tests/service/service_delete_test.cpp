// A delete logs and marks its namespace under the namespace's lock, then
// takes it out of the map (Service::remove): from the mark on it is not
// found, not listed, not counted against --max-namespaces and its memory is
// back in the budget, and a create of its name may replace it before it
// leaves the map. Whatever the interleaving, the log must order a name's
// creates, batches and deletes as the map did: a restart gives back exactly
// the state before it.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "ebb/core/clock.hpp"
#include "ebb/service/service.hpp"
#include "support/ebb_server.hpp"
#include "support/quiet_logger.hpp"

namespace ebb::service {
namespace {

class ServiceDelete : public ::testing::Test {
 protected:
  void SetUp() override { open(); }
  void TearDown() override {
    close();
    std::filesystem::remove_all(dir_);
  }
  void open() {
    ServiceOptions o;
    o.data_dir = dir_;
    o.limits.max_namespaces = 3;
    service_.emplace(o, testing::quiet_logger());
    (void)service_->recover();
  }
  void close() {
    if (!service_) return;
    service_->shutdown();
    service_.reset();
  }
  Service& service() { return *service_; }

  void make(const std::string& name) { service().create(parse_namespace_spec(R"({"name":")" + name + R"(","k":10})", service().limits())); }
  void add(std::string_view ns, double weight) {
    const engine::Event events[] = {{"a", now_, weight}};
    IngestRequest req;
    req.events = events;
    req.namespaces = std::span(&ns, 1);
    req.received_at = now_;
    (void)service().ingest(req);
  }
  double count_of_a(const std::string& ns) { return service().count(ns, "a", std::nullopt).item.upper; }
  ErrorKind refusal(const std::function<void()>& call) {
    try {
      call();
    } catch (const ServiceError& e) {
      return e.kind();
    }
    ADD_FAILURE() << "not refused";
    return ErrorKind::invalid;
  }

  const double now_ = wall_clock_now();

 private:
  std::filesystem::path dir_ = testing::make_temp_dir("ebb-service-delete");
  std::optional<Service> service_;
};

TEST_F(ServiceDelete, ADeletedNamespaceGivesBackItsSlotAndItsMemory) {
  make("a");
  make("b");
  const std::uint64_t two = service().metrics().memory_reserved;
  make("c");
  EXPECT_EQ(refusal([&] { make("d"); }), ErrorKind::invalid);  // the limit of 3
  service().remove("c");
  EXPECT_EQ(service().metrics().memory_reserved, two);
  EXPECT_EQ(service().size(), 2u);
  for (int i = 0; i < 50; ++i) {
    make("d");
    service().remove("d");
  }
  EXPECT_EQ(service().metrics().memory_reserved, two);
  make("d");
  EXPECT_EQ(service().size(), 3u);
  EXPECT_EQ(refusal([&] { service().remove("c"); }), ErrorKind::not_found);  // deleted already
  EXPECT_EQ(refusal([&] { (void)count_of_a("c"); }), ErrorKind::not_found);
  EXPECT_FALSE(service().exists("c"));
}

TEST_F(ServiceDelete, ANameMadeAgainStartsAfreshAndStaysSoAfterARestart) {
  make("a");
  add("a", 5);
  service().remove("a");
  make("a");
  add("a", 2);
  EXPECT_EQ(count_of_a("a"), 2);
  close();
  open();
  EXPECT_EQ(count_of_a("a"), 2);
  EXPECT_EQ(service().size(), 1u);
}

// Batches, deletes and creates of one name from three threads, lookups
// from a fourth and a steady namespace beside them: after a restart, every count and the memory
// reserved are what they were before it.
TEST_F(ServiceDelete, DeletesCreatesAndBatchesOfOneNameRacingReplayAsTheyRan) {
  make("x");
  make("steady");
  std::atomic<bool> stop{false};
  std::atomic<int> steady_batches{0}, deletes{0}, creates{0};
  std::thread writer([&] {
    for (int i = 0; i < 3000; ++i) {
      try {
        add("x", 1);
      } catch (const ServiceError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::not_found) << e.what();
      }
      add("steady", 1);
      ++steady_batches;
    }
    stop = true;
  });
  std::thread deleter([&] {
    while (!stop) {
      try {
        service().remove("x");
        ++deletes;
      } catch (const ServiceError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::not_found) << e.what();
      }
    }
  });
  std::thread creator([&] {
    while (!stop) {
      try {
        make("x");
        ++creates;
      } catch (const ServiceError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::conflict) << e.what();
      }
    }
  });
  // Lookups all along: a delete then waits a while for the map's lock
  // with its namespace marked, and creates of the name meet it there.
  std::thread reader([&] {
    while (!stop) (void)service().exists("steady");
  });
  writer.join();
  deleter.join();
  creator.join();
  reader.join();
  EXPECT_GT(deletes.load(), 0);
  EXPECT_GT(creates.load(), 0);

  const bool has_x = service().exists("x");
  const double x = has_x ? count_of_a("x") : 0;
  const std::uint64_t reserved = service().metrics().memory_reserved;
  const std::size_t size = service().size();
  EXPECT_EQ(size, has_x ? 2u : 1u);
  EXPECT_EQ(count_of_a("steady"), steady_batches.load());
  close();
  open();
  EXPECT_EQ(service().exists("x"), has_x);
  if (has_x) {
    EXPECT_EQ(count_of_a("x"), x);
  }
  EXPECT_EQ(count_of_a("steady"), 3000);
  EXPECT_EQ(service().metrics().memory_reserved, reserved);
  EXPECT_EQ(service().size(), size);
}

}  // namespace
}  // namespace ebb::service
