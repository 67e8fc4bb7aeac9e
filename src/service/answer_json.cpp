#include "ebb/service/answer_json.hpp"

#include "ebb/core/duration.hpp"

namespace ebb::service {
namespace {

template <typename Answer>
void write_view(io::JsonWriter& w, const Answer& a) {
  using Kind = engine::ViewSpec::Kind;
  if (a.view.kind == Kind::decayed) {
    w.key("half_life").value(a.view.name());
  } else if (a.view.kind == Kind::window) {
    // The cover's true boundaries, exact to its buckets.
    w.key("window").begin_object().key("start").value(a.window_start).key("end").value(a.window_end).end_object();
    w.key("window_length").value(a.view.name());
  } else {
    // All-time: the window runs from the first event counted to now.
    w.key("window").begin_object().key("start").value(a.window_start).key("end").value(a.as_of).end_object();
  }
  w.key("as_of").value(a.as_of);
  if (!a.source.empty()) w.key("source").value(a.source);
  if (a.view.kind == Kind::window || !a.source.empty()) w.key("granularity").value(a.granularity);
}

void write_item_fields(io::JsonWriter& w, const CountedItem& item, std::optional<bool> listed = std::nullopt) {
  w.key("item_id").value(item.key);
  // Not in a persisted list: its count is not known, only bounded.
  if (listed == false) w.key("estimated_count").null();
  else w.key("estimated_count").value(item.estimate);
  w.key("lower_bound").value(item.lower);
  w.key("upper_bound").value(item.upper);
}

}  // namespace

void write_accuracy(io::JsonWriter& w, const engine::Accuracy& a, std::optional<double> unlisted_upper) {
  w.key("accuracy").begin_object();
  w.key("type").value(a.type);
  w.key("epsilon").value(a.epsilon);
  w.key("confidence").value(a.confidence);
  w.key("max_error").value(a.max_error);
  w.key("guarantee_threshold").value(a.guarantee_threshold);
  w.key("candidates").value(a.candidates);
  w.key("undersized").value(a.undersized);
  if (unlisted_upper) w.key("tail_uncertain").value(a.tail_uncertain).key("unlisted_upper_bound").value(*unlisted_upper);
  if (a.memory_budget != 0) w.key("memory_budget").value(a.memory_budget).key("memory_bytes").value(a.memory_bytes);
  if (a.type == "exact") w.key("items").value(a.items).key("evicted_items").value(a.evicted_items);
  w.end_object();
}

void write_top_k(io::JsonWriter& w, const std::string& ns, const engine::TopKAnswer& answer) {
  // About what it takes (an item's fields and numbers, its key): one
  // allocation where growing by doubling took ten and their copies.
  std::size_t bytes = 1024 + ns.size();
  for (const auto& item : answer.items) bytes += 160 + item.key.size();
  w.reserve(bytes);
  w.begin_object();
  w.key("namespace").value(ns);
  write_view(w, answer);
  w.key("items").begin_array();
  for (std::size_t i = 0; i < answer.items.size(); ++i) {
    w.begin_object();
    write_item_fields(w, answer.items[i]);
    w.key("rank").value(static_cast<std::uint64_t>(i + 1));
    w.end_object();
  }
  w.end_array();
  w.key("total").value(answer.total);
  write_accuracy(w, answer.accuracy, answer.unlisted_upper);
  write_coverage(w, answer.coverage);
  w.end_object();
}

void write_personalised(io::JsonWriter& w, const std::string& ns, const engine::PersonalisedAnswer& answer) {
  w.begin_object();
  w.key("namespace").value(ns);
  write_view(w, answer.global);
  w.key("alpha").value(answer.alpha);
  w.key("candidates").value(static_cast<std::uint64_t>(answer.candidates));
  w.key("items").begin_array();
  for (std::size_t i = 0; i < answer.items.size(); ++i) {
    const auto& p = answer.items[i];
    w.begin_object();
    write_item_fields(w, p.item);
    w.key("rank").value(static_cast<std::uint64_t>(i + 1));
    w.key("score").value(p.score).key("popularity").value(p.popularity).key("relevance").value(p.relevance);
    w.key("global_rank");
    if (p.global_rank) w.value(static_cast<std::uint64_t>(*p.global_rank));
    else w.null();
    w.end_object();
  }
  w.end_array();
  w.key("total").value(answer.global.total);
  write_accuracy(w, answer.global.accuracy);
  write_coverage(w, answer.global.coverage);
  w.end_object();
}

void write_counts(io::JsonWriter& w, const std::string& ns, const std::vector<engine::PointAnswer>& answers,
                  const engine::TopKAnswer& view_answer) {
  w.begin_object();
  w.key("namespace").value(ns);
  write_view(w, view_answer);
  w.key("items").begin_array();
  for (const auto& a : answers) {
    w.begin_object();
    write_item_fields(w, a.item, a.listed);
    w.key("rate").value(a.rate);
    w.key("tracked").value(a.tracked);
    if (a.listed) w.key("listed").value(*a.listed);
    w.end_object();
  }
  w.end_array();
  write_accuracy(w, view_answer.accuracy);
  write_coverage(w, view_answer.coverage);
  w.end_object();
}

void write_history(io::JsonWriter& w, const std::string& ns, std::string_view item, const HistorySeries& series) {
  w.begin_object();
  w.key("namespace").value(ns);
  w.key("item_id").value(item);
  if (series.view.kind == engine::ViewSpec::Kind::decayed) w.key("half_life").value(series.view.name());
  else w.key("window").value(series.view.name());
  w.key("points").begin_array();
  for (const auto& p : series.points) {
    w.begin_object();
    w.key("t").value(p.t);
    if (p.rank) w.key("estimated_count").value(p.estimate);
    else w.key("estimated_count").null();
    w.key("lower_bound").value(p.lower);
    w.key("upper_bound").value(p.upper);
    w.key("rank");
    if (p.rank) w.value(static_cast<std::uint64_t>(*p.rank));
    else w.null();
    w.end_object();
  }
  w.end_array();
  w.key("truncated").value(series.truncated);
  w.end_object();
}

void write_point(io::JsonWriter& w, const std::string& ns, const engine::PointAnswer& answer) {
  w.begin_object();
  w.key("namespace").value(ns);
  write_view(w, answer);
  write_item_fields(w, answer.item, answer.listed);
  w.key("rate").value(answer.rate);
  w.key("tracked").value(answer.tracked);
  if (answer.listed) w.key("listed").value(*answer.listed);
  write_accuracy(w, answer.accuracy);
  write_coverage(w, answer.coverage);
  w.end_object();
}

void write_coverage(io::JsonWriter& w, const engine::Coverage& c) {
  if (c.partitions == 0) return;
  w.key("cluster").begin_object().key("partitions").value(std::uint64_t{c.partitions}).key("partial").value(c.partial());
  w.key("missing_partitions").begin_array();
  for (auto p : c.missing) w.value(std::uint64_t{p});
  w.end_array().end_object();
}

void write_trending(io::JsonWriter& w, const std::string& ns, const engine::TrendingAnswer& a) {
  w.begin_object().key("namespace").value(ns);
  w.key("short").value(a.short_view.name()).key("long").value(a.long_view.name());
  w.key("as_of").value(a.as_of).key("min_count").value(a.min_count).key("candidates").value(static_cast<std::uint64_t>(a.candidates));
  w.key("items").begin_array();
  std::uint64_t rank = 0;
  for (const auto& item : a.items) {
    w.begin_object().key("item_id").value(item.key).key("rank").value(++rank).key("score").value(item.score);
    w.key("short_rate").value(item.short_rate).key("long_rate").value(item.long_rate);
    for (const auto& [key, count] : {std::pair{"short_count", &item.short_count}, std::pair{"long_count", &item.long_count}}) {
      w.key(key).begin_object();
      w.key("estimated_count").value(count->estimate).key("lower_bound").value(count->lower).key("upper_bound").value(count->upper);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();
  write_coverage(w, a.coverage);
  w.end_object();
}

void write_anomaly_item(io::JsonWriter& w, const engine::AnomalyItem& item, std::optional<double> as_of) {
  w.begin_object().key("item_id").value(item.key);
  if (as_of) w.key("as_of").value(*as_of);
  w.key("score").value(item.score);
  w.key("jump").value(item.jump);
  w.key("expected_count").value(item.expected);
  w.key("rank").value(static_cast<std::uint64_t>(item.rank));
  w.key("baseline_rank");
  if (item.baseline_rank) w.value(static_cast<std::uint64_t>(*item.baseline_rank));
  else w.null();
  w.key("rank_jump");
  if (item.rank_jump) w.value(static_cast<std::int64_t>(*item.rank_jump));
  else w.null();
  w.key("rate").value(item.rate).key("baseline_rate");
  if (item.baseline_estimated) w.value(item.baseline_rate);
  else w.null();  // not in the persisted list: only bounded
  w.key("count").begin_object();
  w.key("estimated_count").value(item.count.estimate).key("lower_bound").value(item.count.lower).key("upper_bound").value(item.count.upper);
  w.end_object();
  w.key("baseline_count").begin_object().key("estimated_count");
  if (item.baseline_estimated) w.value(item.baseline_count.estimate);
  else w.null();
  w.key("lower_bound").value(item.baseline_count.lower).key("upper_bound").value(item.baseline_count.upper);
  w.end_object();
  w.key("reasons").begin_array();
  if (item.rate_jumped) w.value("rate");
  if (item.rank_jumped) w.value("rank");
  w.end_array();
  w.end_object();
}

void write_anomalies(io::JsonWriter& w, const std::string& ns, const AnomalyRequest& request, const engine::AnomalyAnswer& a) {
  w.begin_object().key("namespace").value(ns);
  write_view(w, a.current);
  w.key("baseline").begin_object();
  if (request.baseline_offset) w.key("offset").value(format_duration(*request.baseline_offset));
  write_view(w, a.baseline);
  w.key("total").value(a.baseline.total).key("max_error").value(a.baseline.accuracy.max_error);
  w.end_object();
  w.key("total").value(a.current.total);
  const auto& t = a.thresholds;
  w.key("thresholds").begin_object().key("min_jump").value(t.min_jump).key("min_rank_jump").value(static_cast<std::uint64_t>(t.min_rank_jump));
  w.key("min_score").value(t.min_score).key("min_count").value(t.min_count).end_object();
  w.key("candidates").value(static_cast<std::uint64_t>(a.candidates));
  w.key("items").begin_array();
  for (const auto& item : a.items) write_anomaly_item(w, item);
  w.end_array();
  write_accuracy(w, a.current.accuracy);
  write_coverage(w, a.current.coverage);
  w.end_object();
}

}  // namespace ebb::service
