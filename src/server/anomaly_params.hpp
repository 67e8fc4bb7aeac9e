#pragma once
// GET /anomalies' parameters, which GET /hot-keys/stream takes too (its
// `anomaly` events), parsed with errors that name the parameter.
#include "ebb/server/http_types.hpp"
#include "ebb/service/service.hpp"

namespace ebb::server {

// window=DUR, baseline=DUR | baseline_offset=DUR, k, min_jump,
// min_rank_jump, min_score, min_count, timestamp. `window` must be given
// (400 bad_parameter otherwise); the service checks them against the
// namespace.
service::AnomalyRequest anomaly_request_from(const Request& req);

}  // namespace ebb::server
