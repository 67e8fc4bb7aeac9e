#pragma once
// The server's explicit limits, all configurable with `ebb serve` flags and
// documented in docs/api.md. Exceeding one is a 413 (body, batch) or a 400
// naming the field.
#include <cstddef>
#include <cstdint>

namespace ebb::service {

struct ServiceLimits {
  std::size_t max_body_bytes = 16u << 20;        // a request body (413)
  std::size_t max_batch_events = 100'000;        // events in one POST /events, ids in one POST /counts (413)
  std::size_t max_user_items = 1000;             // a user's items in one POST /top-k/personalised (413)
  std::uint32_t max_item_bytes = 1024;           // one item_id (400)
  std::size_t max_namespaces = 1000;             // namespaces on the server (400 on create)
  std::size_t max_namespace_bytes = 1u << 30;    // sketch memory of one namespace, all views (400 on create)
  std::size_t max_views = 8;                     // windows + half_lives of one namespace
  std::size_t max_exclude = 10'000;              // exclusion list entries
  double default_max_future_skew = 60;           // seconds, for wall-clock namespaces
  double default_max_event_age = 7 * 86400.0;    // seconds; a new namespace's max_event_age
  double default_max_time_jump = 86400.0;        // seconds; a new event-clock namespace's max_time_jump
  std::uint64_t max_memory = 0;                  // all namespaces' planned memory (507 on create); 0 = no budget
  std::size_t max_inflight_batches = 4096;       // batches waiting for their fsync (429 beyond)
  double idempotency_window = 3600;              // seconds an Idempotency-Key is remembered
  std::size_t max_idempotency_keys = 1'000'000;  // keys remembered at most (oldest forgotten first)
  std::size_t max_idempotency_key_bytes = 256;   // one Idempotency-Key (400 beyond)
  std::size_t max_hot_key_streams = 1000;        // open GET /hot-keys/stream subscriptions, all namespaces (429 beyond)
  std::uint64_t max_distribution_bins = 64'000'000;  // all distributions' bins together (507 on an /incr past it)
};

}  // namespace ebb::service
