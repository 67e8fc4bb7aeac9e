// The distribution increment's log record (type 5): an exact increment is
// the bytes it always was; a Poisson one adds a trailing decay byte; a bad
// one is refused.
#include <gtest/gtest.h>

#include "ebb/core/error.hpp"
#include "ebb/service/log_records.hpp"

namespace ebb::service {
namespace {

TEST(DistributionLogRecord, RoundTripsWithItsDecay) {
  DistributionIncrRecord r{1.7e9, "link:abc", 2.5, 0.001, {"US", "DE"}};
  std::string exact;
  encode_distribution_incr(exact, r);
  // type, received_at, "link:abc", n, rate, 2 fields: nothing more.
  EXPECT_EQ(exact.size(), 1 + 8 + (4 + 8) + 8 + 8 + 4 + (4 + 2) * 2u);
  auto back = decode_distribution_incr(exact);
  EXPECT_EQ(back.decay, engine::DistributionDecay::exact);
  EXPECT_EQ(back.distribution, "link:abc");
  EXPECT_EQ(back.fields, (std::vector<std::string_view>{"US", "DE"}));
  EXPECT_EQ(back.n, 2.5);
  EXPECT_EQ(back.rate, 0.001);

  r.decay = engine::DistributionDecay::poisson;
  std::string poisson;
  encode_distribution_incr(poisson, r);
  EXPECT_EQ(poisson, exact + '\x01');
  EXPECT_EQ(decode_distribution_incr(poisson).decay, engine::DistributionDecay::poisson);

  EXPECT_THROW(decode_distribution_incr(exact + '\x02'), FormatError);
  EXPECT_THROW(decode_distribution_incr(poisson + '\x01'), FormatError);
  EXPECT_THROW(decode_distribution_incr(exact.substr(0, exact.size() - 1)), FormatError);
}

}  // namespace
}  // namespace ebb::service
