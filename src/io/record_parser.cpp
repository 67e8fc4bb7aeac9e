#include "ebb/io/record_parser.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ebb/core/error.hpp"
#include "ebb/io/find_byte.hpp"
#include "field_values.hpp"

namespace ebb::io {
namespace {

using detail::read_weight;
using detail::TimeReader;

bool all_digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }); }

// RecordParser::parse_lines() with the per-line parse given (a parser
// passes its own, which then inlines instead of a virtual call a line).
template <typename Parse>
std::size_t parse_each(std::span<const Line> lines, ParsedLine* out, std::string& error, Parse parse) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].oversized) [[unlikely]] {
      out[i].status = ParseStatus::malformed;
      return i + 1;
    }
    out[i].status = parse(lines[i].text, out[i].record, error);
    if (out[i].status == ParseStatus::malformed) [[unlikely]] return i + 1;
  }
  return lines.size();
}

// ---------------------------------------------------------------- plain
class PlainParser final : public RecordParser {
 public:
  ParseStatus parse(std::string_view line, Record& out, std::string&) override {
    if (line.empty()) return ParseStatus::skipped;
    out = Record{line, std::nullopt, 1};
    return ParseStatus::record;
  }
  std::size_t parse_lines(std::span<const Line> lines, ParsedLine* out, std::string& error) override {
    return parse_each(lines, out, error, [this](std::string_view line, Record& record, std::string& e) { return PlainParser::parse(line, record, e); });
  }
  bool has_time() const noexcept override { return false; }
};

// ---------------------------------------------------------------- tsv / csv
// A column is chosen by 1-based number, or by header name (then the first
// line is a header and is resolved instead of counted).
struct Column {
  std::string name;  // empty when given by number or absent
  int index = -1;    // 0-based; -1 = absent
};

Column column_from(const std::string& spec, const char* flag, int fallback) {
  if (spec.empty()) return Column{"", fallback};
  if (all_digits(spec)) {
    const long n = std::strtol(spec.c_str(), nullptr, 10);
    if (n < 1 || n > 100000) throw InvalidArgument(std::string(flag) + ": column must be in [1, 100000] (got " + spec + ")");
    return Column{"", static_cast<int>(n - 1)};
  }
  return Column{spec, -1};
}

class DelimitedParser final : public RecordParser {
 public:
  DelimitedParser(char sep, const FieldSpec& fields, TimeFormat tf, KeyArena& arena)
      : sep_(sep),
        key_(column_from(fields.key, "--key", 0)),
        time_(column_from(fields.time, "--time", -1)),
        weight_(column_from(fields.weight, "--weight", -1)),
        times_(tf),
        arena_(arena) {
    need_header_ = !key_.name.empty() || !time_.name.empty() || !weight_.name.empty();
    max_index_ = std::max({key_.index, time_.index, weight_.index});
  }

  ParseStatus parse(std::string_view line, Record& out, std::string& error) override {
    if (line.empty()) return ParseStatus::skipped;
    if (sep_ == '\t' && !need_header_) return key_only() ? parse_tsv_key(line, out, error) : parse_tsv(line, out, error);
    if (!split(line, error)) return ParseStatus::malformed;
    if (need_header_) {
      resolve_header();
      need_header_ = false;
      return ParseStatus::skipped;
    }
    if (static_cast<int>(fields_.size()) <= max_index_) {
      error = "has " + std::to_string(fields_.size()) + " columns, needs " + std::to_string(max_index_ + 1);
      return ParseStatus::malformed;
    }
    out = Record{};
    out.key = fields_[key_.index];
    if (out.key.empty()) {
      error = "key column " + std::to_string(key_.index + 1) + " is empty";
      return ParseStatus::malformed;
    }
    if (time_.index >= 0) {
      out.time = times_.read(fields_[time_.index], error);
      if (!out.time) return ParseStatus::malformed;
    }
    if (weight_.index >= 0) return read_weight(fields_[weight_.index], out.weight, error);
    return ParseStatus::record;
  }
  bool has_time() const noexcept override { return time_.index >= 0 || !time_.name.empty(); }

  std::size_t parse_lines(std::span<const Line> lines, ParsedLine* out, std::string& error) override {
    if (sep_ != '\t' || need_header_) return RecordParser::parse_lines(lines, out, error);
    // TSV once the columns are known: parse_tsv() inline, line after line
    // (parse_tsv_key() when the key is all a line gives: `ebb top` untimed).
    if (key_only()) {
      return parse_each(lines, out, error, [this](std::string_view line, Record& record, std::string& e) {
        return line.empty() ? ParseStatus::skipped : parse_tsv_key(line, record, e);
      });
    }
    return parse_each(lines, out, error, [this](std::string_view line, Record& record, std::string& e) {
      return line.empty() ? ParseStatus::skipped : parse_tsv(line, record, e);
    });
  }

 private:
  // TSV once the columns are known: walk to the last column needed, taking
  // the wanted ones on the way (the same checks, in the same order, as the
  // split() path: column count, empty key, time, weight).
  // Inline into parse_lines(), its messages built out of line.
  [[gnu::always_inline]] ParseStatus parse_tsv(std::string_view line, Record& out, std::string& error) const {
    std::string_view key, time, weight;
    std::size_t pos = 0;
    // Lines of 16 to 64 bytes (most) whose key is not in the first column:
    // every tab at once, then each column ends at the next set bit (or the
    // line's end). (The first column alone needs one find_byte.)
    const bool masked = max_index_ > 0 && line.size() >= 16 && line.size() <= 64;
    std::uint64_t tabs = masked ? byte_mask_upto64(line.data(), line.size(), '\t') : 0;
    for (int column = 0;; ++column) {
      std::size_t tab;
      if (masked) {
        tab = tabs != 0 ? static_cast<std::size_t>(__builtin_ctzll(tabs)) : line.size();
        tabs &= tabs - 1;
      } else {
        tab = pos + find_byte(line.data() + pos, line.size() - pos, '\t');
      }
      const std::string_view field(line.data() + pos, tab - pos);
      if (column == key_.index) key = field;
      if (column == time_.index) time = field;
      if (column == weight_.index) weight = field;
      if (column == max_index_) break;
      if (tab == line.size()) [[unlikely]] return too_few_columns(column + 1, error);
      pos = tab + 1;
    }
    out.key = key;
    out.time.reset();
    out.weight = 1;
    if (key.empty()) [[unlikely]] return empty_key(error);
    if (time_.index >= 0) {
      double t = 0;
      if (!times_.read(time, t, error)) return ParseStatus::malformed;
      out.time = t;
    }
    if (weight_.index >= 0) return read_weight(weight, out.weight, error);
    return ParseStatus::record;
  }

  // Once the header (if any) is resolved.
  bool key_only() const noexcept { return time_.index < 0 && weight_.index < 0; }

  // parse_tsv() for a key column alone: the key starts after its column's
  // tab and ends at the next one, with no other column to look out for on
  // the way (the generic walk kept three fields and spilled them).
  [[gnu::always_inline]] ParseStatus parse_tsv_key(std::string_view line, Record& out, std::string& error) const {
    const int column = key_.index;
    std::size_t start = 0, end;
    if (column > 0 && line.size() >= 16 && line.size() <= 64) {
      std::uint64_t tabs = byte_mask_upto64(line.data(), line.size(), '\t');
      for (int c = 0; c < column; ++c) {
        if (tabs == 0) [[unlikely]] return too_few_columns(c + 1, error);
        start = static_cast<std::size_t>(__builtin_ctzll(tabs)) + 1;
        tabs &= tabs - 1;
      }
      end = tabs != 0 ? static_cast<std::size_t>(__builtin_ctzll(tabs)) : line.size();
    } else {
      for (int c = 0;; ++c) {
        end = start + find_byte(line.data() + start, line.size() - start, '\t');
        if (c == column) break;
        if (end == line.size()) [[unlikely]] return too_few_columns(c + 1, error);
        start = end + 1;
      }
    }
    out.key = std::string_view(line.data() + start, end - start);
    out.time.reset();
    out.weight = 1;
    if (out.key.empty()) [[unlikely]] return empty_key(error);
    return ParseStatus::record;
  }

  bool split(std::string_view line, std::string& error) {
    fields_.clear();
    if (sep_ == '\t') {
      // Columns past the last one needed are never looked at (until the
      // header is resolved, all of them are).
      const std::size_t needed = need_header_ ? SIZE_MAX : static_cast<std::size_t>(max_index_) + 1;
      std::size_t pos = 0;
      for (;;) {
        const std::size_t tab = pos + find_byte(line.data() + pos, line.size() - pos, '\t');
        fields_.push_back(line.substr(pos, tab - pos));
        if (tab == line.size() || fields_.size() == needed) return true;
        pos = tab + 1;
      }
    }
    // RFC 4180: a quoted field may hold separators and "" for a quote. A
    // field that needs unescaping is copied into the arena.
    std::size_t pos = 0;
    for (;;) {
      if (pos < line.size() && line[pos] == '"') {
        std::string value;
        std::size_t i = pos + 1;
        bool closed = false;
        while (i < line.size()) {
          if (line[i] == '"') {
            if (i + 1 < line.size() && line[i + 1] == '"') {
              value += '"';
              i += 2;
              continue;
            }
            closed = true;
            ++i;
            break;
          }
          value += line[i++];
        }
        if (!closed) {
          error = "unterminated quoted field (a quoted field cannot span lines)";
          return false;
        }
        if (i < line.size() && line[i] != ',') {
          error = "text after a closing quote in column " + std::to_string(fields_.size() + 1);
          return false;
        }
        fields_.push_back(arena_.keep(value));
        if (i >= line.size()) return true;
        pos = i + 1;
      } else {
        const std::size_t comma = line.find(',', pos);
        fields_.push_back(line.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
        if (comma == std::string_view::npos) return true;
        pos = comma + 1;
      }
    }
  }

  [[gnu::cold, gnu::noinline]] ParseStatus too_few_columns(int columns, std::string& error) const {
    error = "has " + std::to_string(columns) + " columns, needs " + std::to_string(max_index_ + 1);
    return ParseStatus::malformed;
  }
  [[gnu::cold, gnu::noinline]] ParseStatus empty_key(std::string& error) const {
    error = "key column " + std::to_string(key_.index + 1) + " is empty";
    return ParseStatus::malformed;
  }

  void resolve_header() {
    auto resolve = [&](Column& c, const char* flag) {
      if (c.name.empty()) return;
      auto it = std::find(fields_.begin(), fields_.end(), c.name);
      if (it == fields_.end()) throw InvalidArgument(std::string(flag) + ": no column named '" + c.name + "' in the header line");
      c.index = static_cast<int>(it - fields_.begin());
    };
    resolve(key_, "--key");
    resolve(time_, "--time");
    resolve(weight_, "--weight");
    max_index_ = std::max({key_.index, time_.index, weight_.index});
  }

  char sep_;
  Column key_, time_, weight_;
  TimeReader times_;
  KeyArena& arena_;
  bool need_header_ = false;
  int max_index_ = 0;
  std::vector<std::string_view> fields_;
};

// ---------------------------------------------------------------- json
std::string to_pointer(const std::string& dotted) {
  std::string p;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = dotted.find('.', start);
    p += '/';
    for (char c : dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start)) {
      if (c == '~') p += "~0";
      else if (c == '/') p += "~1";
      else p += c;
    }
    if (dot == std::string::npos) return p;
    start = dot + 1;
  }
}

class JsonParser final : public RecordParser {
 public:
  JsonParser(const FieldSpec& fields, TimeFormat tf, KeyArena& arena)
      : key_name_(fields.key.empty() ? "item_id" : fields.key),
        time_name_(fields.time),
        weight_name_(fields.weight),
        key_(to_pointer(key_name_)),
        time_(time_name_.empty() ? "" : to_pointer(time_name_)),
        weight_(weight_name_.empty() ? "" : to_pointer(weight_name_)),
        times_(tf),
        arena_(arena) {}

  ParseStatus parse(std::string_view line, Record& out, std::string& error) override {
    if (line.find_first_not_of(" \t") == std::string_view::npos) return ParseStatus::skipped;
    simdjson::dom::element doc;
    if (auto err = parser_.parse(line.data(), line.size()).get(doc)) {
      error = std::string("invalid JSON: ") + simdjson::error_message(err);
      return ParseStatus::malformed;
    }
    out = Record{};
    simdjson::dom::element v;
    if (doc.at_pointer(key_).get(v)) {
      error = "no field '" + key_name_ + "'";
      return ParseStatus::malformed;
    }
    if (v.is_string()) {
      out.key = arena_.keep(std::string_view(v.get_string().value_unsafe()));
    } else if (v.is_number()) {
      out.key = arena_.keep(simdjson::minify(v));
    } else {
      error = "field '" + key_name_ + "' is not a string or number";
      return ParseStatus::malformed;
    }
    if (out.key.empty()) {
      error = "field '" + key_name_ + "' is empty";
      return ParseStatus::malformed;
    }
    if (!time_.empty()) {
      if (doc.at_pointer(time_).get(v)) {
        error = "no field '" + time_name_ + "'";
        return ParseStatus::malformed;
      }
      if (v.is_number()) {
        out.time = times_.from_number(v.get_double().value_unsafe());
      } else if (v.is_string()) {
        out.time = times_.read(v.get_string().value_unsafe(), error);
        if (!out.time) return ParseStatus::malformed;
      } else {
        error = "field '" + time_name_ + "' is not a number or a timestamp string";
        return ParseStatus::malformed;
      }
    }
    if (!weight_.empty()) {
      if (doc.at_pointer(weight_).get(v)) {
        error = "no field '" + weight_name_ + "'";
        return ParseStatus::malformed;
      }
      if (v.is_number()) return read_weight(simdjson::minify(v), out.weight, error);
      if (v.is_string()) return read_weight(v.get_string().value_unsafe(), out.weight, error);
      error = "field '" + weight_name_ + "' is not a number";
      return ParseStatus::malformed;
    }
    return ParseStatus::record;
  }
  bool has_time() const noexcept override { return !time_.empty(); }

 private:
  std::string key_name_, time_name_, weight_name_;
  std::string key_, time_, weight_;  // JSON pointers
  TimeReader times_;
  KeyArena& arena_;
  simdjson::dom::parser parser_;
};

// ---------------------------------------------------------------- clf
// host ident user [dd/Mon/yyyy:HH:MM:SS +zzzz] "METHOD path PROTO" status bytes ["referer" "agent"]
enum class ClfField { host, ident, user, time, request, method, path, protocol, status, bytes, referer, agent };

ClfField clf_field(const std::string& name, const char* flag) {
  static const std::pair<const char*, ClfField> kNames[] = {
      {"host", ClfField::host},         {"ident", ClfField::ident},   {"user", ClfField::user},
      {"time", ClfField::time},         {"request", ClfField::request}, {"method", ClfField::method},
      {"path", ClfField::path},         {"protocol", ClfField::protocol}, {"status", ClfField::status},
      {"bytes", ClfField::bytes},       {"referer", ClfField::referer}, {"agent", ClfField::agent}};
  for (const auto& [n, f] : kNames) {
    if (name == n) return f;
  }
  throw InvalidArgument(std::string(flag) + ": unknown clf field '" + name +
                        "' (expected host, ident, user, time, request, method, path, protocol, status, bytes, referer or agent)");
}

class ClfParser final : public RecordParser {
 public:
  ClfParser(const FieldSpec& fields, TimeFormat tf)
      : key_(clf_field(fields.key.empty() ? "path" : fields.key, "--key")),
        time_(clf_field(fields.time.empty() ? "time" : fields.time, "--time")),
        has_weight_(!fields.weight.empty()),
        weight_(has_weight_ ? clf_field(fields.weight, "--weight") : ClfField::bytes),
        times_(tf == TimeFormat::auto_detect ? TimeFormat::clf : tf) {}

  ParseStatus parse(std::string_view line, Record& out, std::string& error) override {
    if (line.empty()) return ParseStatus::skipped;
    std::string_view f[12];
    if (!split(line, f, error)) return ParseStatus::malformed;
    out = Record{};
    out.key = f[static_cast<int>(key_)];
    if (out.key.empty()) {
      error = "key field is empty";
      return ParseStatus::malformed;
    }
    out.time = times_.read(f[static_cast<int>(time_)], error);
    if (!out.time) return ParseStatus::malformed;
    if (has_weight_) return read_weight(f[static_cast<int>(weight_)], out.weight, error);
    return ParseStatus::record;
  }
  bool has_time() const noexcept override { return true; }

 private:
  static bool token(std::string_view line, std::size_t& pos, std::string_view& out) {
    const std::size_t sp = line.find(' ', pos);
    out = line.substr(pos, sp == std::string_view::npos ? std::string_view::npos : sp - pos);
    pos = sp == std::string_view::npos ? line.size() : sp + 1;
    return !out.empty();
  }
  static bool delimited(std::string_view line, std::size_t& pos, char open, char close, std::string_view& out) {
    if (pos >= line.size() || line[pos] != open) return false;
    std::size_t i = pos + 1;
    while (i < line.size() && line[i] != close) i += (line[i] == '\\' && open == '"') ? 2 : 1;
    if (i >= line.size()) return false;
    out = line.substr(pos + 1, i - pos - 1);
    pos = i + 1;
    if (pos < line.size() && line[pos] == ' ') ++pos;
    return true;
  }

  static bool split(std::string_view line, std::string_view* f, std::string& error) {
    std::size_t pos = 0;
    using F = ClfField;
    auto at = [&](F x) -> std::string_view& { return f[static_cast<int>(x)]; };
    if (!token(line, pos, at(F::host)) || !token(line, pos, at(F::ident)) || !token(line, pos, at(F::user))) {
      error = "not a Common Log Format line (expected host ident user [time] \"request\" status bytes)";
      return false;
    }
    if (!delimited(line, pos, '[', ']', at(F::time))) {
      error = "no [time] field";
      return false;
    }
    if (!delimited(line, pos, '"', '"', at(F::request))) {
      error = "no \"request\" field";
      return false;
    }
    std::string_view req = at(F::request);
    const std::size_t s1 = req.find(' ');
    const std::size_t s2 = s1 == std::string_view::npos ? s1 : req.find(' ', s1 + 1);
    at(F::method) = req.substr(0, s1);
    at(F::path) = s1 == std::string_view::npos ? std::string_view() : req.substr(s1 + 1, s2 == std::string_view::npos ? std::string_view::npos : s2 - s1 - 1);
    at(F::protocol) = s2 == std::string_view::npos ? std::string_view() : req.substr(s2 + 1);
    if (!token(line, pos, at(F::status)) || !token(line, pos, at(F::bytes))) {
      error = "no status and bytes fields";
      return false;
    }
    // Combined Log Format extras are optional.
    if (delimited(line, pos, '"', '"', at(F::referer))) delimited(line, pos, '"', '"', at(F::agent));
    return true;
  }

  ClfField key_, time_;
  bool has_weight_;
  ClfField weight_;
  TimeReader times_;
};

}  // namespace

std::size_t RecordParser::parse_lines(std::span<const Line> lines, ParsedLine* out, std::string& error) {
  return parse_each(lines, out, error, [this](std::string_view line, Record& record, std::string& e) { return parse(line, record, e); });
}

InputFormat parse_input_format(std::string_view name) {
  if (name == "plain") return InputFormat::plain;
  if (name == "tsv") return InputFormat::tsv;
  if (name == "csv") return InputFormat::csv;
  if (name == "json" || name == "ndjson") return InputFormat::json;
  if (name == "clf") return InputFormat::clf;
  throw InvalidArgument("unknown format '" + std::string(name) + "' (expected plain, tsv, csv, json or clf)");
}

const char* input_format_name(InputFormat f) noexcept {
  switch (f) {
    case InputFormat::plain: return "plain";
    case InputFormat::tsv: return "tsv";
    case InputFormat::csv: return "csv";
    case InputFormat::json: return "json";
    case InputFormat::clf: return "clf";
  }
  return "?";
}

std::unique_ptr<RecordParser> make_record_parser(InputFormat format, const FieldSpec& fields, TimeFormat time_format,
                                                 KeyArena& arena) {
  switch (format) {
    case InputFormat::plain:
      if (!fields.key.empty() || !fields.time.empty() || !fields.weight.empty()) {
        throw InvalidArgument("--key/--time/--weight: plain input has no fields (each line is a key); use tsv, csv, json or clf");
      }
      return std::make_unique<PlainParser>();
    case InputFormat::tsv: return std::make_unique<DelimitedParser>('\t', fields, time_format, arena);
    case InputFormat::csv: return std::make_unique<DelimitedParser>(',', fields, time_format, arena);
    case InputFormat::json: return std::make_unique<JsonParser>(fields, time_format, arena);
    case InputFormat::clf: return std::make_unique<ClfParser>(fields, time_format);
  }
  throw InvalidArgument("unknown input format");
}

}  // namespace ebb::io
