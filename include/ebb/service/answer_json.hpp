#pragma once
// Engine answers as the documents of ../shared/notes/api.md (GET /top-k,
// GET /count): the CLI's --json and the server write the same bytes.
#include <optional>
#include <string>
#include <vector>

#include "ebb/engine/answers.hpp"
#include "ebb/engine/personalised.hpp"
#include "ebb/engine/trending.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/service/service.hpp"

namespace ebb::service {

void write_top_k(io::JsonWriter& w, const std::string& ns, const engine::TopKAnswer& answer);
void write_point(io::JsonWriter& w, const std::string& ns, const engine::PointAnswer& answer);
// A top-k list's accuracy adds tail_uncertain and the list's
// unlisted_upper_bound (a point answer has no tail).
void write_accuracy(io::JsonWriter& w, const engine::Accuracy& accuracy, std::optional<double> unlisted_upper = std::nullopt);
// POST /counts: the items in request order, with the view and the accuracy
// block they share. `view_answer` describes the view when there are no items.
void write_counts(io::JsonWriter& w, const std::string& ns, const std::vector<engine::PointAnswer>& answers,
                  const engine::TopKAnswer& view_answer);
// Cluster answers (ebb serve --nats): the "cluster" block, which partitions
// the answer spans and which it lacks; nothing for a single node's.
void write_coverage(io::JsonWriter& w, const engine::Coverage& coverage);
// GET /trending.
void write_trending(io::JsonWriter& w, const std::string& ns, const engine::TrendingAnswer& answer);
// POST /top-k/personalised: GET /top-k's shape, each item with its score,
// popularity, relevance and global_rank (null: not in the global list read).
void write_personalised(io::JsonWriter& w, const std::string& ns, const engine::PersonalisedAnswer& answer);
// GET /anomalies, and one of its items (the data of a stream's `anomaly`
// event, with the as_of it was found at).
void write_anomalies(io::JsonWriter& w, const std::string& ns, const AnomalyRequest& request, const engine::AnomalyAnswer& answer);
void write_anomaly_item(io::JsonWriter& w, const engine::AnomalyItem& item, std::optional<double> as_of = std::nullopt);
// GET /history: an item's persisted points.
void write_history(io::JsonWriter& w, const std::string& ns, std::string_view item, const HistorySeries& series);

}  // namespace ebb::service
