// A logger that writes nowhere, for tests that build a Service (or a
// cluster part) in process and assert on what it returns, not on its log.
#pragma once

#include <memory>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

namespace ebb::testing {

inline std::shared_ptr<spdlog::logger> quiet_logger() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

}  // namespace ebb::testing
