// A merge marks every namespace it involves as held long (Service::held_long)
// from before it takes their locks until it has let them go, on success and
// on refusal alike: front ends send a request to such a namespace off their
// event loop rather than wait the merge out there.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "ebb/service/service.hpp"
#include "support/quiet_logger.hpp"

namespace ebb::service {
namespace {

TEST(MergeHold, AMergeHoldsItsNamespacesUntilItIsDoneAndNoOthers) {
  Service s(ServiceOptions{}, testing::quiet_logger());
  (void)s.recover();
  // A million columns by eight: a merge long enough to be seen under way.
  for (const char* name : {"a", "b", "d"}) {
    s.create(parse_namespace_spec(std::string(R"({"name":")") + name + R"(","k":10,"sketch_width":1048576,"sketch_depth":8})", s.limits()));
  }
  s.create(parse_namespace_spec(R"({"name":"other","k":10})", s.limits()));
  for (const char* name : {"a", "b", "d", "other", "missing"}) EXPECT_FALSE(s.held_long(name)) << name;

  const std::vector<std::string> sources = {"a", "b"};
  const std::vector<double> weights = {1, 1};
  std::atomic<bool> done{false};
  std::thread merging([&] {
    s.merge("d", sources, weights, std::nullopt);
    done = true;
  });
  bool seen_d = false, seen_a = false, seen_b = false, seen_other = false;
  while (!done) {
    seen_d |= s.held_long("d");
    seen_a |= s.held_long("a");
    seen_b |= s.held_long("b");
    seen_other |= s.held_long("other");
  }
  merging.join();
  EXPECT_TRUE(seen_d);
  EXPECT_TRUE(seen_a);
  EXPECT_TRUE(seen_b);
  EXPECT_FALSE(seen_other);
  for (const char* name : {"a", "b", "d"}) EXPECT_FALSE(s.held_long(name)) << name;

  // Refused (the shapes differ): let go all the same.
  const std::vector<std::string> unlike = {"other"};
  EXPECT_THROW(s.merge("d", unlike, std::vector<double>{1}, std::nullopt), ServiceError);
  EXPECT_FALSE(s.held_long("d"));
  EXPECT_FALSE(s.held_long("other"));
}

}  // namespace
}  // namespace ebb::service
