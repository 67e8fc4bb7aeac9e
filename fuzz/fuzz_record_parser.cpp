// `ebb top` / `ebb send` input lines (io/record_parser.hpp): plain, tsv, csv,
// json (NDJSON) and clf, with field specs by column number, header name or
// dotted path. Input: a digit choosing the format and field spec (kChoices,
// '0' plain ... '=' clf), a digit choosing the time format ('0' auto, '1'
// unix, '2' unix_ms, '3' rfc3339, '4' clf), then lines separated by '\n'.
// Checks: a line is a record, skipped, zero-weight or malformed with a
// reason, never an exception, except a header line missing a named column
// (InvalidArgument naming the flag, as make_record_parser documents for a
// spec the input cannot honour); a record has a non-empty key (no longer
// than its line unless the format rewrote it: json numbers), a finite
// weight > 0, and a finite time exactly when the parser has times; plain
// input's key is the line itself.
#include <cmath>

#include "ebb/core/error.hpp"
#include "ebb/io/record_parser.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb;
using io::FieldSpec;
using io::InputFormat;

struct Choice {
  InputFormat format;
  FieldSpec fields;
};

const Choice kChoices[] = {
    {InputFormat::plain, {}},
    {InputFormat::tsv, {}},
    {InputFormat::tsv, {"2", "1", "3"}},
    {InputFormat::tsv, {"key", "ts", "w"}},
    {InputFormat::csv, {}},
    {InputFormat::csv, {"2", "1", "3"}},
    {InputFormat::csv, {"product", "ts", "amount"}},
    {InputFormat::json, {}},
    {InputFormat::json, {"user.country", "ts", "w"}},
    {InputFormat::json, {"a/b.~c", "t.x", "n"}},
    {InputFormat::clf, {}},
    {InputFormat::clf, {"host", "time", "bytes"}},
    {InputFormat::clf, {"agent", "", "status"}},
    {InputFormat::clf, {"method", "time", ""}},
};

bool names_columns(const Choice& c) {
  auto named = [](const std::string& s) { return !s.empty() && (s[0] < '0' || s[0] > '9'); };
  return (c.format == InputFormat::tsv || c.format == InputFormat::csv) && (named(c.fields.key) || named(c.fields.time) || named(c.fields.weight));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const Choice& choice = kChoices[in.digit() % std::size(kChoices)];
  const auto time_format = static_cast<io::TimeFormat>(in.digit() % 5);
  io::KeyArena arena;
  const auto parser = io::make_record_parser(choice.format, choice.fields, time_format, arena);
  bool header_pending = names_columns(choice);

  std::string_view rest = in.rest();
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);

    io::Record record;
    std::string error;
    io::ParseStatus status;
    try {
      status = parser->parse(line, record, error);
    } catch (const InvalidArgument& e) {
      FUZZ_CHECK(header_pending);
      const std::string what = e.what();
      FUZZ_CHECK(what.starts_with("--key: ") || what.starts_with("--time: ") || what.starts_with("--weight: "));
      return 0;  // `ebb top` stops here (usage error)
    }
    switch (status) {
      case io::ParseStatus::record:
        FUZZ_CHECK(!record.key.empty());
        if (choice.format != InputFormat::json) FUZZ_CHECK(record.key.size() <= line.size());
        if (choice.format == InputFormat::plain) FUZZ_CHECK(record.key == line);
        FUZZ_CHECK(std::isfinite(record.weight) && record.weight > 0);
        FUZZ_CHECK(record.time.has_value() == parser->has_time());
        if (record.time) FUZZ_CHECK(std::isfinite(*record.time));
        break;
      case io::ParseStatus::zero_weight: break;
      case io::ParseStatus::skipped:
        if (!line.empty() && header_pending) header_pending = false;  // the header line was resolved
        break;
      case io::ParseStatus::malformed: FUZZ_CHECK(!error.empty()); break;
    }
    arena.reset();
  }
  return 0;
}
