#include "ebb/engine/view_factory.hpp"

#include "ebb/core/error.hpp"
#include "ebb/engine/decayed_view.hpp"
#include "ebb/engine/exact_view.hpp"
#include "ebb/engine/time_rings.hpp"
#include "ebb/engine/window_view.hpp"
#include "ebb/sketch/common/keyed_min_heap.hpp"

namespace ebb::engine {
namespace {

std::shared_ptr<TimeRings> make_rings(std::vector<double> windows, const NamespaceConfig& config) {
  return std::make_shared<TimeRings>(std::move(windows), CountMinShape::with_dimensions(config.window_sketch_width, config.sketch.depth),
                                     config.update, config.resolved_candidates());
}

}  // namespace

std::unique_ptr<View> make_view(const ViewSpec& spec, const NamespaceConfig& config) {
  if (config.counting == Counting::exact) return std::make_unique<ExactView>(spec, std::make_shared<ExactTable>(config), true);
  switch (spec.kind) {
    case ViewSpec::Kind::all_time:
    case ViewSpec::Kind::decayed: return std::make_unique<DecayedView>(spec, config);  // all-time is decay with rate 0
    case ViewSpec::Kind::window: return std::make_unique<WindowView>(spec, make_rings({spec.window}, config), true);
  }
  throw InvalidArgument("make_view: unknown view kind");
}

std::vector<std::unique_ptr<View>> make_views(const NamespaceConfig& config) {
  std::vector<std::unique_ptr<View>> views;
  if (config.counting == Counting::exact) {
    // One table of records for every view; the first view feeds it.
    auto table = std::make_shared<ExactTable>(config);
    for (const ViewSpec& spec : configured_views(config)) views.push_back(std::make_unique<ExactView>(spec, table, views.empty()));
    return views;
  }
  std::shared_ptr<TimeRings> rings;
  for (const ViewSpec& spec : configured_views(config)) {
    if (spec.kind != ViewSpec::Kind::window) {
      views.push_back(make_view(spec, config));
      continue;
    }
    // One set of rings for all the windows; the first window's view feeds it.
    const bool feeds = !rings;
    if (feeds) rings = make_rings(config.windows, config);
    views.push_back(std::make_unique<WindowView>(spec, rings, feeds));
  }
  return views;
}

std::size_t window_bytes_max(const NamespaceConfig& c) {
  if (c.windows.empty() || c.counting == Counting::exact) return 0;
  const auto levels = plan_ring_levels(c.windows);
  const auto shape = CountMinShape::with_dimensions(c.window_sketch_width, c.sketch.depth);
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const bool top = i + 1 == levels.size() && i > 0;  // twice as wide (TimeRings::top_shape)
    bytes += levels[i].slots * ((top ? TimeRings::top_shape(shape) : shape).counter_bytes() + KeyedMinHeap::reserved_bytes(c.resolved_candidates()));
  }
  return bytes;
}

std::vector<ViewSpec> configured_views(const NamespaceConfig& config) {
  std::vector<ViewSpec> specs;
  if (config.all_time) specs.push_back(ViewSpec::all_time());
  for (double w : config.windows) specs.push_back(ViewSpec::sliding(w));
  for (double h : config.half_lives) specs.push_back(ViewSpec::decayed(h));
  return specs;
}

}  // namespace ebb::engine
