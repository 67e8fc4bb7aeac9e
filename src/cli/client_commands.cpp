#include "client_commands.hpp"

#include <charconv>
#include <cmath>

#include <simdjson.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <algorithm>
#include <thread>
#include <random>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "ebb/core/clock.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/core/error.hpp"
#include "ebb/engine/answers.hpp"
#include "ebb/io/json_writer.hpp"
#include "ebb/core/percent_encoding.hpp"
#include "ebb/io/http_client.hpp"
#include "ebb/service/access_tokens.hpp"
#include "byte_size_transform.hpp"
#include "duration_validator.hpp"
#include "input_pipeline.hpp"
#include "top_output.hpp"

namespace ebb::cli {
namespace {

// The server's error message, or the body when it is not an error document.
std::string server_error(const io::HttpResult& r) {
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  std::string_view message;
  if (!p.parse(r.body).get(doc) && !doc["error"]["message"].get(message)) return std::string(message);
  return r.body.empty() ? "(no body)" : r.body;
}

std::string url_encode(const std::string& s) { return percent_encode(s, "-_.~"); }

// "Authorization: Bearer <token>" from the first token of a token file (the
// format of ebb serve --auth-token-file), or nothing without a file.
io::HttpHeaders auth_headers(const std::string& token_file) {
  if (token_file.empty()) return {};
  try {
    return {{"Authorization", "Bearer " + service::AccessTokens::read_file(token_file).front()}};
  } catch (const std::runtime_error& e) {
    throw Fatal{e.what()};
  }
}

// How long to wait before retrying: the server's Retry-After (seconds, at
// most 30), else 0.1 s doubling per attempt up to 5 s.
std::chrono::milliseconds retry_delay(const io::HttpResult& r, unsigned attempt) {
  for (const auto& [name, value] : r.headers) {
    if (name == "Retry-After" || name == "retry-after") {
      unsigned seconds = 0;
      if (std::sscanf(value.c_str(), "%u", &seconds) == 1) return std::chrono::milliseconds(1000 * std::min(seconds, 30u));
    }
  }
  return std::chrono::milliseconds(std::min<unsigned>(5000, 100u << std::min(attempt, 6u)));
}

io::HttpResult call(io::HttpClient& client, const std::string& url, const std::string& method, const std::string& target,
                    const std::string& body, const io::HttpHeaders& headers) {
  try {
    return client.request(method, target, body, "application/json", headers);
  } catch (const std::exception& e) {
    throw Fatal{"cannot reach " + url + ": " + e.what()};
  }
}

std::string body_of(const std::string& ns, const engine::PreparedBatch& events, std::size_t begin, std::size_t end, bool timed) {
  io::JsonWriter w;
  w.begin_object().key("namespace").value(ns).key("events").begin_array();
  for (std::size_t i = begin; i < end; ++i) {
    w.begin_object().key("item_id").value(events.items[i]);
    if (timed) w.key("timestamp").value(events.times[i]);
    if (events.weights[i] != 1) w.key("weight").value(events.weights[i]);
    w.end_object();
  }
  w.end_array().end_object();
  return w.take();
}

engine::TopKAnswer answer_from(simdjson::dom::element doc) {
  engine::TopKAnswer a;
  std::string_view half_life, window_length, source;
  if (!doc["half_life"].get(half_life)) a.view = engine::ViewSpec::decayed(parse_duration(half_life));
  if (!doc["window_length"].get(window_length)) a.view = engine::ViewSpec::sliding(parse_duration(window_length));
  a.as_of = double(doc["as_of"]);
  double number = 0;
  if (!doc["window"]["start"].get(number)) a.window_start = number;
  if (!doc["window"]["end"].get(number)) a.window_end = number;
  if (!doc["granularity"].get(number)) a.granularity = number;
  if (!doc["source"].get(source)) a.source = source;
  a.total = double(doc["total"]);
  for (auto item : simdjson::dom::array(doc["items"])) {
    a.items.push_back(CountedItem{std::string(std::string_view(item["item_id"])), double(item["estimated_count"]),
                                  double(item["lower_bound"]), double(item["upper_bound"])});
  }
  auto acc = doc["accuracy"];
  a.accuracy.type = std::string(std::string_view(acc["type"]));
  if (a.accuracy.type == "exact") {
    a.accuracy.items = uint64_t(acc["items"]);
    a.accuracy.evicted_items = uint64_t(acc["evicted_items"]);
  }
  a.accuracy.epsilon = double(acc["epsilon"]);
  a.accuracy.confidence = double(acc["confidence"]);
  a.accuracy.max_error = double(acc["max_error"]);
  a.accuracy.guarantee_threshold = double(acc["guarantee_threshold"]);
  a.accuracy.candidates = static_cast<std::uint32_t>(uint64_t(acc["candidates"]));
  a.accuracy.undersized = bool(acc["undersized"]);
  std::uint64_t bytes = 0;
  if (!acc["memory_budget"].get(bytes)) a.accuracy.memory_budget = bytes;
  if (!acc["memory_bytes"].get(bytes)) a.accuracy.memory_bytes = bytes;
  bool tail_uncertain = false;  // absent from servers before it
  if (!acc["tail_uncertain"].get(tail_uncertain)) a.accuracy.tail_uncertain = tail_uncertain;
  double unlisted = 0;
  if (!acc["unlisted_upper_bound"].get(unlisted)) a.unlisted_upper = unlisted;
  return a;
}


}  // namespace

CLI::App* add_send_command(CLI::App& app, SendOptions& o) {
  auto* cmd = app.add_subcommand("send", "Stream files or stdin to an ebb server in batches (POST /events)");
  cmd->add_option("files", o.files, "Input files (stdin when none or \"-\")");
  cmd->add_option("--namespace,-n", o.ns, "Namespace to send to")->required();
  cmd->add_option("--url", o.url, "Server")->capture_default_str();
  cmd->add_option("--auth-token-file", o.auth_token_file, "Send the first token of this file as 'Authorization: Bearer' (a server with --auth-token-file)");
  cmd->add_option("--format", o.format, "plain, tsv, csv, json, clf (as for ebb top)")
      ->capture_default_str()
      ->check(CLI::IsMember({"plain", "tsv", "csv", "json", "ndjson", "clf"}));
  cmd->add_option("--key", o.fields.key, "Key field (as for ebb top)");
  cmd->add_option("--time", o.fields.time, "Time field; without one the server stamps events when it receives them");
  cmd->add_option("--weight", o.fields.weight, "Weight field");
  cmd->add_option("--time-format", o.time_format, "unix, unix_ms, rfc3339, clf or auto (each value by its shape, as for ebb top)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "unix", "unix_ms", "rfc3339", "clf"}));
  cmd->add_option("--max-time-jump", o.max_time_jump,
                  "With times: an event more than DUR ahead of the newest event time so far is a malformed line")
      ->capture_default_str()
      ->check(duration_validator());
  cmd->add_option("--batch", o.batch, "Events per request")->capture_default_str()->check(CLI::Range(1ul, 1'000'000ul));
  cmd->add_option("--retries", o.retries,
                  "Retries of a batch the server could not take (429, 503, a lost connection), after its Retry-After; each batch "
                  "carries an Idempotency-Key, so a retry never counts twice")
      ->capture_default_str()
      ->check(CLI::Range(0u, 100u));
  cmd->add_option("--max-key-bytes", o.max_key_bytes, "Longer keys are malformed lines (match the server's --max-item-bytes)")
      ->capture_default_str()
      ->transform(byte_size_transform())->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-line-bytes", o.max_line_bytes, "Longer lines are malformed")->capture_default_str()->transform(byte_size_transform())->check(CLI::Range(16, 64 << 20));
  cmd->add_flag("--strict", o.strict, "Stop at the first malformed line (exit 1)");
  cmd->add_flag("--no-progress", o.no_progress, "No progress bar on stderr");
  return cmd;
}

CLI::App* add_query_command(CLI::App& app, QueryOptions& o) {
  auto* cmd = app.add_subcommand("query", "Ask an ebb server for a top-K list (GET /top-k; for one user: POST /top-k/personalised), item counts (POST /counts), trending items or anomalies, hot keys, or a distribution (GET /dist)");
  auto* ns = cmd->add_option("--namespace,-n", o.ns, "Namespace (every question but --dist and --dbsize)");
  cmd->add_option("--url", o.url, "Server")->capture_default_str();
  cmd->add_option("--auth-token-file", o.auth_token_file, "Send the first token of this file as 'Authorization: Bearer' (a server with --auth-reads)");
  cmd->add_option("-k", o.k, "Items (default: the namespace's k)")->check(CLI::Range(1, 1000));
  auto* kopt = cmd->get_option("-k");
  auto* hl = cmd->add_option("--half-life", o.half_life, "A decayed view the namespace keeps")->check(duration_validator());
  auto* win = cmd->add_option("--window", o.window, "all (all-time) or a window the namespace keeps (1m, 1h, ...)");
  hl->excludes(win);
  auto* ts = cmd->add_option("--timestamp", o.timestamp, "As it was at this time (seconds since the epoch): from a window's buckets while they reach, else from history");
  auto* from = cmd->add_option("--from", o.history_from, "With --to and one --item: the item's persisted history over [FROM, TO] (GET /history)");
  auto* to = cmd->add_option("--to", o.history_to, "End of the history span (seconds since the epoch)");
  from->needs(to);
  to->needs(from);
  from->excludes(ts);
  auto* item = cmd->add_option("--item", o.items, "Count these items instead of listing the top K (repeatable)")->allow_extra_args(false);
  auto* hot = cmd->add_flag("--hot-keys", o.hot_keys, "The namespace's hot keys (GET /hot-keys): rate at or above its hot_key_threshold");
  auto* follow = cmd->add_flag("--follow,-f", o.follow, "With --hot-keys: print keys as they turn hot and cool, until interrupted (GET /hot-keys/stream)");
  follow->needs(hot);
  for (auto* other : {item, ts, from, hl, win}) hot->excludes(other);
  auto* trending = cmd->add_flag("--trending", o.trending, "Items rising fastest against their own longer-term rate (GET /trending)");
  auto* s = cmd->add_option("--short", o.short_half_life, "With --trending: the recent half-life (default: the namespace's shortest)")
                ->check(duration_validator());
  auto* l = cmd->add_option("--long", o.long_half_life, "With --trending: the usual-rate half-life (default: the namespace's longest)")
                ->check(duration_validator());
  auto* mc = cmd->add_option("--min-count", o.min_count, "With --trending or --anomalies: events an item needs (default 5)")
                 ->check(CLI::NonNegativeNumber);
  for (auto* opt : {s, l}) opt->needs(trending);
  for (auto* other : {item, ts, from, hl, win, hot}) trending->excludes(other);
  auto* anomalies = cmd->add_flag("--anomalies", o.anomalies,
                                  "Items whose rate or rank in --window jumped against --baseline (a longer window) or --baseline-offset (GET /anomalies)");
  auto* audit = cmd->add_flag("--audit", o.audit,
                              "The accuracy self-audit's last figures per view: estimates against exact counts (GET /namespaces/{name})");
  auto* base = cmd->add_option("--baseline", o.baseline, "With --anomalies: a longer window the namespace keeps, ending at the same time")
                   ->check(duration_validator());
  auto* offset = cmd->add_option("--baseline-offset", o.baseline_offset, "With --anomalies: the same window this long before (7d)")
                     ->check(duration_validator());
  auto* mj = cmd->add_option("--min-jump", o.min_jump, "With --anomalies: times the baseline's expected count (default 3)")->check(CLI::NonNegativeNumber);
  auto* mr = cmd->add_option("--min-rank-jump", o.min_rank_jump, "With --anomalies: ranks risen (default 50)")->check(CLI::Range(0ul, 1000ul));
  auto* ms = cmd->add_option("--min-score", o.min_score, "With --anomalies: the rise in standard deviations (default 4)")->check(CLI::NonNegativeNumber);
  for (auto* opt : {base, offset, mj, mr, ms}) opt->needs(anomalies);
  base->excludes(offset);
  anomalies->needs(win);
  for (auto* other : {item, from, hl, hot, trending}) anomalies->excludes(other);
  for (auto* other : {item, from, hl, win, ts, hot, trending, anomalies}) audit->excludes(other);
  mc->excludes(hot);  // and needs --trending or --anomalies: run_query checks
  auto* user = cmd->add_option("--user-item", o.user_items,
                               "The top K re-ranked for a user who touched these items (POST /top-k/personalised; repeatable): "
                               "ID, ID=WEIGHT, ID@TIMESTAMP or ID=WEIGHT@TIMESTAMP (an id ending in =N or @N: add =1)")
                   ->allow_extra_args(false);
  auto* alpha = cmd->add_option("--alpha", o.alpha, "With --user-item: the global list's share of the score, in [0, 1] (default 0.5)")
                    ->check(CLI::Range(0.0, 1.0));
  alpha->needs(user);
  for (auto* other : {item, ts, from, hot, trending, anomalies}) user->excludes(other);
  auto* dist = cmd->add_option("--dist", o.distribution, "A distribution that forgets (GET /dist): its bins, most probable first");
  auto* field = cmd->add_option("--field", o.fields, "With --dist: these bins, in this order (GET /get; repeatable)")->allow_extra_args(false);
  auto* most = cmd->add_option("--most-probable", o.most_probable, "With --dist: the N most probable bins (GET /nmostprobable)")
                   ->check(CLI::Range(1ul, 10'000'000ul));
  auto* rate = cmd->add_option("--rate", o.rate, "With --dist: decay from the last write at this rate (1/s) instead of the distribution's")
                   ->check(CLI::NonNegativeNumber);
  auto* dbsize = cmd->add_flag("--dbsize", o.dbsize, "The number of distributions the server holds (GET /dbsize)");
  for (auto* opt : {field, most, rate}) opt->needs(dist);
  field->excludes(most);
  for (auto* d : {dist, dbsize}) {
    d->excludes(ns);
    for (auto* other : {item, ts, from, hl, win, hot, trending, kopt, user, anomalies, audit}) d->excludes(other);
  }
  dist->excludes(dbsize);
  cmd->add_flag("--json", o.json, "Print the server's JSON as it is (with --follow: one {\"event\", \"data\"} object a line)");
  return cmd;
}

int run_send(const SendOptions& o) {
  try {
    const auto endpoint = io::parse_http_url(o.url);
    io::KeyArena arena;
    auto parser = io::make_record_parser(io::parse_input_format(o.format), o.fields, io::parse_time_format(o.time_format), arena);
    const bool timed = parser->has_time();
    engine::NamespaceConfig rules;  // the checks the server will make, so problems carry file:line here
    rules.max_item_bytes = o.max_key_bytes;
    std::vector<std::string> files = o.files;
    if (files.empty()) files.push_back("-");
    std::vector<Source> sources;
    for (const auto& f : files) sources.push_back(open_source(f));
    PipelineOptions popts;
    popts.strict = o.strict;
    popts.max_line_bytes = o.max_line_bytes;
    popts.progress = !o.no_progress && ::isatty(STDERR_FILENO);
    // A key that is not UTF-8 cannot be put into the batch's JSON as it
    // is, and the server would refuse the whole batch over it: it is
    // reported as its own line and left out instead.
    popts.require_utf8 = true;
    popts.max_time_jump = parse_duration(o.max_time_jump);
    io::HttpClient client(endpoint);
    const auto headers = auth_headers(o.auth_token_file);
    // Batches are keyed "<run>-<n>": a retry, or a batch the server took
    // just before the connection broke, counts once.
    const std::string run_id = [] {
      std::random_device rd;
      char id[40];
      std::snprintf(id, sizeof id, "ebb-send-%08x%08x", rd(), rd());
      return std::string(id);
    }();
    InputPipeline input(std::move(sources), std::move(parser), arena, rules, popts);
    std::uint64_t sent = 0, requests = 0;
    const auto start = std::chrono::steady_clock::now();
    while (auto chunk = input.next()) {
      for (std::size_t begin = 0; begin < chunk->size(); begin += o.batch) {
        const std::size_t end = std::min(chunk->size(), begin + o.batch);
        const std::string body = body_of(o.ns, chunk->batch, begin, end, timed);
        io::HttpHeaders batch_headers = headers;
        batch_headers.emplace_back("Idempotency-Key", run_id + "-" + std::to_string(requests));
        for (unsigned attempt = 0;; ++attempt) {
          io::HttpResult r;
          std::string failure;
          try {
            r = client.request("POST", "/events", body, "application/json", batch_headers);
          } catch (const std::exception& e) {
            failure = std::string("cannot reach ") + o.url + ": " + e.what();
          }
          if (failure.empty() && r.status == 204) break;
          const bool transient = !failure.empty() || r.status == 429 || r.status == 503;
          if (failure.empty()) failure = "the server refused a batch (HTTP " + std::to_string(r.status) + "): " + server_error(r);
          if (!transient || attempt >= o.retries) {
            throw Fatal{failure + "; " + std::to_string(sent) + " events sent before it were accepted" +
                        (transient ? " (after " + std::to_string(attempt) + " retries)" : "")};
          }
          std::this_thread::sleep_for(retry_delay(r, attempt));
        }
        sent += end - begin;
        ++requests;
      }
      input.recycle(std::move(chunk));
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "ebb send: %llu events in %llu requests to '%s' at %s (%.0f events/s)\n", static_cast<unsigned long long>(sent),
                 static_cast<unsigned long long>(requests), o.ns.c_str(), o.url.c_str(), secs > 0 ? sent / secs : 0.0);
    report_input_problems("ebb send", input.tally(), input.problems(), input.warnings());
    return 0;
  } catch (const Fatal& f) {
    std::fprintf(stderr, "ebb send: %s\n", f.message.c_str());
    return 1;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ebb send: %s\n", e.what());
    return 2;
  }
}

namespace {

// Seconds as a plain decimal: never "1.7e+09" (a '+' in a URL reads as a space).
std::string fixed_decimal(double v) {
  char t[32];
  auto res = std::to_chars(t, t + sizeof t, v, std::chars_format::fixed);
  return std::string(t, res.ptr);
}

// The answer's body on 200 (Fatal otherwise); nullopt when --json printed it as it is.
std::optional<std::string> answer_body(io::HttpClient& client, const QueryOptions& o, const char* method, const std::string& target,
                                       const std::string& body, const std::vector<std::pair<std::string, std::string>>& headers) {
  auto r = call(client, o.url, method, target, body, headers);
  if (r.status != 200) throw Fatal{"HTTP " + std::to_string(r.status) + ": " + server_error(r)};
  if (!o.json) return std::move(r.body);
  std::printf("%s\n", r.body.c_str());
  return std::nullopt;
}


// "ID[=WEIGHT][@TIMESTAMP]", in that order: a suffix that is no number
// is part of the id (so an id that itself ends in "=5" or "@5" is given as
// "ID=1"); one that is a number out of range, or not finite, is refused.
void write_user_item(io::JsonWriter& w, const std::string& given) {
  std::string spec = given;
  auto number_after = [&](char mark, const char* what) -> std::optional<double> {
    const auto at = spec.rfind(mark);
    if (at == std::string::npos || at == 0) return std::nullopt;
    const char* first = spec.data() + at + 1;
    const char* last = spec.data() + spec.size();
    if (first != last && *first == '+') ++first;
    double v = 0;
    auto [end, ec] = std::from_chars(first, last, v);
    if (first == last || end != last || (ec != std::errc() && ec != std::errc::result_out_of_range)) return std::nullopt;
    if (ec == std::errc::result_out_of_range || !std::isfinite(v)) {
      throw std::invalid_argument("--user-item '" + given + "': the " + what + " '" + spec.substr(at + 1) + "' is no finite number");
    }
    spec.resize(at);
    return v;
  };
  const auto timestamp = number_after('@', "timestamp");
  const auto weight = number_after('=', "weight");
  w.begin_object().key("item_id").value(spec);
  if (weight) w.key("weight").value(*weight);
  if (timestamp) w.key("timestamp").value(*timestamp);
  w.end_object();
}

// --user-item ID... [--alpha A]: the top K re-ranked for one user.
int run_personalised(io::HttpClient& client, const QueryOptions& o, const io::HttpHeaders& headers) {
  io::JsonWriter w;
  w.begin_object().key("namespace").value(o.ns);
  if (!o.half_life.empty()) w.key("half_life").value(o.half_life);
  if (!o.window.empty()) w.key("window").value(o.window);
  if (o.k > 0) w.key("k").value(std::uint64_t{o.k});
  if (o.alpha) w.key("alpha").value(*o.alpha);
  w.key("user_items").begin_array();
  for (const auto& u : o.user_items) write_user_item(w, u);
  w.end_array().end_object();
  const auto body = answer_body(client, o, "POST", "/top-k/personalised", w.str(), headers);
  if (!body) return 0;
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(*body);
  std::printf("top %zu of '%s' for this user (alpha %g: %g popularity + %g relevance), as of %s\n", simdjson::dom::array(doc["items"]).size(),
              o.ns.c_str(), double(doc["alpha"]), double(doc["alpha"]), 1 - double(doc["alpha"]), format_utc(double(doc["as_of"])).c_str());
  std::printf("%4s  %-30s  %8s  %10s  %9s  %14s  %6s\n", "rank", "item", "score", "popularity", "relevance", "estimate", "global");
  for (auto item : simdjson::dom::array(doc["items"])) {
    const bool listed = !item["global_rank"].is_null();
    std::printf("%4llu  %-30s  %8.4f  %10.4f  %9.4f  %14.2f  %6s\n", static_cast<unsigned long long>(std::uint64_t(item["rank"])),
                printable(std::string_view(item["item_id"]), 30).c_str(), double(item["score"]), double(item["popularity"]),
                double(item["relevance"]), double(item["estimated_count"]), listed ? std::to_string(std::uint64_t(item["global_rank"])).c_str() : "-");
  }
  return 0;
}

// --trending [--short H] [--long H] [--min-count N].
int run_trending(io::HttpClient& client, const QueryOptions& o, const io::HttpHeaders& headers) {
  std::string target = "/trending?namespace=" + url_encode(o.ns);
  if (o.k > 0) target += "&k=" + std::to_string(o.k);
  if (!o.short_half_life.empty()) target += "&short=" + url_encode(o.short_half_life);
  if (!o.long_half_life.empty()) target += "&long=" + url_encode(o.long_half_life);
  if (o.min_count) target += "&min_count=" + fixed_decimal(*o.min_count);
  const auto body = answer_body(client, o, "GET", target, "", headers);
  if (!body) return 0;
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(*body);
  std::printf("trending in '%s': half-life %s against %s, as of %s\n", o.ns.c_str(), std::string(std::string_view(doc["short"])).c_str(),
              std::string(std::string_view(doc["long"])).c_str(), format_utc(double(doc["as_of"])).c_str());
  std::printf("%4s  %-30s  %10s  %14s  %14s\n", "rank", "item", "score", "rate now/s", "usual rate/s");
  for (auto item : simdjson::dom::array(doc["items"])) {
    std::printf("%4llu  %-30s  %10.2f  %14.4g  %14.4g\n", static_cast<unsigned long long>(std::uint64_t(item["rank"])),
                printable(std::string_view(item["item_id"]), 30).c_str(), double(item["score"]), double(item["short_rate"]),
                double(item["long_rate"]));
  }
  return 0;
}

// --anomalies --window W (--baseline B | --baseline-offset D) [thresholds].
int run_anomalies(io::HttpClient& client, const QueryOptions& o, const io::HttpHeaders& headers) {
  std::string target = "/anomalies?namespace=" + url_encode(o.ns) + "&window=" + url_encode(o.window);
  if (!o.baseline.empty()) target += "&baseline=" + url_encode(o.baseline);
  if (!o.baseline_offset.empty()) target += "&baseline_offset=" + url_encode(o.baseline_offset);
  if (o.k > 0) target += "&k=" + std::to_string(o.k);
  if (o.timestamp) target += "&timestamp=" + fixed_decimal(*o.timestamp);
  if (o.min_jump) target += "&min_jump=" + fixed_decimal(*o.min_jump);
  if (o.min_rank_jump) target += "&min_rank_jump=" + std::to_string(*o.min_rank_jump);
  if (o.min_score) target += "&min_score=" + fixed_decimal(*o.min_score);
  if (o.min_count) target += "&min_count=" + fixed_decimal(*o.min_count);
  const auto body = answer_body(client, o, "GET", target, "", headers);
  if (!body) return 0;
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(*body);
  simdjson::dom::element base = doc["baseline"];
  std::string against = std::string(std::string_view(base["window_length"]));
  if (auto offset = base["offset"]; !offset.error()) against = "the same window " + std::string(std::string_view(offset.value())) + " before";
  std::printf("anomalies in '%s': window %s against %s, as of %s\n", o.ns.c_str(), std::string(std::string_view(doc["window_length"])).c_str(),
              against.c_str(), format_utc(double(doc["as_of"])).c_str());
  std::printf("%-30s  %8s  %8s  %12s  %12s  %6s  %8s  %s\n", "item", "score", "jump", "count", "baseline", "rank", "was", "why");
  for (auto item : simdjson::dom::array(doc["items"])) {
    const auto was = item["baseline_rank"];
    char jump[32];
    std::snprintf(jump, sizeof jump, "%.1fx", double(item["jump"]));
    std::string why;
    for (auto reason : simdjson::dom::array(item["reasons"])) {
      if (!why.empty()) why += ',';
      why += std::string_view(reason);
    }
    std::printf("%-30s  %8.2f  %8s  %12.2f  %12.2f  %6llu  %8s  %s\n", printable(std::string_view(item["item_id"]), 30).c_str(),
                double(item["score"]), jump,
                double(item["count"]["lower_bound"]), double(item["baseline_count"]["upper_bound"]),
                static_cast<unsigned long long>(std::uint64_t(item["rank"])), was.is_null() ? "-" : std::to_string(std::uint64_t(was)).c_str(),
                why.c_str());
  }
  return 0;
}

// --audit: the audit blocks of GET /namespaces/{name}, a line per view.
int run_audit(io::HttpClient& client, const QueryOptions& o, const io::HttpHeaders& headers) {
  const auto body = answer_body(client, o, "GET", "/namespaces/" + url_encode(o.ns), "", headers);
  if (!body) return 0;
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(*body);
  simdjson::dom::element summary = doc["stats"]["audit"];
  if (summary.is_null()) {
    std::printf("namespace '%s' has no accuracy audit (created with audit_sample and audit_top 0, or before ebb had one)\n", o.ns.c_str());
    return 0;
  }
  std::printf("accuracy audit of '%s': %llu sampled items (share %g of all), %llu top items%s\n", o.ns.c_str(),
              static_cast<unsigned long long>(std::uint64_t(summary["sampled_items"])), double(summary["sample_share"]),
              static_cast<unsigned long long>(std::uint64_t(summary["top_items"])), bool(summary["from_start"]) ? "" : " (began after the first event)");
  std::printf("%-14s  %-22s  %8s  %12s  %12s  %10s  %9s  %10s  %s\n", "view", "as of (UTC)", "compared", "max error", "bound", "max/bound", "outside",
              "top error", "SLA");
  for (auto v : simdjson::dom::array(doc["stats"]["views"])) {
    simdjson::dom::element a = v["audit"];
    const std::string kind{std::string_view(v["kind"])};
    const std::string name = (kind == "half_life" ? "half_life=" : "window=") + std::string(std::string_view(v["name"]));
    const bool passed = !a["as_of"].is_null();
    std::string sla = "none";
    if (!a["sla"].is_null()) {
      char text[96];
      std::snprintf(text, sizeof text, "%g%%", double(a["sla"]) * 100);
      sla = text;
      if (!a["sla_met"].is_null()) sla += bool(a["sla_met"]) ? " met" : " missed";
      if (!a["suggested_sketch_width"].is_null()) sla += ": width " + std::to_string(std::uint64_t(a["suggested_sketch_width"])) + " would meet it";
    }
    const std::string ratio = a["max_relative_error"].is_null() ? std::string("inf") : fixed_decimal(std::round(double(a["max_relative_error"]) * 1e4) / 1e4);
    std::printf("%-14s  %-22s  %8llu  %12.4g  %12.4g  %10s  %8.2f%%  %9.3f%%  %s\n", name.c_str(),
                passed ? format_utc(double(a["as_of"])).c_str() : "(no pass yet)", static_cast<unsigned long long>(std::uint64_t(a["compared"])),
                double(a["max_error"]), double(a["error_bound"]), ratio.c_str(), double(a["outside_bound_share"]) * 100,
                double(a["top"]["max_error_share"]) * 100, sla.c_str());
  }
  return 0;
}

// --hot-keys [--follow].
int run_hot_keys(io::HttpClient& client, const QueryOptions& o, const io::HttpHeaders& headers) {
  if (o.follow) {
    // Server-Sent Events: messages end with a blank line; comment lines
    // (heartbeats) and the retry hint print nothing.
    std::string pending;
    bool ended = false;
    const auto r = client.stream("/hot-keys/stream?namespace=" + url_encode(o.ns), headers, [&](std::string_view data) {
      pending.append(data);
      for (std::size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
        const std::string message = pending.substr(0, end);
        pending.erase(0, end + 2);
        std::string event, payload;
        std::size_t at = 0;
        while (at < message.size()) {
          const std::size_t nl = std::min(message.find('\n', at), message.size());
          const std::string_view line(message.data() + at, nl - at);
          if (line.starts_with("event: ")) event = line.substr(7);
          if (line.starts_with("data: ")) payload = line.substr(6);
          at = nl + 1;
        }
        if (event.empty()) continue;
        if (o.json) {
          std::printf("{\"event\":\"%s\",\"data\":%s}\n", event.c_str(), payload.empty() ? "null" : payload.c_str());
        } else if (event == "end") {
          std::printf("%s  the namespace was deleted\n", format_utc(wall_clock_now()).c_str());
        } else {
          simdjson::dom::parser p;
          simdjson::dom::element d = p.parse(payload);
          std::printf("%s  %-4s  %-30s  %12.4g/s  (hot since %s)\n", format_utc(wall_clock_now()).c_str(), event.c_str(),
                      printable(std::string_view(d["item_id"]), 30).c_str(), double(d["rate"]), format_utc(double(d["since"])).c_str());
        }
        std::fflush(stdout);
        if (event == "end") ended = true;
      }
      return !ended;
    });
    if (r.status != 200) throw Fatal{"HTTP " + std::to_string(r.status) + ": " + server_error(r)};
    if (!ended) throw Fatal{"the server closed the stream"};
    return 0;
  }
  const auto body = answer_body(client, o, "GET", "/hot-keys?namespace=" + url_encode(o.ns), "", headers);
  if (!body) return 0;
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(*body);
  const bool evaluated = !doc["as_of"].is_null();  // an event-clock namespace before its first event
  std::printf("hot keys of '%s': rate >= %g events/s (half-life %s), %s\n", o.ns.c_str(), double(doc["threshold"]),
              std::string(std::string_view(doc["half_life"])).c_str(),
              evaluated ? ("as of " + format_utc(double(doc["as_of"]))).c_str() : "not evaluated yet (no event so far)");
  std::printf("%-30s  %14s  %s\n", "item", "rate/s", "hot since (UTC)");
  for (auto k : simdjson::dom::array(doc["items"])) {
    std::printf("%-30s  %14.4g  %s\n", printable(std::string_view(k["item_id"]), 30).c_str(), double(k["rate"]),
                format_utc(double(k["since"])).c_str());
  }
  if (!bool(doc["complete"])) std::printf("(incomplete: the candidates are too few to rule out a hot key outside them)\n");
  return 0;
}

// --dist D [--field F...] [--most-probable N] [--rate R], or --dbsize.
int run_distribution(io::HttpClient& client, const QueryOptions& o, const io::HttpHeaders& headers) {
  if (o.dbsize) {
    const auto body = answer_body(client, o, "GET", "/dbsize", "", headers);
    if (!body) return 0;
    simdjson::dom::parser p;
    std::printf("%llu distributions\n", static_cast<unsigned long long>(std::uint64_t(p.parse(*body)["data"])));
    return 0;
  }
  std::string target = "?distribution=" + url_encode(o.distribution);
  for (const auto& f : o.fields) target += "&field=" + url_encode(f);
  if (o.most_probable) target += "&N=" + std::to_string(*o.most_probable);
  if (o.rate) target += "&rate=" + fixed_decimal(*o.rate);
  target = (!o.fields.empty() ? "/get" : o.most_probable ? "/nmostprobable" : "/dist") + target;
  const auto body = answer_body(client, o, "GET", target, "", headers);
  if (!body) return 0;
  simdjson::dom::parser p;
  simdjson::dom::element d = p.parse(*body)["data"];
  const double t = double(d["T"]);
  std::printf("distribution '%s': Z %.6g, last write %s, rate %.6g/s\n", printable(o.distribution, 60).c_str(), double(d["Z"]),
              t > 0 ? format_utc(t).c_str() : "never (it holds nothing)", double(d["rate"]));
  std::printf("%-30s  %14s  %10s\n", "bin", "count", "p");
  for (auto b : simdjson::dom::array(d["data"])) {
    std::printf("%-30s  %14.6g  %10.6f\n", printable(std::string_view(b["bin"]), 30).c_str(), double(b["count"]), double(b["p"]));
  }
  return 0;
}

}  // namespace

int run_query(const QueryOptions& o) {
  try {
    io::HttpClient client(io::parse_http_url(o.url));
    const auto headers = auth_headers(o.auth_token_file);
    if (o.min_count && !o.trending && !o.anomalies) throw std::invalid_argument("--min-count: give --trending or --anomalies with it");
    if (!o.distribution.empty() || o.dbsize) return run_distribution(client, o, headers);
    if (o.ns.empty()) throw std::invalid_argument("--namespace is required (but with --dist and --dbsize)");
    if (o.hot_keys) return run_hot_keys(client, o, headers);
    if (o.trending) return run_trending(client, o, headers);
    if (o.anomalies) return run_anomalies(client, o, headers);
    if (o.audit) return run_audit(client, o, headers);
    if (!o.user_items.empty()) return run_personalised(client, o, headers);
    std::string view;
    if (!o.half_life.empty()) view = "&half_life=" + url_encode(o.half_life);
    if (!o.window.empty()) view = "&window=" + url_encode(o.window);
    if (o.timestamp) view += "&timestamp=" + fixed_decimal(*o.timestamp);
    if (o.history_from) {
      if (o.items.size() != 1) throw std::invalid_argument("--from/--to: give exactly one --item");
      const std::string target = "/history?namespace=" + url_encode(o.ns) + "&item_id=" + url_encode(o.items.front()) + view +
                                 "&from=" + fixed_decimal(*o.history_from) + "&to=" + fixed_decimal(*o.history_to);
      const auto body = answer_body(client, o, "GET", target, "", headers);
      if (!body) return 0;
      simdjson::dom::parser p;
      simdjson::dom::element doc = p.parse(*body);
      std::printf("%-22s  %6s  %14s  %14s  %14s\n", "time (UTC)", "rank", "estimate", "lower", "upper");
      for (auto point : simdjson::dom::array(doc["points"])) {
        const bool listed = !point["rank"].is_null();
        std::printf("%-22s  %6s  %14s  %14.2f  %14.2f\n", format_utc(double(point["t"])).c_str(),
                    listed ? std::to_string(uint64_t(point["rank"])).c_str() : "-",
                    listed ? std::to_string(double(point["estimated_count"])).c_str() : "(not listed)", double(point["lower_bound"]),
                    double(point["upper_bound"]));
      }
      if (bool(doc["truncated"])) std::printf("(more points than one answer holds: narrow --from/--to)\n");
      return 0;
    }
    if (o.items.empty()) {
      std::string target = "/top-k?namespace=" + url_encode(o.ns) + view;
      if (o.k > 0) target += "&k=" + std::to_string(o.k);
      const auto body = answer_body(client, o, "GET", target, "", headers);
      if (!body) return 0;
      simdjson::dom::parser p;
      print_table(stdout, answer_from(p.parse(*body)), false);
      return 0;
    }
    io::JsonWriter w;
    w.begin_object().key("namespace").value(o.ns).key("item_ids").begin_array();
    for (const auto& i : o.items) w.value(i);
    w.end_array();
    if (!o.half_life.empty()) w.key("half_life").value(o.half_life);
    if (!o.window.empty()) w.key("window").value(o.window);
    if (o.timestamp) w.key("timestamp").value(*o.timestamp);
    w.end_object();
    const auto body = answer_body(client, o, "POST", "/counts", w.str(), headers);
    if (!body) return 0;
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.parse(*body);
    std::printf("%-30s  %14s  %14s  %14s  %12s\n", "item", "estimate", "lower", "upper", "rate/s");
    for (auto item : simdjson::dom::array(doc["items"])) {
      // Not in a persisted list (history): only bounded.
      const bool known = !item["estimated_count"].is_null();
      std::printf("%-30s  %14s  %14.2f  %14.2f  %12.4g\n", printable(std::string_view(item["item_id"]), 30).c_str(),
                  known ? fixed_decimal(std::round(double(item["estimated_count"]) * 100) / 100).c_str() : "(not listed)",
                  double(item["lower_bound"]), double(item["upper_bound"]), double(item["rate"]));
    }
    return 0;
  } catch (const Fatal& f) {
    std::fprintf(stderr, "ebb query: %s\n", f.message.c_str());
    return 1;
  } catch (const simdjson::simdjson_error& e) {
    std::fprintf(stderr, "ebb query: the server's answer is not what ebb expects: %s\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ebb query: %s\n", e.what());
    return 2;
  }
}

}  // namespace ebb::cli
