#pragma once
// Engine answers as the documents of ../shared/notes/api.md (GET /top-k,
// GET /count): the CLI's --json and the server write the same bytes.
#include <string>

#include "ebb/engine/answers.hpp"
#include "ebb/io/json_writer.hpp"

namespace ebb::io {

void write_top_k(JsonWriter& w, const std::string& ns, const engine::TopKAnswer& answer);
void write_point(JsonWriter& w, const std::string& ns, const engine::PointAnswer& answer);
void write_accuracy(JsonWriter& w, const engine::Accuracy& accuracy);
// One item of POST /counts: the item shape with rate and view, as an object.
void write_point_item(JsonWriter& w, const engine::PointAnswer& answer);

}  // namespace ebb::io
