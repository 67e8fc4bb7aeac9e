#pragma once
// Input formats of `ebb top` (and later `ebb send`): one record per line.
//
//   plain  each line is a key
//   tsv    tab-separated columns;  --key/--time/--weight: 1-based column, or a
//   csv    RFC 4180 columns        header name (then the first line is a header)
//   json   one JSON object per line; fields are dotted paths (a.b.c)
//   clf    Common/Combined Log Format; fields: host, ident, user, time,
//          request, method, path, protocol, status, bytes, referer, agent
//
// A parser never throws on bad input lines: it reports them so the caller
// can count them (and stop on the first one under --strict).
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ebb/io/key_arena.hpp"
#include "ebb/io/line_reader.hpp"
#include "ebb/io/time_format.hpp"

namespace ebb::io {

enum class InputFormat { plain, tsv, csv, json, clf };
InputFormat parse_input_format(std::string_view name);  // throws InvalidArgument
const char* input_format_name(InputFormat f) noexcept;

struct FieldSpec {
  std::string key;     // empty: the format's default
  std::string time;    // empty: the format's default (only clf has one)
  std::string weight;  // empty: weight 1
};

struct Record {
  std::string_view key;
  std::optional<double> time;
  double weight = 1;
};

enum class ParseStatus {
  record,       // `out` holds a record
  skipped,      // a blank line or a header line: nothing to count, nothing wrong
  zero_weight,  // a valid line whose weight is 0 or "-" (e.g. CLF bytes of a 304)
  malformed,    // `error` says what is wrong
};

// What parse_lines() made of one line.
struct ParsedLine {
  ParseStatus status;
  Record record;  // when status is record
};

class RecordParser {
 public:
  virtual ~RecordParser() = default;
  // `line` has no terminator. Keys point into `line` or into the arena.
  virtual ParseStatus parse(std::string_view line, Record& out, std::string& error) = 0;
  // parse() for lines in turn, into out[0, ...): one call for a run of
  // lines instead of one per line. Stops after the first line that is
  // oversized (not parsed: its status says malformed, `error` is left as it
  // is) or malformed (`error` says why), so a caller can act on it before
  // any later line is parsed; returns how many lines it consumed.
  virtual std::size_t parse_lines(std::span<const Line> lines, ParsedLine* out, std::string& error);
  // Whether records carry a time (then the stream runs on event time).
  virtual bool has_time() const noexcept = 0;
};

// Throws InvalidArgument for a field spec the format cannot honour
// ("--time: plain input has no fields").
std::unique_ptr<RecordParser> make_record_parser(InputFormat format, const FieldSpec& fields, TimeFormat time_format,
                                                 KeyArena& arena);

}  // namespace ebb::io
