#include "ebb/decay/forward_decay.hpp"

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"

namespace ebb {

ForwardDecay ForwardDecay::with_half_life(double half_life_seconds) {
  if (std::isnan(half_life_seconds) || half_life_seconds <= 0) {
    throw InvalidArgument("half-life must be > 0 seconds (got " + std::to_string(half_life_seconds) + ")");
  }
  return ForwardDecay(std::isinf(half_life_seconds) ? 0.0 : std::log(2.0) / half_life_seconds);
}

ForwardDecay ForwardDecay::with_rate(double lambda) {
  if (!(std::isfinite(lambda) && lambda >= 0)) throw InvalidArgument("decay rate must be a finite number >= 0 per second (got " + std::to_string(lambda) + ")");
  return ForwardDecay(lambda);
}

double ForwardDecay::half_life() const noexcept {
  return lambda_ == 0 ? std::numeric_limits<double>::infinity() : std::log(2.0) / lambda_;
}

std::string ForwardDecay::serialize() const {
  BinaryWriter w;
  w.put<double>(lambda_);
  w.put<double>(landmark_);
  w.put<std::uint8_t>(anchored_ ? 1 : 0);
  return seal_blob(BlobKind::forward_decay, 1, w.buffer());
}

ForwardDecay ForwardDecay::deserialize(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::forward_decay, 1);
  BinaryReader r(opened.payload, "forward-decay clock");
  const double lambda = r.get<double>();
  const double landmark = r.get<double>();
  const auto anchored = r.get<std::uint8_t>();
  r.expect_end();
  if (!std::isfinite(lambda) || lambda < 0) r.fail("bad decay rate");
  if (!std::isfinite(landmark)) r.fail("bad landmark");
  if (anchored > 1) r.fail("bad anchored flag");
  ForwardDecay d(lambda);
  d.landmark_ = landmark;
  d.anchored_ = anchored == 1;
  return d;
}

}  // namespace ebb
