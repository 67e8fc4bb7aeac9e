#include "ebb/engine/exact_view.hpp"

#include <algorithm>

#include "ebb/core/error.hpp"

namespace ebb::engine {

ExactView::ExactView(ViewSpec spec, std::shared_ptr<ExactTable> table, bool feeds) : spec_(spec), table_(std::move(table)), feeds_(feeds) {}

void ExactView::apply(const PreparedBatch& batch) {
  if (feeds_) table_->apply(batch);
}

template <typename Answer>
Answer ExactView::describe(const ExactTable::Reading& r, double as_of) const {
  Answer a;
  a.view = spec_;
  a.as_of = as_of;
  a.window_start = r.start;
  a.window_end = r.end;
  a.granularity = r.granularity;
  Accuracy& acc = a.accuracy;
  acc.type = "exact";
  acc.epsilon = 0;
  acc.confidence = 1;
  // An item not held counted at most what eviction took from this view.
  acc.max_error = table_->evicted(r);
  acc.guarantee_threshold = acc.max_error;
  acc.candidates = static_cast<std::uint32_t>(std::min<std::uint64_t>(table_->max_items(), UINT32_MAX));
  acc.items = table_->size();
  acc.evicted_items = table_->evictions();
  return a;
}

TopKAnswer ExactView::answer(const ExactTable::Reading& r, std::size_t k, double as_of) const {
  TopKAnswer a = describe<TopKAnswer>(r, as_of);
  a.total = table_->total(r);
  const double lost = a.accuracy.max_error;
  // One more than asked: the first left out bounds the rest.
  a.unlisted_upper = lost;
  for (std::uint32_t rec : table_->top(r, k + 1)) {
    const double v = table_->value(rec, r);
    if (a.items.size() == k) {
      a.unlisted_upper = v + lost;
      break;
    }
    a.items.push_back({table_->key(rec), v, v, v + lost});
  }
  a.accuracy.tail_uncertain = tail_uncertain(a.items, a.unlisted_upper);
  return a;
}

PointAnswer ExactView::point_answer(PointAnswer a, const ExactTable::Reading& r, std::string_view item, std::uint64_t hash) const {
  const std::uint32_t rec = table_->find(item, hash);
  const double v = rec == ExactTable::kNone ? 0 : table_->value(rec, r);
  a.item = {std::string(item), v, v, v + a.accuracy.max_error};
  a.tracked = rec != ExactTable::kNone;
  if (spec_.kind == ViewSpec::Kind::decayed) {
    a.rate = table_->lambda(r.index) * v;
  } else if (r.end > r.start) {
    a.rate = v / (r.end - r.start);  // a window's velocity; all-time: since the first event
  }
  return a;
}

namespace {
// A wall clock stepped back behind the newest event still reads every event.
double live(double now, const ExactTable& t) noexcept { return std::max(now, t.newest_time()); }
}  // namespace

TopKAnswer ExactView::top(std::size_t k, double now) const {
  const double as_of = live(now, *table_);
  return answer(*table_->reading(spec_, as_of, true), k, as_of);
}

PointAnswer ExactView::point(std::string_view item, std::uint64_t hash, double now) const {
  const double as_of = live(now, *table_);
  const auto r = *table_->reading(spec_, as_of, true);
  return point_answer(describe<PointAnswer>(r, as_of), r, item, hash);
}

std::vector<PointAnswer> ExactView::points(std::span<const std::string> items, std::span<const std::uint64_t> hashes, double now) const {
  const double as_of = live(now, *table_);
  const auto r = *table_->reading(spec_, as_of, true);
  const auto described = describe<PointAnswer>(r, as_of);  // the view, its cover and accuracy: the same for every item
  std::vector<PointAnswer> out;
  out.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) out.push_back(point_answer(described, r, items[i], hashes[i]));
  return out;
}

std::optional<TopKAnswer> ExactView::top_at(std::size_t k, double as_of) const {
  const auto r = table_->reading(spec_, as_of, false);
  if (!r) return std::nullopt;
  return answer(*r, k, as_of);
}

std::optional<PointAnswer> ExactView::point_at(std::string_view item, std::uint64_t hash, double as_of) const {
  const auto r = table_->reading(spec_, as_of, false);
  if (!r) return std::nullopt;
  return point_answer(describe<PointAnswer>(*r, as_of), *r, item, hash);
}

std::size_t ExactView::memory_bytes() const noexcept { return sizeof(*this) + (feeds_ ? table_->memory_bytes() : 0); }

std::uint64_t ExactView::dropped() const noexcept { return spec_.kind == ViewSpec::Kind::window ? table_->dropped(spec_.window) : 0; }

void ExactView::serialize_state_into(BinaryWriter& w) const {
  const auto blob = w.begin_blob(BlobKind::exact_view, 1);
  w.put<std::uint8_t>(feeds_ ? 1 : 0);
  if (feeds_) w.put_part([this](BinaryWriter& part) { table_->serialize_into(part); });
  w.end_blob(blob);
}

void ExactView::restore_state(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::exact_view, 1);
  BinaryReader r(opened.payload, "exact view");
  const auto feeds = r.get<std::uint8_t>();
  if (feeds != (feeds_ ? 1 : 0)) r.fail("feeding flag differs from the configuration");
  std::string table;
  if (feeds_) table = r.get_string(std::size_t{1} << 40);
  r.expect_end();
  if (feeds_) table_->restore(table);
}

}  // namespace ebb::engine
