// append_json_string writes valid UTF-8 whatever it is given: well-formed
// sequences pass through, each maximal ill-formed one becomes \ufffd.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "ebb/io/json_writer.hpp"

namespace ebb::io {
namespace {

std::string as_json(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

TEST(JsonStringUtf8, WellFormedSequencesPassThrough) {
  for (const std::string s : {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF", "\xEE\x80\x80", "a\xC2\x80z"}) {
    EXPECT_EQ(as_json(s), "\"" + s + "\"");
  }
}

TEST(JsonStringUtf8, IllFormedSequencesBecomeReplacementCharacters) {
  const std::pair<std::string, std::string> cases[] = {
      {"\xFF", R"("\ufffd")"},
      {"\xC3\x28", R"("\ufffd(")"},                        // lead byte, then not a continuation
      {"\xED\xA0\x80", R"("\ufffd\ufffd\ufffd")"},         // a surrogate: ED takes only 80..9F
      {"\xC0\xAF", R"("\ufffd\ufffd")"},                   // overlong
      {"\xE0\x80\xAF", R"("\ufffd\ufffd\ufffd")"},         // overlong
      {"\xF4\x90\x80\x80", R"("\ufffd\ufffd\ufffd\ufffd")"},  // past U+10FFFF
      {"\xE2\x82", R"("\ufffd")"},                         // truncated at the end: one maximal prefix
      {"\xF0\x9F\x98" "a", R"("\ufffda")"},
      {"\x80" "a\xBF", R"("\ufffda\ufffd")"},              // continuation bytes without a lead
      {"\"\xFE\n", R"("\"\ufffd\n")"},
  };
  simdjson::dom::parser parser;
  for (const auto& [in, out] : cases) {
    EXPECT_EQ(as_json(in), out);
    simdjson::dom::element e;
    EXPECT_EQ(parser.parse(as_json(in)).get(e), simdjson::SUCCESS) << out;
  }
}

}  // namespace
}  // namespace ebb::io
