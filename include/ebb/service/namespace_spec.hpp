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

// What a RESP command created a namespace as (TOPK.RESERVE, CMS.INITBY*):
// its Redis type, for TYPE and WRONGTYPE, and the arguments it was given,
// which TOPK.INFO and CMS.INFO echo as RedisBloom would (ebb's own shape,
// at least as large, is in the config). JSON: "redis": {"type": "topk",
// "k": 50, "width": 8, "depth": 7, "decay": 0.9} or {"type": "cms",
// "width": 2000, "depth": 7}.
struct RedisKey {
  enum class Type { topk, cms };
  Type type = Type::topk;
  std::uint64_t k = 0;  // topk only
  std::uint64_t width = 0, depth = 0;
  double decay = 0;  // topk only: HeavyKeeper's, accepted and echoed (ebb decays by time: half_lives)
  static constexpr std::uint64_t kMaxDimension = std::uint64_t{1} << 32;
};

struct NamespaceSpec {
  engine::NamespaceConfig config;  // name, k, views, sketch, exclude, clock, hot keys ...
  // None: created over HTTP; such a namespace answers TOPK.* and CMS.* alike.
  std::optional<RedisKey> redis;
};

// Where a configuration comes from: a request is held to the server's
// creation limits; a stored one (checkpoint, log) loads whatever they are now.
enum class SpecSource { request, stored };

// POST /namespaces body -> spec. Throws ServiceError (invalid) ("k: must be ...").
NamespaceSpec parse_namespace_spec(std::string_view json, const ServiceLimits& limits, SpecSource source = SpecSource::request);

// PATCH body: k, hot_key_threshold (null clears), hot_key_half_life, exclude, audit_sla, max_event_age and
// max_time_jump (null: no guard). Returns the
// patched spec; nothing is changed on error.
NamespaceSpec patch_namespace_spec(const NamespaceSpec& current, std::string_view json, const ServiceLimits& limits);
// A configuration's sketches against --max-namespace-bytes: ServiceError
// invalid_field naming `field` (a resize checks its new width so).
void check_namespace_sketch_bytes(const engine::NamespaceConfig& config, const ServiceLimits& limits, const std::string& field);

// The resolved configuration (201, GET): what the server actually keeps,
// with the accuracy those dimensions give. for_storage leaves out the
// derived fields so the text parses back with parse_namespace_spec().
std::string write_namespace_spec(const NamespaceSpec& spec, bool for_storage);

// Same, with "stats" (GET /namespaces[/{name}]).
// (With a coverage of some partitions, cluster mode's: the "cluster" block
// saying which partitions' counts the stats leave out.)
std::string write_namespace_with_stats(const NamespaceSpec& spec, const engine::NamespaceStats& stats, std::uint64_t ingest_bytes,
                                       const engine::Coverage& coverage = {});

}  // namespace ebb::service
