#pragma once
// A namespace as the API describes it (POST /namespaces, ../shared/notes/api.md)
// and its mapping to the engine's configuration. Parsing is strict: unknown
// fields, wrong types and out-of-range values are 400s naming the field.
#include <optional>
#include <string>
#include <string_view>

#include "ebb/engine/namespace.hpp"
#include "ebb/service/limits.hpp"

namespace ebb::service {

struct NamespaceSpec {
  engine::NamespaceConfig config;  // name, k, views, sketch, exclude, clock, hot keys ...
};

// Where a configuration comes from: a request is held to the server's
// creation limits; a stored one (checkpoint, log) loads whatever they are now.
enum class SpecSource { request, stored };

// POST /namespaces body -> spec. Throws ServiceError (invalid) ("k: must be ...").
NamespaceSpec parse_namespace_spec(std::string_view json, const ServiceLimits& limits, SpecSource source = SpecSource::request);

// PATCH body: k, hot_key_threshold (null clears), hot_key_half_life, exclude, max_event_age and
// max_time_jump (null: no guard). Returns the
// patched spec; nothing is changed on error.
NamespaceSpec patch_namespace_spec(const NamespaceSpec& current, std::string_view json, const ServiceLimits& limits);

// The resolved configuration (201, GET): what the server actually keeps,
// with the accuracy those dimensions give. for_storage leaves out the
// derived fields so the text parses back with parse_namespace_spec().
std::string write_namespace_spec(const NamespaceSpec& spec, bool for_storage);

// Same, with "stats" (GET /namespaces[/{name}]).
std::string write_namespace_with_stats(const NamespaceSpec& spec, const engine::NamespaceStats& stats, std::uint64_t ingest_bytes);

}  // namespace ebb::service
