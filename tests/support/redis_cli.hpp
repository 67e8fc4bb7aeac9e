#pragma once
// Talking RESP in tests: redis-cli itself (what users run) and the bytes a
// client library sends for a command (for pipelines over a RawConnection).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/run_process.hpp"

namespace ebb::testing {

// redis-cli's formatted output (--no-raw: types shown) for one command.
inline std::string redis_cli(unsigned short port, std::vector<std::string> args, const std::vector<std::string>& options = {}) {
  std::vector<std::string> argv = {"/usr/bin/redis-cli", "--no-raw", "-p", std::to_string(port)};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = run_process(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// A RESP command as a client library sends it.
inline std::string resp_command(const std::vector<std::string>& args) {
  // (Appended piece by piece: g++ 12 -O3 warns -Wrestrict on "*" + std::string.)
  std::string out(1, '*');
  out.append(std::to_string(args.size())).append("\r\n");
  for (const auto& a : args) out.append(1, '$').append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
  return out;
}

}  // namespace ebb::testing
