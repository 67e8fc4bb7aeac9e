// The service's history thread belongs to the service: destroyed without a
// shutdown (an error path), it stops and joins like the checkpoint thread.
#include <gtest/gtest.h>

#include "ebb/service/service.hpp"
#include "support/ebb_server.hpp"
#include "support/quiet_logger.hpp"

namespace ebb::service {
namespace {

TEST(ServiceHistory, AServiceDestroyedWithoutAShutdownStopsItsHistoryThread) {
  const auto dir = testing::make_temp_dir("ebb-service-history");
  {
    ServiceOptions o;
    o.data_dir = dir;
    o.history_interval = 0.01;
    Service service(o, testing::quiet_logger());
    (void)service.recover();
    service.start_checkpoints();
    service.start_history();
    EXPECT_EQ(service.snapshot_history(), 0u);  // nothing counted yet: nothing to write
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "history.sqlite3"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb::service
