#pragma once
// One view (all-time, a half-life or a window) of an exact-counting
// namespace: answers from the namespace's ExactTable, which every view
// shares and one of them feeds (as window views share their rings).
//
// Counts are exact. The one loss is eviction past max_items, and it is
// stated: an item's upper bound adds the weight eviction took from this
// view, and the accuracy block says how many records went and how much
// (type "exact", max_error = that weight; 0 while nothing was evicted).
#include <memory>

#include "ebb/engine/exact_table.hpp"
#include "ebb/engine/view.hpp"

namespace ebb::engine {

class ExactView final : public View {
 public:
  // `feeds`: this view counts batches into the table (exactly one view per
  // table does, and its state holds the table; the others' hold nothing).
  ExactView(ViewSpec spec, std::shared_ptr<ExactTable> table, bool feeds);

  const ViewSpec& spec() const noexcept override { return spec_; }
  void apply(const PreparedBatch& batch) override;
  TopKAnswer top(std::size_t k, double now) const override;
  PointAnswer point(std::string_view item, std::uint64_t hash, double now) const override;
  // One reading (one exp()) for the whole pass.
  std::vector<PointAnswer> points(std::span<const std::string> items, std::span<const std::uint64_t> hashes, double now) const override;
  std::optional<TopKAnswer> top_at(std::size_t k, double as_of) const override;
  std::optional<PointAnswer> point_at(std::string_view item, std::uint64_t hash, double as_of) const override;
  std::size_t memory_bytes() const noexcept override;
  std::uint64_t dropped() const noexcept override;
  void serialize_state_into(BinaryWriter& w) const override;
  void restore_state(std::string_view blob) override;

  const ExactTable& table() const noexcept { return *table_; }

 private:
  TopKAnswer answer(const ExactTable::Reading& r, std::size_t k, double as_of) const;
  // `a` is describe()'s answer for this reading; the item's count goes in.
  PointAnswer point_answer(PointAnswer a, const ExactTable::Reading& r, std::string_view item, std::uint64_t hash) const;
  template <typename Answer>
  Answer describe(const ExactTable::Reading& r, double as_of) const;

  ViewSpec spec_;
  std::shared_ptr<ExactTable> table_;
  bool feeds_;
};

}  // namespace ebb::engine
