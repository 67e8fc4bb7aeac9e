#include "ebb/service/answer_json.hpp"

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

void write_item_fields(io::JsonWriter& w, const CountedItem& item) {
  w.key("item_id").value(item.key);
  w.key("estimated_count").value(item.estimate);
  w.key("lower_bound").value(item.lower);
  w.key("upper_bound").value(item.upper);
}

}  // namespace

void write_accuracy(io::JsonWriter& w, const engine::Accuracy& a) {
  w.key("accuracy").begin_object();
  w.key("type").value(a.type);
  w.key("epsilon").value(a.epsilon);
  w.key("confidence").value(a.confidence);
  w.key("max_error").value(a.max_error);
  w.key("guarantee_threshold").value(a.guarantee_threshold);
  w.key("candidates").value(a.candidates);
  w.key("undersized").value(a.undersized);
  w.end_object();
}

void write_top_k(io::JsonWriter& w, const std::string& ns, const engine::TopKAnswer& answer) {
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
  write_accuracy(w, answer.accuracy);
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
    write_item_fields(w, a.item);
    w.key("rate").value(a.rate);
    w.key("tracked").value(a.tracked);
    w.end_object();
  }
  w.end_array();
  write_accuracy(w, view_answer.accuracy);
  w.end_object();
}

void write_point(io::JsonWriter& w, const std::string& ns, const engine::PointAnswer& answer) {
  w.begin_object();
  w.key("namespace").value(ns);
  write_view(w, answer);
  write_item_fields(w, answer.item);
  w.key("rate").value(answer.rate);
  w.key("tracked").value(answer.tracked);
  write_accuracy(w, answer.accuracy);
  w.end_object();
}

}  // namespace ebb::service
