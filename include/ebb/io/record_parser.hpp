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
#include <string>
#include <string_view>

#include "ebb/io/key_arena.hpp"
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

class RecordParser {
 public:
  virtual ~RecordParser() = default;
  // `line` has no terminator. Keys point into `line` or into the arena.
  virtual ParseStatus parse(std::string_view line, Record& out, std::string& error) = 0;
  // Whether records carry a time (then the stream runs on event time).
  virtual bool has_time() const noexcept = 0;
};

// Throws InvalidArgument for a field spec the format cannot honour
// ("--time: plain input has no fields").
std::unique_ptr<RecordParser> make_record_parser(InputFormat format, const FieldSpec& fields, TimeFormat time_format,
                                                 KeyArena& arena);

}  // namespace ebb::io
