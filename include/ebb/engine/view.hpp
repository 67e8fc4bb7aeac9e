#pragma once
// One view of a namespace: a way of counting the same events (all-time,
// decayed with a half-life; windows later). The namespace owns its views and
// feeds each the same prepared batch; queries go to the view asked for.
// Views are single-writer objects: concurrency belongs to the namespace's
// owner.
#include <cstdint>
#include <string>
#include <string_view>

#include "ebb/engine/answers.hpp"
#include "ebb/engine/prepared_batch.hpp"

namespace ebb::engine {

class View {
 public:
  virtual ~View() = default;
  virtual const ViewSpec& spec() const noexcept = 0;
  virtual void apply(const PreparedBatch& batch) = 0;
  virtual TopKAnswer top(std::size_t k, double now) const = 0;
  virtual PointAnswer point(std::string_view item, std::uint64_t hash, double now) const = 0;
  virtual std::size_t memory_bytes() const noexcept = 0;

  // The view's whole state (for checkpoints), and its restoration into a
  // view built from the same configuration. restore_state() throws
  // FormatError when the blob does not fit this view; the view is then
  // unchanged.
  virtual std::string serialize_state() const = 0;
  virtual void restore_state(std::string_view blob) = 0;
};

}  // namespace ebb::engine
