#pragma once
// One view of a namespace: a way of counting the same events (all-time,
// decayed with a half-life, exact-boundary windows). The namespace owns its views and
// feeds each the same prepared batch; queries go to the view asked for.
// Views are single-writer objects: concurrency belongs to the namespace's
// owner.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/core/binary_io.hpp"
#include "ebb/engine/answers.hpp"
#include "ebb/engine/prepared_batch.hpp"

namespace ebb::engine {

class View {
 public:
  virtual ~View() = default;
  virtual const ViewSpec& spec() const noexcept = 0;
  virtual void apply(const PreparedBatch& batch) = 0;
  // The namespace's newest event time is `t` (a cluster partition holds some
  // of the events: its event-time buckets turn as a single node's would).
  // Nothing by default: only event-time buckets depend on it.
  virtual void advance_to(double /*t*/) {}
  virtual TopKAnswer top(std::size_t k, double now) const = 0;
  virtual PointAnswer point(std::string_view item, std::uint64_t hash, double now) const = 0;
  // Many items at the same moment (a ranking pass); hashes[i] =
  // hash_key(items[i]). By default point() for each.
  virtual std::vector<PointAnswer> points(std::span<const std::string> items, std::span<const std::uint64_t> hashes, double now) const {
    std::vector<PointAnswer> out;
    out.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) out.push_back(point(items[i], hashes[i], now));
    return out;
  }
  virtual std::size_t memory_bytes() const noexcept = 0;
  // Events the namespace counted that this view left out (a window's late
  // events older than the window when they arrived).
  virtual std::uint64_t dropped() const noexcept { return 0; }

  // For telling cheaply whether a batch changed the top-k list (RESP's
  // TOPK.ADD names the items a command pushed out): scores[i] = the score
  // top() ranks items[i] by (hashes[i] its hash_key), in the view's current
  // scale, while top() may list it; nullopt when it cannot be listed now.
  // Asked for a batch's items at once, so a view can fetch ahead. False:
  // this view cannot tell without computing top() (scores unset).
  virtual bool held_scores(std::span<const std::string_view> /*items*/, std::span<const std::uint64_t> /*hashes*/,
                           std::span<std::optional<double>> /*scores*/) const noexcept {
    return false;
  }
  // The same scores for a whole batch at once: every key the view holds with
  // a score of at least `bound` appended to `out` (in no order), by one pass
  // over its summary. False (`out` to be dropped): the view cannot tell, it
  // holds more than `max_held` keys (the caller's items looked up one by
  // one with held_scores() cost less then), or more than `max_found` keys
  // score that high.
  virtual bool held_at_least(double /*bound*/, std::size_t /*max_held*/, std::size_t /*max_found*/,
                             std::vector<HeldScore>& /*out*/) const {
    return false;
  }
  // How many keys the view's summary has let go of so far: a listed key
  // can leave the list without being outranked only when this grows.
  virtual std::uint64_t evictions() const noexcept { return 0; }
  // At least the upper bound every key let go of had when it left (in the
  // current scale; nullopt: cannot tell). A key whose score was above it
  // once, and that was held then, was not let go of since.
  virtual std::optional<double> evicted_bound() const noexcept { return std::nullopt; }
  // How many times every score was rescaled (a decayed view's rebase):
  // scores read across a rescale are in different units.
  virtual std::uint64_t rescales() const noexcept { return 0; }

  // The answer as it was at `as_of` (at or before now), from the view's own
  // memory; nullopt when it keeps nothing that old (decayed and all-time
  // views keep no past; windows keep their rings).
  virtual std::optional<TopKAnswer> top_at(std::size_t k, double as_of) const {
    (void)k, (void)as_of;
    return std::nullopt;
  }
  virtual std::optional<PointAnswer> point_at(std::string_view item, std::uint64_t hash, double as_of) const {
    (void)item, (void)hash, (void)as_of;
    return std::nullopt;
  }

  // The view's whole state (for checkpoints), and its restoration into a
  // view built from the same configuration. restore_state() throws
  // FormatError when the blob does not fit this view; the view is then
  // unchanged.
  virtual std::string serialize_state() const {
    return written([this](BinaryWriter& w) { serialize_state_into(w); });
  }
  // The same bytes appended in place (a namespace's state is one buffer,
  // not a copy of each view's).
  virtual void serialize_state_into(BinaryWriter& w) const = 0;
  // The state as it is now, written later by the returned function (the
  // bytes serialize_state_into() would write now) without the namespace's
  // lock: a checkpoint freezes under the lock and writes after it. By
  // default a serialised copy; window views share their buckets
  // copy-on-write instead.
  using FrozenState = std::function<void(BinaryWriter&)>;
  virtual FrozenState freeze_state() const {
    auto bytes = std::make_shared<const std::string>(serialize_state());
    return [bytes](BinaryWriter& w) { w.put_bytes(*bytes); };
  }
  virtual void restore_state(std::string_view blob) = 0;
};

}  // namespace ebb::engine
