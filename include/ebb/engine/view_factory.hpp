#pragma once
// Views are built from their spec here, and only here: the namespace asks
// for "the view of this spec" when it builds its views and when it restores
// them from a checkpoint, without knowing which class counts each kind.
// A new kind of view is one more case in make_view().
#include <memory>
#include <vector>

#include "ebb/engine/namespace_config.hpp"
#include "ebb/engine/view.hpp"
#include "ebb/engine/view_spec.hpp"

namespace ebb::engine {

// A fresh, empty view of `spec` sized by the namespace's configuration (a
// window view alone gets rings of its own).
std::unique_ptr<View> make_view(const ViewSpec& spec, const NamespaceConfig& config);

// Fresh, empty views for every spec of configured_views(), in that order;
// the windows share one set of bucket rings. An exact-counting namespace's
// views all read one ExactTable instead.
std::vector<std::unique_ptr<View>> make_views(const NamespaceConfig& config);

// The most the windows' buckets hold once every ring is full: sketches and
// candidate heaps, before key bytes (0 without windows). Buckets are
// allocated as event time fills them. Exact counting has no window
// buckets: ExactTable::bytes_max() bounds its records.
std::size_t window_bytes_max(const NamespaceConfig& config);

// The specs of the views a configuration asks for, in the namespace's
// order (the order its checkpoints store them in): all-time first, then
// each window, then each half-life, as configured.
std::vector<ViewSpec> configured_views(const NamespaceConfig& config);

}  // namespace ebb::engine
