#include "ebb/engine/view_factory.hpp"

#include "ebb/core/error.hpp"
#include "ebb/engine/decayed_view.hpp"

namespace ebb::engine {

std::unique_ptr<View> make_view(const ViewSpec& spec, const NamespaceConfig& config) {
  switch (spec.kind) {
    case ViewSpec::Kind::all_time:
    case ViewSpec::Kind::decayed: return std::make_unique<DecayedView>(spec, config);  // all-time is decay with rate 0
  }
  throw InvalidArgument("make_view: unknown view kind");
}

std::vector<ViewSpec> configured_views(const NamespaceConfig& config) {
  std::vector<ViewSpec> specs;
  if (config.all_time) specs.push_back(ViewSpec::all_time());
  for (double h : config.half_lives) specs.push_back(ViewSpec::decayed(h));
  return specs;
}

}  // namespace ebb::engine
