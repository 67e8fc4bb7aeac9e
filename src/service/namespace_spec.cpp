#include "ebb/service/namespace_spec.hpp"

#include <simdjson.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <set>

#include "ebb/core/byte_size.hpp"
#include "ebb/service/answer_json.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"
#include "ebb/engine/decayed_view.hpp"
#include "ebb/engine/exact_table.hpp"
#include "ebb/engine/view_factory.hpp"
#include "ebb/io/json_members.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/service/service_error.hpp"

namespace ebb::service {
namespace {


using simdjson::dom::element;

constexpr double kMinHalfLife = 1;
constexpr double kMaxHalfLife = 36500.0 * 86400;

[[noreturn]] void bad(const std::string& field, const std::string& why) { throw invalid("invalid_field", field + ": " + why); }

element parse_object(simdjson::dom::parser& parser, std::string_view json) {
  element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc)) {
    throw invalid("invalid_json", std::string("request body is not valid JSON: ") + simdjson::error_message(err));
  }
  if (!doc.is_object()) throw invalid("invalid_json", "request body must be a JSON object");
  return doc;
}

std::uint64_t get_uint(element v, const std::string& field, std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t n;
  if (v.is_uint64()) {
    n = v.get_uint64().value_unsafe();
  } else if (v.is_double() && std::floor(v.get_double().value_unsafe()) == v.get_double().value_unsafe() &&
             v.get_double().value_unsafe() >= 0 && v.get_double().value_unsafe() < 1.8e19) {
    n = static_cast<std::uint64_t>(v.get_double().value_unsafe());
  } else {
    bad(field, "must be a whole number");
  }
  if (n < lo || n > hi) bad(field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + std::to_string(n) + ")");
  return n;
}

// The sketches' bytes against --max-namespace-bytes: `field` is named
// (or, when empty, the larger part's: window_sketch_width or `view_field`).
void check_sketch_bytes(const engine::NamespaceConfig& c, const ServiceLimits& limits, const std::string& field,
                        const std::string& view_field = "sketch_width") {
  const std::size_t views = c.counting == engine::Counting::exact ? 0 : (c.all_time ? 1 : 0) + c.half_lives.size();
  const std::size_t view_bytes = c.sketch.counter_bytes() * views;
  const std::size_t window_bytes = engine::window_bytes_max(c);
  if (view_bytes + window_bytes > limits.max_namespace_bytes) {
    bad(!field.empty() ? field : window_bytes > view_bytes ? "window_sketch_width" : view_field,
        "the namespace would need " + std::to_string((view_bytes + window_bytes) >> 20) + " MiB of sketches (" + std::to_string(views) +
            " views, " + std::to_string(window_bytes >> 20) + " MiB of window buckets), over the limit of " +
            std::to_string(limits.max_namespace_bytes >> 20) + " MiB");
  }
}

// Whether a namespace's sketches can be widened at run time (PATCH of a
// width, or audit_resize): sketch counting without a memory budget.
void check_resizable(const engine::NamespaceConfig& c, const std::string& field) {
  if (c.counting != engine::Counting::sketch) bad(field, "this namespace counts exactly: it has no sketch to widen");
  // (Its windows' buckets are not: window_sketch_width sizes those.)
  if (c.memory != 0 && field != "window_sketch_width") bad(field, "this namespace is sized by memory (fixed at creation)");
  if (field == "audit_resize" && !engine::AccuracyAudit::enabled(c)) {
    bad(field, "needs an accuracy audit, which this namespace has not (audit_sample and audit_top are 0, fixed at creation)");
  }
}

bool get_bool(element v, const std::string& field) {
  if (!v.is_bool()) bad(field, "must be true or false");
  return v.get_bool().value_unsafe();
}

double get_number(element v, const std::string& field) {
  if (!v.is_number()) bad(field, "must be a number");
  const double d = v.get_double().value_unsafe();
  if (!std::isfinite(d)) bad(field, "must be finite");
  return d;
}


std::string get_string(element v, const std::string& field) {
  if (!v.is_string()) bad(field, "must be a string");
  return std::string(v.get_string().value_unsafe());
}

RedisKey get_redis_key(element v) {
  if (!v.is_object()) bad("redis", "must be an object such as {\"type\": \"topk\", \"k\": 50, \"width\": 8, \"depth\": 7, \"decay\": 0.9}");
  RedisKey r;
  std::optional<std::string> type;
  std::optional<std::uint64_t> k, width, depth;
  std::optional<double> decay;
  const simdjson::dom::object members = v.get_object().value_unsafe();
  io::JsonMembers named;
  for (auto [key, value] : members) {
    const std::string field = "redis." + std::string(key);
    if (!named.first(key)) bad(message_text(field), "is given twice");
    if (key == "type") type = get_string(value, field);
    else if (key == "k") k = get_uint(value, field, 1, RedisKey::kMaxDimension);
    else if (key == "width") width = get_uint(value, field, 1, RedisKey::kMaxDimension);
    else if (key == "depth") depth = get_uint(value, field, 1, RedisKey::kMaxDimension);
    else if (key == "decay") decay = get_number(value, field);
    else bad(message_text(field), "unknown field (type, k, width, depth, decay)");
  }
  if (type == "topk") {
    if (!k || !width || !depth || !decay) bad("redis", "a topk key has k, width, depth and decay");
    if (!(*decay > 0 && *decay <= 1)) bad("redis.decay", "must be in (0, 1]");
    r.type = RedisKey::Type::topk;
    r.k = *k;
    r.decay = *decay;
  } else if (type == "cms") {
    if (k || decay || !width || !depth) bad("redis", "a cms key has width and depth only");
    r.type = RedisKey::Type::cms;
  } else {
    bad("redis.type", "must be \"topk\" or \"cms\"");
  }
  r.width = *width;
  r.depth = *depth;
  return r;
}

std::vector<std::string> get_strings(element v, const std::string& field, std::size_t max_entries) {
  if (!v.is_array()) bad(field, "must be an array of strings");
  std::vector<std::string> out;
  const simdjson::dom::array entries = v.get_array().value_unsafe();
  for (element e : entries) {
    if (!e.is_string()) bad(field, "entry " + std::to_string(out.size()) + " must be a string");
    out.emplace_back(e.get_string().value_unsafe());
    if (out.size() > max_entries) bad(field, "has more than " + std::to_string(max_entries) + " entries");
  }
  return out;
}

double get_duration(const std::string& text, const std::string& field) {
  try {
    return parse_duration(text);
  } catch (const InvalidArgument& e) {
    bad(field, e.what());
  }
}

std::vector<std::string> get_exclude(element v, const engine::NamespaceConfig& c, const ServiceLimits& limits) {
  auto items = get_strings(v, "exclude", limits.max_exclude);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].empty() || items[i].size() > c.max_item_bytes) {
      bad("exclude", "entry " + std::to_string(i) + " must be 1 to " + std::to_string(c.max_item_bytes) + " bytes");
    }
  }
  return items;
}

// A time guard: a duration string, or null for none (stored as infinity).
double get_guard(element v, const std::string& field) {
  if (v.is_null()) return INFINITY;
  if (!v.is_string()) bad(field, "must be a duration string such as \"7d\", or null for no limit");
  return get_duration(std::string(v.get_string().value_unsafe()), field);
}

std::optional<double> get_threshold(element v) {
  if (v.is_null()) return std::nullopt;
  const double t = get_number(v, "hot_key_threshold");
  if (t <= 0) bad("hot_key_threshold", "must be > 0 events/s (or null for no detection)");
  return t;
}

// The audit's SLA: a share of a top item's count in (0, 1], or null for none.
std::optional<double> get_audit_sla(element v) {
  if (v.is_null()) return std::nullopt;
  const double sla = get_number(v, "audit_sla");
  if (!(sla > 0 && sla <= 1)) bad("audit_sla", "must be a share of a top item's count in (0, 1], e.g. 0.01 for 1% (or null for none)");
  return sla;
}

double get_hot_key_half_life(element v) {
  const std::string field = "hot_key_half_life";
  if (!v.is_string()) bad(field, "must be a duration string such as \"10s\"");
  const double h = get_duration(std::string(v.get_string().value_unsafe()), field);
  if (!(h >= engine::NamespaceConfig::kMinHotKeyHalfLife && h <= engine::NamespaceConfig::kMaxHotKeyHalfLife)) {
    bad(field, "must be in [1s, 1d] (got '" + message_text(v.get_string().value_unsafe()) + "')");
  }
  return h;
}


}  // namespace

NamespaceSpec parse_namespace_spec(std::string_view json, const ServiceLimits& request_limits, SpecSource source) {
  // A stored configuration was valid under the limits it was created with;
  // limits are for new requests, so it loads whatever they are now.
  const bool stored = source == SpecSource::stored;
  ServiceLimits limits = request_limits;
  if (stored) {
    limits.max_exclude = std::numeric_limits<std::size_t>::max();
    limits.max_views = std::numeric_limits<std::size_t>::max();
    limits.max_namespace_bytes = std::numeric_limits<std::size_t>::max();
    limits.max_item_bytes = 1u << 20;
  }
  bool has_max_item_bytes = false;
  simdjson::dom::parser parser;
  element doc = parse_object(parser, json);
  NamespaceSpec spec;
  engine::NamespaceConfig& c = spec.config;
  c.max_item_bytes = limits.max_item_bytes;
  c.max_future_skew = limits.default_max_future_skew;
  // Written before the guards existed: none (its log replays as it was
  // counted); a new namespace gets the server's defaults.
  c.max_event_age = stored ? INFINITY : limits.default_max_event_age;
  c.max_time_jump = stored ? INFINITY : limits.default_max_time_jump;
  // A stored configuration without the audit's fields predates it (or has
  // none: they are written only with one): no audit.
  if (stored) {
    c.audit_sample = 0;
    c.audit_top = 0;
    c.audit_sla = std::nullopt;
  }
  bool has_audit_sla = false;
  c.k = 100;
  c.all_time = false;
  bool has_name = false, has_windows = false;
  std::optional<std::uint64_t> width, depth;
  std::optional<double> epsilon, delta;
  static const std::set<std::string_view> kFields = {"name",    "k",       "windows",          "half_lives", "sketch_width",
                                                     "sketch_depth", "epsilon", "delta",         "hot_key_threshold", "hot_key_half_life",
                                                     "exclude", "counting", "clock",           "candidates", "summary",
                                                     "max_future_skew", "max_item_bytes", "max_event_age", "max_time_jump",
                                                     "window_sketch_width", "max_items", "memory", "redis",
                                                     "audit_sample", "audit_top", "audit_sla", "audit_resize"};
  // Fields that shape a sketch: refused for exact counting, which has none.
  static const std::set<std::string_view> kSketchFields = {"sketch_width", "sketch_depth", "epsilon", "delta",
                                                           "window_sketch_width", "candidates", "summary", "memory"};
  // What "memory" sizes itself: given with it, refused (a stored
  // configuration has both: its shape wins, so a later sizing rule never
  // changes the shape of a namespace's state).
  static const std::set<std::string_view> kSizedByMemory = {"sketch_width", "sketch_depth", "epsilon", "delta", "candidates"};
  std::string sized_field;  // the first of those given
  std::string sketch_field;  // the first sketch field given
  bool has_max_items = false;
  const simdjson::dom::object members = doc.get_object().value_unsafe();
  io::JsonMembers named;
  for (auto [key, value] : members) {
    const std::string field(key);
    if (!kFields.contains(key)) bad(message_text(field), "unknown field (see docs/api.md for the namespace fields)");
    if (!named.first(key)) bad(field, "is given twice");
    if (sketch_field.empty() && kSketchFields.contains(key)) sketch_field = field;
    if (sized_field.empty() && kSizedByMemory.contains(key)) sized_field = field;
    if (field == "name") {
      c.name = get_string(value, field);
      if (const auto problem = engine::namespace_name_problem(c.name)) bad("name", *problem);
      // URL parsers resolve these path segments (even as %2E), so no client
      // could reach /namespaces/.. (a stored one, from before, still loads).
      if (!stored && (c.name == "." || c.name == "..")) bad("name", "must not be '.' or '..' (URLs resolve them as path segments)");
      has_name = true;
    } else if (field == "k") {
      c.k = static_cast<std::uint32_t>(get_uint(value, field, 1, engine::NamespaceConfig::kMaxK));
    } else if (field == "windows") {
      has_windows = true;
      for (const auto& w : get_strings(value, field, limits.max_views)) {
        if (w == "all") {
          if (c.all_time) bad(field, "'all' is given twice");
          c.all_time = true;
          continue;
        }
        const double window = get_duration(w, field);
        if (!(window >= 1 && window <= engine::NamespaceConfig::kMaxWindow) || window != std::floor(window)) {
          bad(field, "'" + message_text(w) + "' must be a whole number of seconds in [1s, 366d]");
        }
        if (std::find(c.windows.begin(), c.windows.end(), window) != c.windows.end()) bad(field, "'" + message_text(w) + "' is given twice");
        c.windows.push_back(window);
      }
    } else if (field == "half_lives") {
      for (const auto& h : get_strings(value, field, limits.max_views)) {
        const double half_life = get_duration(h, field);
        // Shorter than a second forgets within milliseconds (and 1e-300s
        // reads 0 forever); longer than a century is the all-time view.
        if (!stored && (half_life < kMinHalfLife || half_life > kMaxHalfLife)) {
          bad(field, "'" + message_text(h) + "' is outside [1s, 36500d]; use windows: [\"all\"] for no decay");
        }
        c.half_lives.push_back(half_life);
      }
    } else if (field == "redis") {
      // Set by the Redis protocol's TOPK.RESERVE / CMS.INITBY*, kept with the
      // namespace; a request cannot claim it (INFO would echo a forgery).
      if (!stored) bad("redis", "is set by TOPK.RESERVE and CMS.INITBYDIM / INITBYPROB over the Redis protocol, not in a request");
      spec.redis = get_redis_key(value);
    } else if (field == "memory") {
      if (value.is_string()) {
        const std::string text(value.get_string().value_unsafe());
        try {
          c.memory = parse_byte_size(text);
        } catch (const InvalidArgument&) {
          bad(field, "must be a size such as \"128KiB\" or a number of bytes (got '" + message_text(text) + "')");
        }
      } else {
        c.memory = get_uint(value, field, 1, std::uint64_t{1} << 40);
      }
      if (c.memory == 0) bad(field, "must be a size above 0, e.g. \"128KiB\"");
    } else if (field == "window_sketch_width") {
      const auto ww = get_uint(value, field, CountMinShape::kMinWidth, CountMinShape::kMaxWidth);
      c.window_sketch_width = static_cast<std::uint32_t>(std::bit_ceil(ww));
    } else if (field == "sketch_width") {
      width = get_uint(value, field, CountMinShape::kMinWidth, CountMinShape::kMaxWidth);
    } else if (field == "sketch_depth") {
      depth = get_uint(value, field, 1, CountMinShape::kMaxDepth);
    } else if (field == "epsilon") {
      epsilon = get_number(value, field);
      if (!(*epsilon > 0 && *epsilon < 1)) bad(field, "must be in (0, 1)");
    } else if (field == "delta") {
      delta = get_number(value, field);
      if (!(*delta > 0 && *delta < 1)) bad(field, "must be in (0, 1)");
    } else if (field == "hot_key_threshold") {
      c.hot_key_threshold = get_threshold(value);
    } else if (field == "hot_key_half_life") {
      c.hot_key_half_life = get_hot_key_half_life(value);
    } else if (field == "audit_sample") {
      c.audit_sample = static_cast<std::uint32_t>(get_uint(value, field, 0, engine::NamespaceConfig::kMaxAuditSample));
    } else if (field == "audit_top") {
      c.audit_top = static_cast<std::uint32_t>(get_uint(value, field, 0, engine::NamespaceConfig::kMaxAuditTop));
    } else if (field == "audit_sla") {
      c.audit_sla = get_audit_sla(value);
      has_audit_sla = true;
    } else if (field == "audit_resize") {
      c.audit_resize = get_bool(value, field);
    } else if (field == "exclude") {
      c.exclude = get_exclude(value, c, limits);
    } else if (field == "counting") {
      const auto counting = get_string(value, field);
      if (counting == "exact") c.counting = engine::Counting::exact;
      else if (counting == "sketch") c.counting = engine::Counting::sketch;
      else bad(field, "must be \"sketch\" or \"exact\" (got '" + message_text(counting) + "')");
    } else if (field == "max_items") {
      c.max_items = get_uint(value, field, 1, engine::NamespaceConfig::kMaxItems);
      has_max_items = true;
    } else if (field == "clock") {
      const auto clock = get_string(value, field);
      if (clock == "wall") c.clock = engine::ClockMode::wall;
      else if (clock == "event") c.clock = engine::ClockMode::event;
      else bad(field, "must be \"wall\" or \"event\" (got '" + message_text(clock) + "')");
    } else if (field == "candidates") {
      c.candidates = static_cast<std::uint32_t>(get_uint(value, field, 1, 1u << 20));
    } else if (field == "summary") {
      const auto s = get_string(value, field);
      if (s == "candidate_heap") c.summary = engine::SummaryKind::candidate_heap;
      else if (s == "space_saving") c.summary = engine::SummaryKind::space_saving;
      else bad(field, "must be \"candidate_heap\" or \"space_saving\" (got '" + message_text(s) + "')");
    } else if (field == "max_item_bytes") {
      c.max_item_bytes = static_cast<std::uint32_t>(get_uint(value, field, 1, limits.max_item_bytes));
      has_max_item_bytes = true;
    } else if (field == "max_future_skew") {
      c.max_future_skew = get_duration(get_string(value, field), field);
    } else if (field == "max_event_age") {
      c.max_event_age = get_guard(value, field);
    } else if (field == "max_time_jump") {
      c.max_time_jump = get_guard(value, field);
    }
  }
  if (!has_name) bad("name", "is required");
  if (stored && !has_max_item_bytes) {
    // Written before the limit was stored: today's limit, or what its
    // exclusion list needs.
    c.max_item_bytes = request_limits.max_item_bytes;
    for (const auto& e : c.exclude) c.max_item_bytes = std::max<std::uint32_t>(c.max_item_bytes, static_cast<std::uint32_t>(e.size()));
  }
  if (!has_windows && c.half_lives.empty()) c.all_time = true;  // default view: all-time
  if (!c.all_time && c.half_lives.empty() && c.windows.empty()) bad("windows", "a namespace needs at least one view: \"all\", a window or a half-life");
  if ((c.all_time ? 1 : 0) + c.windows.size() + c.half_lives.size() > limits.max_views) {
    bad("half_lives", "at most " + std::to_string(limits.max_views) + " views (windows and half-lives) per namespace");
  }
  if ((width || depth) && (epsilon || delta)) bad("sketch_width", "give sketch_width/sketch_depth or epsilon/delta, not both");
  if (!engine::AccuracyAudit::enabled(c)) {
    // An SLA judges the audit's top items: none without an audit.
    if (has_audit_sla && c.audit_sla) bad("audit_sla", "needs an accuracy audit (audit_sample or audit_top above 0)");
    c.audit_sla = std::nullopt;
  }
  if (c.memory != 0 && !sized_field.empty() && !stored) {
    bad("memory", "sizes the sketch and the candidates itself: give memory or " + sized_field + ", not both");
  }
  try {
    if (epsilon || delta) {
      c.sketch = CountMinShape::for_error(epsilon.value_or(0.001), delta.value_or(0.0001));
    } else {
      // A width that is not a power of two is rounded up; the 201 shows the result.
      c.sketch = CountMinShape::with_dimensions(std::bit_ceil(width.value_or(1u << 16)), depth.value_or(4));
    }
  } catch (const InvalidArgument& e) {
    bad(epsilon || delta ? "epsilon" : "sketch_width", e.what());
  }
  if (c.memory != 0 && c.summary == engine::SummaryKind::space_saving) {
    bad("memory", "sizes the candidate heap (\"summary\": \"candidate_heap\"), not Space-Saving");
  }
  if (c.memory != 0 && !c.all_time && c.half_lives.empty()) {
    bad("memory", "sizes the all-time and decayed views, and this namespace keeps windows only (window_sketch_width sizes those)");
  }
  if (c.memory != 0 && sized_field.empty()) {
    try {
      const auto sizing = engine::DecayedView::fit_budget(c.memory, c.k);
      c.sketch = sizing.sketch;
      c.candidates = sizing.candidates;
    } catch (const InvalidArgument& e) {
      throw invalid("invalid_field", e.what());
    }
  }
  const bool exact = c.counting == engine::Counting::exact;
  if (exact && !sketch_field.empty()) bad(sketch_field, "does not apply to \"counting\": \"exact\" (exact records have no sketch; max_items bounds them)");
  if (!exact && has_max_items) bad("max_items", "applies to \"counting\": \"exact\" only (a sketch's memory is bounded by its dimensions)");
  if (exact && engine::ExactTable::bytes_max(c) > limits.max_namespace_bytes) {
    bad("max_items", "the namespace could need " + std::to_string(engine::ExactTable::bytes_max(c) >> 20) + " MiB (" +
                         std::to_string(c.max_items) + " records with full window rings and keys of max_item_bytes), over the limit of " +
                         std::to_string(limits.max_namespace_bytes >> 20) + " MiB (--max-namespace-bytes)");
  }
  check_sketch_bytes(c, limits, "", epsilon || delta ? "epsilon" : "sketch_width");
  if (c.candidates != 0 && c.candidates < c.k) bad("candidates", "must be at least k (" + std::to_string(c.k) + ")");
  try {
    c.validate();
  } catch (const InvalidArgument& e) {
    throw invalid("invalid_field", e.what());
  }
  c.candidates = c.resolved_candidates();
  return spec;
}

NamespaceSpec patch_namespace_spec(const NamespaceSpec& current, std::string_view json, const ServiceLimits& limits) {
  simdjson::dom::parser parser;
  element doc = parse_object(parser, json);
  NamespaceSpec next = current;
  const simdjson::dom::object members = doc.get_object().value_unsafe();
  io::JsonMembers named;
  for (auto [key, value] : members) {
    const std::string field(key);
    if (!named.first(key)) bad(message_text(field), "is given twice");
    if (field == "k") {
      next.config.k = static_cast<std::uint32_t>(get_uint(value, field, 1, engine::NamespaceConfig::kMaxK));
      if (next.config.k > next.config.candidates) {
        bad("k", "must be at most the namespace's " + std::to_string(next.config.candidates) + " candidates (fixed at creation)");
      }
    } else if (field == "hot_key_threshold") {
      next.config.hot_key_threshold = get_threshold(value);
    } else if (field == "hot_key_half_life") {
      next.config.hot_key_half_life = get_hot_key_half_life(value);
    } else if (field == "exclude") {
      next.config.exclude = get_exclude(value, next.config, limits);
    } else if (field == "max_event_age") {
      next.config.max_event_age = get_guard(value, field);
    } else if (field == "max_time_jump") {
      next.config.max_time_jump = get_guard(value, field);
    } else if (field == "audit_sla") {
      next.config.audit_sla = get_audit_sla(value);
      if (next.config.audit_sla && !engine::AccuracyAudit::enabled(next.config)) {
        bad("audit_sla", "needs an accuracy audit, which this namespace has not (audit_sample and audit_top are 0, fixed at creation)");
      }
    } else if (field == "audit_resize") {
      next.config.audit_resize = get_bool(value, field);
      if (next.config.audit_resize) check_resizable(next.config, field);
    } else if (field == "sketch_width" || field == "window_sketch_width") {
      const bool window = field == "window_sketch_width";
      check_resizable(next.config, field);
      if (window && next.config.windows.empty()) bad(field, "this namespace has no windows");
      const std::uint32_t now = window ? current.config.window_sketch_width : current.config.sketch.width;
      const auto width = static_cast<std::uint32_t>(std::bit_ceil(get_uint(value, field, CountMinShape::kMinWidth, CountMinShape::kMaxWidth)));
      if (width < now) {
        bad(field, "can only grow (now " + std::to_string(now) + "; a sketch's counts are carried into a wider one, never a narrower one)");
      }
      if (window) next.config.window_sketch_width = width;
      else next.config.sketch = CountMinShape::with_dimensions(width, next.config.sketch.depth);
      if (width > now) check_sketch_bytes(next.config, limits, field);  // (the width it has stands, whatever the limit now)
    } else if (field == "name" || field == "windows" || field == "half_lives" || field == "sketch_depth" ||
               field == "epsilon" || field == "delta" || field == "counting" || field == "clock" || field == "candidates" ||
               field == "summary" || field == "max_future_skew" || field == "max_items" || field == "memory" ||
               field == "max_item_bytes" || field == "redis" || field == "audit_sample" || field == "audit_top") {
      bad(field, "cannot be changed at run time (only k, hot_key_threshold, hot_key_half_life, exclude, max_event_age, max_time_jump, audit_sla, audit_resize, and sketch_width and window_sketch_width growing, can); create a new namespace");
    } else {
      bad(message_text(field), "unknown field");
    }
  }
  return next;
}

namespace {

void write_fields(io::JsonWriter& w, const NamespaceSpec& spec, bool for_storage) {
  const auto& c = spec.config;
  w.key("name").value(c.name);
  w.key("k").value(c.k);
  w.key("windows").begin_array();
  if (c.all_time) w.value("all");
  for (double window : c.windows) w.value(format_duration(window));
  w.end_array();
  w.key("half_lives").begin_array();
  for (double h : c.half_lives) w.value(format_duration(h));
  w.end_array();
  const bool exact = c.counting == engine::Counting::exact;
  if (!exact) {
    w.key("sketch_width").value(c.sketch.width);
    w.key("sketch_depth").value(c.sketch.depth);
    if (!c.windows.empty()) w.key("window_sketch_width").value(c.window_sketch_width);
    w.key("candidates").value(c.candidates);
    if (c.memory != 0) w.key("memory").value(format_byte_size(c.memory));
    w.key("summary").value(c.summary == engine::SummaryKind::candidate_heap ? "candidate_heap" : "space_saving");
  }
  w.key("hot_key_threshold");
  if (c.hot_key_threshold) w.value(*c.hot_key_threshold);
  else w.null();
  w.key("hot_key_half_life").value(format_duration(c.hot_key_half_life));
  w.key("exclude").begin_array();
  for (const auto& e : c.exclude) w.value(e);
  w.end_array();
  w.key("counting").value(exact ? "exact" : "sketch");
  if (exact) w.key("max_items").value(c.max_items);
  w.key("clock").value(c.clock == engine::ClockMode::wall ? "wall" : "event");
  w.key("max_future_skew").value(format_duration(c.max_future_skew));
  w.key("max_item_bytes").value(c.max_item_bytes);
  for (const auto& [key, guard] : {std::pair{"max_event_age", c.max_event_age}, std::pair{"max_time_jump", c.max_time_jump}}) {
    w.key(key);
    if (std::isfinite(guard)) w.value(format_duration(guard));
    else w.null();
  }
  // Stored only with an audit, so a build before it reads the others.
  if (!for_storage || engine::AccuracyAudit::enabled(c)) {
    w.key("audit_sample").value(c.audit_sample);
    w.key("audit_top").value(c.audit_top);
    w.key("audit_sla");
    if (c.audit_sla) w.value(*c.audit_sla);
    else w.null();
    // Stored only when on, likewise.
    if (!for_storage || c.audit_resize) w.key("audit_resize").value(c.audit_resize);
  }
  if (spec.redis) {
    const auto& r = *spec.redis;
    w.key("redis").begin_object();
    w.key("type").value(r.type == RedisKey::Type::topk ? "topk" : "cms");
    if (r.type == RedisKey::Type::topk) w.key("k").value(r.k);
    w.key("width").value(r.width);
    w.key("depth").value(r.depth);
    if (r.type == RedisKey::Type::topk) w.key("decay").value(r.decay);
    w.end_object();
  }
  if (!for_storage && exact) {
    // No estimation error; the bound on memory (keys included).
    w.key("accuracy").begin_object().key("type").value("exact");
    w.key("bytes_max").value(static_cast<std::uint64_t>(engine::ExactTable::bytes_max(c)));
    w.end_object();
  } else if (!for_storage) {
    // What those dimensions buy (read-only: derived from the sketch size).
    w.key("accuracy").begin_object();
    w.key("type").value("count_min_sketch");
    w.key("epsilon").value(c.sketch.epsilon());
    w.key("confidence").value(c.sketch.confidence());
    w.key("sketch_bytes_per_view").value(static_cast<std::uint64_t>(c.sketch.counter_bytes()));
    if (!c.windows.empty()) {
      // Every window's bound: its buckets' width, whatever the window.
      const auto bucket = CountMinShape::with_dimensions(c.window_sketch_width, c.sketch.depth);
      w.key("window_epsilon").value(bucket.epsilon());
      w.key("window_bytes_max").value(static_cast<std::uint64_t>(engine::window_bytes_max(c)));
    }
    w.end_object();
  }
}

}  // namespace

void check_namespace_sketch_bytes(const engine::NamespaceConfig& config, const ServiceLimits& limits, const std::string& field) {
  check_sketch_bytes(config, limits, field);
}

std::string write_namespace_spec(const NamespaceSpec& spec, bool for_storage) {
  io::JsonWriter w;
  w.begin_object();
  write_fields(w, spec, for_storage);
  w.end_object();
  return w.take();
}

namespace {

// A view's figures from the audit's last pass (docs/api.md, "Accuracy
// self-audit"); `c`: the configuration as asked.
void write_view_audit(io::JsonWriter& w, const engine::ViewSpec& view, const engine::ViewAudit& a, const engine::NamespaceConfig& c) {
  auto finite_or_null = [&](double x) {
    if (std::isfinite(x)) w.value(x);
    else w.null();
  };
  w.key("audit").begin_object();
  w.key("as_of");
  if (a.passed()) w.value(a.as_of);
  else w.null();
  w.key("compared").value(a.compared);
  w.key("max_error").value(a.max_error);
  w.key("error_bound").value(a.error_bound);
  w.key("max_relative_error");
  finite_or_null(a.max_relative_error);
  w.key("outside_bound").value(a.outside_bound);
  w.key("outside_bound_share").value(a.compared > 0 ? static_cast<double>(a.outside_bound) / static_cast<double>(a.compared) : 0.0);
  w.key("top").begin_object();
  w.key("compared").value(a.top_compared);
  w.key("max_error_share").value(a.top_max_error_share);
  w.end_object();
  w.key("sla");
  if (c.audit_sla) w.value(*c.audit_sla);
  else w.null();
  w.key("sla_met");
  if (c.audit_sla && a.top_compared > 0) w.value(a.top_max_error_share <= *c.audit_sla);
  else w.null();
  w.key("suggested_sketch_width");
  if (const std::uint64_t suggested = engine::suggested_width(c, view, a); suggested > 0) w.value(suggested);
  else w.null();
  w.end_object();
}

}  // namespace

std::string write_namespace_with_stats(const NamespaceSpec& spec, const engine::NamespaceStats& stats, std::uint64_t ingest_bytes,
                                       const engine::Coverage& coverage) {
  io::JsonWriter w;
  w.begin_object();
  write_fields(w, spec, false);
  w.key("stats").begin_object();
  w.key("events").value(stats.events);
  w.key("excluded_events").value(stats.excluded);
  w.key("batches").value(stats.batches);
  w.key("total_weight").value(stats.weight);
  w.key("newest_timestamp");
  if (stats.events > 0) w.value(stats.newest_time);
  else w.null();
  w.key("memory_bytes").value(static_cast<std::uint64_t>(stats.memory_bytes));
  w.key("ingest_bytes").value(ingest_bytes);
  // Per view: its memory (the first window holds the windows' shared
  // buckets) and, for windows, the late events it left out.
  w.key("views").begin_array();
  for (const auto& v : stats.views) {
    using Kind = engine::ViewSpec::Kind;
    w.begin_object();
    w.key("kind").value(v.view.kind == Kind::all_time ? "all" : v.view.kind == Kind::window ? "window" : "half_life");
    w.key("name").value(v.view.name());
    w.key("memory_bytes").value(static_cast<std::uint64_t>(v.memory_bytes));
    if (v.view.kind == Kind::window) w.key("dropped_events").value(v.dropped);
    if (stats.audit.enabled) write_view_audit(w, v.view, v.audit, spec.config);
    w.end_object();
  }
  w.end_array();
  // What the accuracy audit tracks (null: the namespace has no audit).
  w.key("audit");
  if (stats.audit.enabled) {
    w.begin_object();
    w.key("sampled_items").value(stats.audit.sampled_items);
    w.key("top_items").value(stats.audit.top_items);
    w.key("sample_share").value(stats.audit.sample_share);
    w.key("from_start").value(stats.audit.from_start);
    w.end_object();
  } else {
    w.null();
  }
  w.end_object();
  write_coverage(w, coverage);
  w.end_object();
  return w.take();
}

}  // namespace ebb::service
