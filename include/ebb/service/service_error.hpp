#pragma once
// A request the service refuses: a kind (what a front end maps to an HTTP
// status or a RESP error), a stable snake_case code and a message that says
// what and where ("events[3].weight: must be > 0").
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace ebb::service {

enum class ErrorKind {
  invalid,               // 400: the request is wrong
  not_found,             // 404
  conflict,              // 409: exists already
  too_large,             // 413: past a size limit
  unprocessable,         // 422: an idempotency key reused for another body
  overloaded,            // 429: queues full; retry after a moment
  unavailable,           // 503: cannot persist now (disk full, log failed) or not ready
  insufficient_storage,  // 507: past the memory budget
  not_implemented,       // 501: not served in this mode (cluster mode serves part of the API)
};

int http_status(ErrorKind kind) noexcept;

// The element of a request's list an error is about (events[3].weight,
// item_ids[0]), for a front end that names it in its own words (RESP's
// "item 4", counted from 1 among the command's items).
struct ErrorElement {
  std::size_t index = 0;  // in the list the service was given
  std::string field;      // within the element ("weight"); "" for the element itself
  std::string problem;    // what is wrong, without index or field: "must be > 0"
};

class ServiceError : public std::runtime_error {
 public:
  ServiceError(ErrorKind kind, std::string code, const std::string& message)
      : std::runtime_error(message), kind_(kind), code_(std::move(code)) {}
  ServiceError(ErrorKind kind, std::string code, const std::string& message, ErrorElement element)
      : std::runtime_error(message), kind_(kind), code_(std::move(code)), element_(std::move(element)) {}
  ErrorKind kind() const noexcept { return kind_; }
  const std::string& code() const noexcept { return code_; }
  // Set when the error is about one element of the request's list.
  const std::optional<ErrorElement>& element() const noexcept { return element_; }

 private:
  ErrorKind kind_;
  std::string code_;
  std::optional<ErrorElement> element_;
};

inline ServiceError invalid(const std::string& code, const std::string& message) { return {ErrorKind::invalid, code, message}; }

// Cluster mode: the partitions an answer needs and did not get, as
// unavailable "partition_unavailable": "partition 3, 5 did not answer in
// time (no owner, or an owner behind): <consequence>".
ServiceError partitions_missing(std::span<const std::uint32_t> missing, const std::string& consequence);

}  // namespace ebb::service
