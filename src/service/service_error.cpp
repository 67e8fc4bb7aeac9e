#include "ebb/service/service_error.hpp"

namespace ebb::service {

int http_status(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::invalid: return 400;
    case ErrorKind::not_found: return 404;
    case ErrorKind::conflict: return 409;
    case ErrorKind::too_large: return 413;
    case ErrorKind::unprocessable: return 422;
    case ErrorKind::overloaded: return 429;
    case ErrorKind::unavailable: return 503;
    case ErrorKind::insufficient_storage: return 507;
    case ErrorKind::not_implemented: return 501;
  }
  return 500;
}

ServiceError partitions_missing(std::span<const std::uint32_t> missing, const std::string& consequence) {
  std::string which;
  for (const auto p : missing) which.append(which.empty() ? "" : ", ").append(std::to_string(p));
  return {ErrorKind::unavailable, "partition_unavailable", "partition " + which + " did not answer in time (no owner, or an owner behind): " + consequence};
}

}  // namespace ebb::service
