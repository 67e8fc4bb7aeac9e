// The POST /events body parser on its own (the handler and
// fuzz/fuzz_event_body call the same function).
#include "ebb/server/event_body_parser.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include "ebb/server/http_types.hpp"

namespace ebb::server {
namespace {

constexpr double kNow = 1.7e9;

struct Refusal {
  int status;
  std::string code;
  std::string message;
};

Refusal refusal(std::string_view body, bool ndjson, std::size_t max_events = 100) {
  service::ServiceLimits limits;
  limits.max_batch_events = max_events;
  simdjson::dom::parser parser;
  ParsedBatch batch;
  try {
    parse_event_body(body, ndjson, "", kNow, limits, parser, batch);
  } catch (const ApiError& e) {
    return {e.status(), e.code(), e.what()};
  }
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

TEST(EventBodyParser, JsonEventsTakeTheDefaults) {
  simdjson::dom::parser parser;
  ParsedBatch b;
  parse_event_body(R"({"namespace":"top","events":[{"item_id":"a"},{"item_id":"b","weight":2.5,"timestamp":5,"namespace":"own"},{"item_id":"c","timestamp":null}]})",
                   false, "query", kNow, {}, parser, b);
  ASSERT_EQ(b.events.size(), 3u);
  EXPECT_FALSE(b.ndjson);
  EXPECT_TRUE(b.lines.empty());
  EXPECT_EQ(b.events[0].item, "a");
  EXPECT_EQ(b.events[0].time, kNow);
  EXPECT_EQ(b.events[0].weight, 1.0);
  EXPECT_EQ(b.namespaces[0], "top");  // the body's namespace over ?namespace=
  EXPECT_EQ(b.events[1].time, 5.0);
  EXPECT_EQ(b.events[1].weight, 2.5);
  EXPECT_EQ(b.namespaces[1], "own");
  EXPECT_EQ(b.events[2].time, kNow);
}

TEST(EventBodyParser, NdjsonEventsAreNumberedByLineAndCopied) {
  simdjson::dom::parser parser;
  ParsedBatch b;
  parse_event_body("{\"item_id\":\"x\"}\n\n \t\r\n{\"item_id\":\"y\",\"namespace\":\"n\"}", true, "query", kNow, {}, parser, b);
  ASSERT_EQ(b.events.size(), 2u);
  EXPECT_TRUE(b.ndjson);
  EXPECT_EQ(b.lines, (std::vector<std::size_t>{1, 4}));
  EXPECT_EQ(b.namespaces[0], "query");
  EXPECT_EQ(b.namespaces[1], "n");
  (void)parser.parse(std::string_view("{\"item_id\":\"overwritten\"}"));
  EXPECT_EQ(b.events[0].item, "x");  // in the batch's arena, not the parser
  EXPECT_EQ(b.events[1].item, "y");
  EXPECT_TRUE(is_ndjson_media_type("application/x-ndjson"));
  EXPECT_TRUE(is_ndjson_media_type("application/jsonl"));
  EXPECT_FALSE(is_ndjson_media_type("application/json"));
}

TEST(EventBodyParser, RefusalsAreApiErrorsNamingWhere) {
  auto r = refusal(R"({"events":[{"item_id":"a"}]})", false);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.code, "invalid_event");
  EXPECT_EQ(r.message, "events[0].namespace: is required (per event, as \"namespace\" at the top level, or ?namespace=)");
  r = refusal("{\"item_id\":\"a\",\"namespace\":\"n\"}\n{\"item_id\":", true);
  EXPECT_EQ(r.code, "invalid_json");
  EXPECT_EQ(r.message.rfind("events[1] (line 2): not valid JSON: ", 0), 0u) << r.message;
  r = refusal(R"({"namespace":"n","events":[{"item_id":"a"},{"item_id":"b"},{"item_id":"c"}]})", false, 2);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.code, "batch_too_large");
  EXPECT_EQ(r.message, "events: more than 2 events in one batch (--max-batch-events)");
}

// A body means what its JSON means whatever the order of its fields, and a
// body that is not JSON is refused even where the bad bytes sit in a field
// ebb ignores. (Kept for any one-pass reader: simdjson 3.0's On-Demand API
// checks only what it reads, and skips the rest unread.)
TEST(EventBodyParser, ReadingKeepsJsonMeaning) {
  simdjson::dom::parser parser;
  ParsedBatch b;
  // The body's namespace after the events still applies to them; an event's own wins.
  parse_event_body(R"({"events":[{"item_id":"a"},{"namespace":"own","item_id":"b"}],"namespace":"late"})", false, "query", kNow, {},
                   parser, b);
  ASSERT_EQ(b.namespaces.size(), 2u);
  EXPECT_EQ(b.namespaces[0], "late");
  EXPECT_EQ(b.namespaces[1], "own");
  // Escaped field names and values are unescaped; unknown fields of any shape are ignored.
  ParsedBatch e;
  parse_event_body(R"({"namespace":"n","events":[{"item\u005fid":"caf\u00e9","meta":{"x":[1,2.5,-3e2,true,false,null,"s",{}]},"weight":3}]})",
                   false, "", kNow, {}, parser, e);
  ASSERT_EQ(e.events.size(), 1u);
  EXPECT_EQ(e.events[0].item, "caf\xC3\xA9");
  EXPECT_EQ(e.events[0].weight, 3.0);
  // A second "events" array (or any member read, named twice) is refused:
  // which one was meant is a guess.
  EXPECT_EQ(refusal(R"({"namespace":"n","events":[{"item_id":"a"},{"item_id":"b"}],"events":[{"item_id":"c"}]})", false).message,
            "events: is given twice");
  EXPECT_EQ(refusal(R"({"namespace":"n","events":[{"item_id":"a","timestamp":1,"timestamp":2}]})", false).message,
            "events[0].timestamp: is given twice");
  EXPECT_EQ(refusal("{\"item_id\":\"a\",\"namespace\":\"n\",\"namespace\":\"m\"}\n", true).message,
            "events[0] (line 1).namespace: is given twice");
  // Without any namespace, the first event that needed one is named.
  EXPECT_EQ(refusal(R"({"events":[{"item_id":"a","namespace":"x"},{"item_id":"b"}]})", false).message,
            "events[1].namespace: is required (per event, as \"namespace\" at the top level, or ?namespace=)");
  for (const char* bad : {R"({"namespace":"n","events":[{"item_id":"a","meta":tru}]})",
                          R"({"namespace":"n","events":[{"item_id":"a","meta":[1,]}]})",
                          R"({"namespace":"n","events":[{"item_id":"a","meta":nul}]})",
                          R"({"namespace":"n","events":[{"item_id":"a","weight":1x}]})",
                          R"({"namespace":"n","events":[{"item_id":"a\x"}]})",
                          R"({"namespace":"n","events":[{"item_id":"a","meta":"\q"}]})",
                          R"({"namespace":"n","events":[{"item_id":"a"}]} trailing)",
                          R"({"namespace":"n","events":[{"item_id":"a"}]}})",
                          R"({"namespace":"n","events":[{"item_id":"a"}])",
                          R"({"namespace":"n","events":[{"item_id":"a","big":123456789012345678901234567890}]})"}) {
    const auto r = refusal(bad, false);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.code, "invalid_json") << bad << ": " << r.message;
  }
  const auto r = refusal("{\"item_id\":\"a\",\"namespace\":\"n\"} {}", true);
  EXPECT_EQ(r.code, "invalid_json");
  EXPECT_EQ(r.message.rfind("events[0] (line 1): not valid JSON: ", 0), 0u) << r.message;
  // Nesting past simdjson's depth limit in an ignored field is refused, not recursed into without end.
  const std::string deep = R"({"namespace":"n","events":[{"item_id":"a","meta":)" + std::string(5000, '[') + std::string(5000, ']') + "}]}";
  EXPECT_EQ(refusal(deep, false).code, "invalid_json");
}

// A field name that starts with a NUL byte (JSON "\u0000") used to give an
// empty message: what() ends at the first NUL. Found by fuzz/fuzz_event_body.
TEST(EventBodyParser, NulInAnUnknownFieldNameIsSpelledOutInTheMessage) {
  const auto r = refusal(R"({"\u0000events":[]})", false);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.code, "invalid_field");
  EXPECT_EQ(r.message, "\\0events: unknown field (expected \"events\" and optionally \"namespace\")");
}

// With padding readable past its end, a body is parsed in place: whatever
// the padding holds (here bytes that would break the JSON if read as part
// of it), the events are those of the body alone; NDJSON lines are parsed
// in place while the rest of the body covers their padding.
TEST(EventBodyParser, ABodyParsedInPlaceIgnoresWhatLiesPastItsEnd) {
  const std::string json = R"({"namespace":"n","events":[{"item_id":"a","weight":2},{"item_id":"b"}]})";
  const std::string ndjson = "{\"item_id\":\"a\",\"namespace\":\"n\"}\n\n{\"item_id\":\"b\",\"namespace\":\"m\",\"weight\":3}";
  for (const auto& [text, is_ndjson] : {std::pair{json, false}, std::pair{ndjson, true}}) {
    std::string padded = text + std::string(simdjson::SIMDJSON_PADDING, '"') + "{,]";
    const std::string_view body(padded.data(), text.size());
    simdjson::dom::parser parser;
    ParsedBatch b;
    parse_event_body(body, is_ndjson, "", kNow, {}, parser, b, padded.size() - text.size());
    ASSERT_EQ(b.events.size(), 2u) << text;
    EXPECT_EQ(b.events[0].item, "a");
    EXPECT_EQ(b.events[0].weight, is_ndjson ? 1.0 : 2.0);
    EXPECT_EQ(b.events[1].item, "b");
    EXPECT_EQ(b.events[1].weight, is_ndjson ? 3.0 : 1.0);
    EXPECT_EQ(b.namespaces[1], is_ndjson ? "m" : "n");
    // A body cut short is still refused, padding or not.
    ParsedBatch cut;
    simdjson::dom::parser p2;
    EXPECT_THROW(parse_event_body(body.substr(0, body.size() - 3), is_ndjson, "", kNow, {}, p2, cut, padded.size() - text.size() + 3),
                 ApiError);
  }
}

}  // namespace
}  // namespace ebb::server
