#include "ebb/engine/view_spec.hpp"

#include "ebb/core/duration.hpp"

namespace ebb::engine {

std::string ViewSpec::name() const { return kind == Kind::all_time ? "all" : format_duration(half_life); }

std::string ViewSpec::label() const { return kind == Kind::all_time ? "all-time" : "half-life " + format_duration(half_life); }

}  // namespace ebb::engine
