#include "ebb/engine/namespace_config.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>

#include "ebb/core/error.hpp"
#include "ebb/core/utf8.hpp"
#include "ebb/sketch/common/keyed_min_heap.hpp"

namespace ebb::engine {
namespace {
[[noreturn]] void bad(const std::string& field, const std::string& why) { throw InvalidArgument(field + ": " + why); }
}  // namespace

std::optional<std::string> namespace_name_problem(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > kMaxNamespaceName) {
    return "is " + std::to_string(name.size()) + " bytes long (at most " + std::to_string(kMaxNamespaceName) + ")";
  }
  if (const std::size_t valid = utf8_valid_prefix(name); valid != name.size()) {
    return std::string("must be UTF-8 text (byte ") + std::to_string(valid) + " is not)";
  }
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    // C1 controls are U+0080..U+009F: 0xC2 0x80..0x9F (0xC2 only ever leads).
    const bool c1 = c == 0xC2 && i + 1 < name.size() && static_cast<unsigned char>(name[i + 1]) < 0xA0;
    if (c < 0x20 || c == 0x7F || c1) return std::string("must not hold control characters (byte ") + std::to_string(i) + " starts one)";
  }
  return std::nullopt;
}

void NamespaceConfig::validate() const {
  if (const auto problem = namespace_name_problem(name)) bad("name", *problem);
  if (k < 1 || k > kMaxK) bad("k", "must be in [1, " + std::to_string(kMaxK) + "] (got " + std::to_string(k) + ")");
  if (!all_time && half_lives.empty() && windows.empty()) bad("windows", "a namespace needs at least one view (all-time, a window or a half-life)");
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const double w = windows[i];
    if (!(w >= 1 && w <= kMaxWindow) || w != std::floor(w)) bad("windows", "entry " + std::to_string(i) + " must be a whole number of seconds in [1s, 366d]");
    for (std::size_t j = 0; j < i; ++j) {
      if (windows[j] == w) bad("windows", "entry " + std::to_string(i) + " repeats an earlier window");
    }
  }
  if (!windows.empty()) {
    try {
      (void)CountMinShape::with_dimensions(window_sketch_width, sketch.depth);
    } catch (const InvalidArgument& e) {
      bad("window_sketch_width", e.what());
    }
  }
  for (std::size_t i = 0; i < half_lives.size(); ++i) {
    if (!(half_lives[i] > 0) || !std::isfinite(half_lives[i])) bad("half_lives", "entry " + std::to_string(i) + " must be a finite duration > 0");
    for (std::size_t j = 0; j < i; ++j) {
      if (half_lives[j] == half_lives[i]) bad("half_lives", "entry " + std::to_string(i) + " repeats an earlier half-life");
    }
  }
  try {
    (void)CountMinShape::with_dimensions(sketch.width, sketch.depth);
  } catch (const InvalidArgument& e) {
    bad("sketch_width", e.what());
  }
  if (candidates != 0 && (candidates < k || candidates > KeyedMinHeap::kMaxCapacity)) {
    bad("candidates", "must be 0 (auto) or in [k, " + std::to_string(KeyedMinHeap::kMaxCapacity) + "] (got " +
                          std::to_string(candidates) + ")");
  }
  if (max_items < 1 || max_items > kMaxItems) {
    bad("max_items", "must be in [1, " + std::to_string(kMaxItems) + "] (got " + std::to_string(max_items) + ")");
  }
  if (!(max_future_skew >= 0) || !std::isfinite(max_future_skew)) bad("max_future_skew", "must be a finite number of seconds >= 0");
  if (!(max_event_age > 0)) bad("max_event_age", "must be a duration > 0");
  if (!(max_time_jump > 0)) bad("max_time_jump", "must be a duration > 0");
  if (max_item_bytes < 1 || max_item_bytes > (1u << 20)) bad("max_item_bytes", "must be in [1, 1048576]");
  if (hot_key_threshold && !(std::isfinite(*hot_key_threshold) && *hot_key_threshold > 0)) {
    bad("hot_key_threshold", "must be a finite number of events/s > 0 (or null for no detection)");
  }
  if (!(hot_key_half_life >= kMinHotKeyHalfLife && hot_key_half_life <= kMaxHotKeyHalfLife)) {
    bad("hot_key_half_life", "must be a duration in [1s, 1d]");
  }
  if (audit_sample > kMaxAuditSample) bad("audit_sample", "must be in [0, " + std::to_string(kMaxAuditSample) + "] (got " + std::to_string(audit_sample) + ")");
  if (audit_top > kMaxAuditTop) bad("audit_top", "must be in [0, " + std::to_string(kMaxAuditTop) + "] (got " + std::to_string(audit_top) + ")");
  if (audit_sla && !(*audit_sla > 0 && *audit_sla <= 1)) bad("audit_sla", "must be a share in (0, 1] (or null for none)");
  if (audit_resize) {
    if (audit_sample == 0 && audit_top == 0) bad("audit_resize", "needs an accuracy audit (audit_sample or audit_top above 0)");
    if (counting != Counting::sketch) bad("audit_resize", "needs sketch counting (an exact namespace has no sketch to widen)");
    if (memory != 0) bad("audit_resize", "cannot widen a namespace sized by memory (its budget is fixed at creation)");
    if (!audit_sla) bad("audit_resize", "needs an audit_sla to judge by (audit_sla is null; turn audit_resize off with it)");
  }
  for (std::size_t i = 0; i < exclude.size(); ++i) {
    if (exclude[i].empty() || exclude[i].size() > max_item_bytes) {
      bad("exclude", "entry " + std::to_string(i) + " must be 1 to " + std::to_string(max_item_bytes) + " bytes");
    }
  }
}

namespace {
std::uint32_t share_of(std::uint32_t width, std::uint32_t parts) {
  const std::uint64_t part = std::bit_ceil((std::uint64_t{width} + parts - 1) / parts);
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(std::min(width, kMinShareWidth), part));
}
}  // namespace

NamespaceConfig partition_share(NamespaceConfig c, std::uint32_t parts) {
  if (parts <= 1 || c.counting == Counting::exact) return c;
  c.sketch = CountMinShape::with_dimensions(share_of(c.sketch.width, parts), c.sketch.depth);
  c.window_sketch_width = share_of(c.window_sketch_width, parts);
  return c;
}

void check_resize(const NamespaceConfig& was, const NamespaceConfig& next) {
  if (was.counting != Counting::sketch) return;
  auto check = [](const char* field, std::uint32_t now, std::uint32_t width) {
    if (width != now && (!std::has_single_bit(width) || width < now)) {
      throw InvalidArgument(std::string(field) + ": can only grow by a power of two (now " + std::to_string(now) + "; got " + std::to_string(width) + ")");
    }
  };
  if (next.sketch.depth != was.sketch.depth) throw InvalidArgument("sketch_depth: fixed at creation");
  check("sketch_width", was.sketch.width, next.sketch.width);
  check("window_sketch_width", was.window_sketch_width, next.window_sketch_width);
  if (next.sketch.width != was.sketch.width && was.memory != 0) {
    throw InvalidArgument("sketch_width: this namespace is sized by memory (fixed at creation)");
  }
}

std::uint32_t width_for_share(std::uint32_t share, std::uint32_t parts) {
  if (parts <= 1) return std::min(share, CountMinShape::kMaxWidth);
  std::uint32_t width = CountMinShape::kMinWidth;
  while (width < CountMinShape::kMaxWidth && share_of(width, parts) < share) width *= 2;
  return width;
}

std::uint32_t NamespaceConfig::resolved_candidates() const noexcept {
  return candidates != 0 ? candidates : std::max<std::uint32_t>(1024, 4 * k);
}

}  // namespace ebb::engine
