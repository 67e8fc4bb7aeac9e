// `ebb top` end to end: the real binary on real-format inputs with known
// answers, and every error path a user can hit.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "ebb/engine/decayed_view.hpp"
#include "support/run_process.hpp"

namespace ebb {
namespace {

using testing::run_process;

const std::string kEbb = EBB_BINARY;
const std::string kData = EBB_TEST_DATA;

std::vector<std::string> top(std::vector<std::string> args) {
  args.insert(args.begin(), {kEbb, "top"});
  return args;
}

struct TopItem {
  std::string key;
  double estimate, lower, upper;
  std::uint64_t rank;
};

std::vector<TopItem> items_of(const std::string& json_line) {
  static simdjson::dom::parser parser;
  simdjson::padded_string s(json_line);
  simdjson::dom::element doc = parser.parse(s);
  std::vector<TopItem> out;
  for (auto item : doc["items"].get_array()) {
    out.push_back({std::string(std::string_view(item["item_id"])), double(item["estimated_count"]), double(item["lower_bound"]),
                   double(item["upper_bound"]), std::uint64_t(item["rank"])});
  }
  return out;
}

double number_at(const std::string& json_line, const char* field) {
  static simdjson::dom::parser parser;
  const simdjson::padded_string text(json_line);
  simdjson::dom::element doc = parser.parse(text);
  return double(doc[field]);
}

// Each item's count, whatever the order of ties.
std::map<std::string, double> counts_of(const std::string& json_line) {
  std::map<std::string, double> out;
  for (const auto& item : items_of(json_line)) out[item.key] = item.estimate;
  return out;
}

// The decayed count of every path of a Common Log Format file, computed
// here from the file (sscanf and timegm): sum of 2^(-(newest - t) / half_life).
struct DecayedPaths {
  std::map<std::string, double> by_path;
  double total = 0;
};
DecayedPaths decayed_paths(const std::string& path, double half_life) {
  static const std::string kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  std::ifstream in(path);
  std::vector<std::pair<std::string, double>> requests;
  std::string line;
  while (std::getline(in, line)) {
    std::tm tm{};
    char month[4] = {}, target[256] = {};
    if (std::sscanf(line.c_str(), "%*s %*s %*s [%2d/%3c/%4d:%2d:%2d:%2d +0000] \"%*s %255s", &tm.tm_mday, month, &tm.tm_year,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, target) != 7) {
      continue;  // the garbage line
    }
    tm.tm_year -= 1900;
    tm.tm_mon = static_cast<int>(kMonths.find(month) / 3);
    requests.emplace_back(target, static_cast<double>(timegm(&tm)));
  }
  double newest = 0;
  for (const auto& r : requests) newest = std::max(newest, r.second);
  DecayedPaths out;
  for (const auto& [p, t] : requests) {
    const double w = std::exp2(-(newest - t) / half_life);
    out.by_path[p] += w;
    out.total += w;
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

TEST(EbbTop, PlainStdinCountsExactly) {
  auto r = run_process(top({"-k", "2"}), "b\na\nb\nc\nb\na\n\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1  b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2  a"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  c "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("6 events counted from 7 lines"), std::string::npos) << r.out;
}

// libnats (and the libssl and libcrypto it brings) is opened by cluster
// mode only: linked in, loading it was a third of every ebb command's
// start (include/ebb/cluster/nats_library.hpp). glibc's loader lists what
// it loads under LD_DEBUG=files.
TEST(EbbTop, StartsWithoutLoadingTheNatsClient) {
  auto args = top({"-k", "1"});
  args.insert(args.begin(), {"/usr/bin/env", "LD_DEBUG=files"});
  const auto r = run_process(args, "a\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("file=libc.so.6"), std::string::npos) << "the loader listed nothing:\n" << r.err;
  EXPECT_EQ(r.err.find("libnats"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("libcrypto"), std::string::npos) << r.err;
}

TEST(EbbTop, ExactCountingStatesItsEvictions) {
  auto r = run_process(top({"--exact", "-k", "3"}), "b\na\nb\nc\nb\na\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("    1  b                  3               3               3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("accuracy: exact counts, 3 items held\n"), std::string::npos) << r.out;
  // Two records at most: the lowest all-time count goes for each new key
  // (a, then c, then a again: 3 events), and the bounds say what left.
  r = run_process(top({"--exact", "--max-items", "2", "--json"}), "b\na\nb\nc\nb\na\nd\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("items":[{"item_id":"b","estimated_count":3,"lower_bound":3,"upper_bound":6,"rank":1},)"
                       R"({"item_id":"d","estimated_count":1,"lower_bound":1,"upper_bound":4,"rank":2}],"total":7,)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(R"("type":"exact",)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("max_error":3,"guarantee_threshold":3,"candidates":2,"undersized":false,"tail_uncertain":true,"unlisted_upper_bound":3,"items":2,"evicted_items":3})"), std::string::npos) << r.out;
}

// --memory sizes each view to a budget and says what it holds: short keys
// sit in their entries (the bytes held are what the shape reserves), long
// ones fewer fit and the line says how many.
TEST(EbbTop, MemoryBudgetSizesTheViewAndSaysWhatItHolds) {
  const auto sizing = engine::DecayedView::fit_budget(32768, 2);
  const std::size_t reserved = engine::DecayedView::reserved_bytes(sizing.sketch, sizing.candidates);
  auto r = run_process(top({"-k", "2", "--memory", "32KiB"}), "b\na\nb\nc\nb\na\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("    1  b                  3               3               3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory: " + std::to_string(reserved) + " held of the 32KiB budget (" + std::to_string(sizing.candidates) +
                       " candidates fit)\n"),
            std::string::npos)
      << r.out;
  std::string long_keys;
  for (int i = 0; i < 2000; ++i) long_keys += std::string(300, 'x') + std::to_string(i % 500) + "\n";
  r = run_process(top({"-k", "2", "--memory", "32KiB", "--json"}), long_keys);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("memory_budget":32768,"memory_bytes":)"), std::string::npos) << r.out;
  const auto at = r.out.find(R"("candidates":)");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_LT(std::stoul(r.out.substr(at + 13)), sizing.candidates) << r.out;  // 301-byte keys: fewer fit
  r = run_process(top({"--memory", "32KiB", "--width", "1024"}), "a\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--width excludes --memory"), std::string::npos) << r.err;
  r = run_process(top({"--memory", "lots"}), "a\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("lots"), std::string::npos) << r.err;
}

TEST(EbbTop, AccessLogByPathAndBytesWithHalfLife) {
  auto r = run_process(top({"--format", "clf", "-k", "3", "--json", "--half-life", "10m", kData + "/access.log"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto docs = lines_of(r.out);
  ASSERT_EQ(docs.size(), 2u) << r.out;  // all-time, then 10m
  const auto all = items_of(docs[0]);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].key, "/index.html");
  EXPECT_EQ(all[0].estimate, 120);
  EXPECT_EQ(all[0].lower, 120);
  EXPECT_EQ(all[1].key, "/api/search");
  EXPECT_EQ(all[1].estimate, 80);
  EXPECT_EQ(all[2].key, "/login");
  EXPECT_EQ(all[2].rank, 3u);
  EXPECT_NE(docs[0].find(R"("accuracy":{"type":"count_min_sketch")"), std::string::npos);
  EXPECT_NE(docs[0].find(R"("window":{"start":1708632000,"end":1708634740})"), std::string::npos) << docs[0];
  EXPECT_NE(docs[1].find(R"("half_life":"10m")"), std::string::npos);
  // The decayed counts, from the log itself: each request weighs
  // 2^(-age / 10m) at the newest request's time.
  const auto expected = decayed_paths(kData + "/access.log", 600);
  const auto decayed = items_of(docs[1]);
  ASSERT_EQ(decayed.size(), 3u);
  const char* paths[] = {"/index.html", "/api/search", "/login"};
  for (std::size_t i = 0; i < 3; ++i) {
    const double want = expected.by_path.at(paths[i]);
    EXPECT_EQ(decayed[i].key, paths[i]);
    EXPECT_NEAR(decayed[i].estimate, want, 1e-12 * want) << paths[i];
    EXPECT_NEAR(decayed[i].lower, want, 1e-12 * want) << paths[i];
    EXPECT_NEAR(decayed[i].upper, want, 1e-12 * want) << paths[i];
  }
  EXPECT_NEAR(number_at(docs[1], "total"), expected.total, 1e-12 * expected.total);
  EXPECT_EQ(number_at(docs[1], "as_of"), 1708634740);
  // The trailing garbage line is reported with its line number.
  EXPECT_NE(r.err.find("1 malformed line skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("access.log:276:"), std::string::npos) << r.err;
}

TEST(EbbTop, AccessLogWeightedByBytesSkipsDashBytes) {
  auto r = run_process(top({"--format", "clf", "--weight", "bytes", "--json", kData + "/access.log"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto items = items_of(lines_of(r.out)[0]);
  EXPECT_EQ(items[0].key, "/index.html");
  EXPECT_EQ(items[0].estimate, 120 * (100 + 11));
  for (const auto& i : items) EXPECT_NE(i.key, "/favicon.ico");  // every favicon line was a 304 with "-" bytes
  EXPECT_NE(r.err.find("10 lines with weight 0 or '-' not counted"), std::string::npos) << r.err;
}

TEST(EbbTop, CsvWithHeaderNamesQuotedKeysAndWeights) {
  auto r = run_process(top({"--format", "csv", "--key", "product", "--time", "ts", "--weight", "amount", "--json", kData + "/sales.csv"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto items = items_of(lines_of(r.out)[0]);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].key, "Widget, \"Deluxe\"");
  EXPECT_EQ(items[0].estimate, 150);
  EXPECT_EQ(items[1].key, "gadget");
  EXPECT_EQ(items[1].estimate, 100);
  EXPECT_EQ(items[2].estimate, 20);
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(EbbTop, NdjsonWithDottedPathAndMillisecondTimes) {
  auto r = run_process(top({"--format", "json", "--key", "user.country", "--time", "ts", "--json", kData + "/events.ndjson"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto items = items_of(lines_of(r.out)[0]);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].key, "NZ");
  EXPECT_EQ(items[0].estimate, 7);
  EXPECT_EQ(items[1].key, "FR");
  EXPECT_EQ(items[2].key, "BR");
  EXPECT_NE(r.out.find(R"("end":1708632014)"), std::string::npos) << r.out;
}

TEST(EbbTop, LiveModePrintsAFramePerInterval) {
  std::string input;
  for (int i = 0; i < 300; ++i) input += std::to_string(1000 + i) + "\titem" + std::to_string(i % 3) + "\n";
  auto r = run_process(top({"--format", "tsv", "--time", "1", "--key", "2", "--every", "1m", "--json"}), input);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Boundaries at 1020, 1080, ..., 1260 crossed by stream time, plus the final frame.
  EXPECT_EQ(lines_of(r.out).size(), 6u) << r.out;
}

TEST(EbbTop, StrictStopsAtTheFirstMalformedLine) {
  auto r = run_process(top({"--format", "tsv", "--time", "1", "--strict"}), "1000\ta\nnot-a-time\tb\n1002\tc\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stdin:2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--strict"), std::string::npos) << r.err;
}

TEST(EbbTop, MalformedLinesAreCountedNotDropped) {
  std::string input;
  for (int i = 0; i < 10; ++i) input += "1000\tok\n" + std::string("bad") + std::to_string(i) + "\n";
  auto r = run_process(top({"--format", "tsv", "--time", "1", "--key", "2"}), input);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("10 malformed lines skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stdin:2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("and 5 more"), std::string::npos) << r.err;
}

TEST(EbbTop, OverlongKeysAreMalformed) {
  auto r = run_process(top({"--max-key-bytes", "5"}), "short\nmuch-too-long\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stdin:2: item_id is 13 bytes"), std::string::npos) << r.err;
  // A size as --max-memory takes it: 1KiB is 1024 bytes.
  r = run_process(top({"--max-key-bytes", "1KiB"}), std::string(1024, 'a') + "\n" + std::string(1025, 'b') + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("stdin:1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 malformed line skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stdin:2: item_id is 1025 bytes"), std::string::npos) << r.err;
}

TEST(EbbTop, ErrorsAreClearWithUsageExitCodes) {
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--no-such-flag"}, 2, "--no-such-flag"},
      {{"--half-life", "5x"}, 2, "bad duration '5x'"},
      {{"--every", "0s"}, 2, "must be finite and > 0"},
      {{"--format", "xml"}, 2, "xml"},
      {{"-k", "0"}, 2, "-k"},
      {{"--width", "1000"}, 2, "power of two"},
      {{"--epsilon", "0.01", "--width", "1024"}, 2, "excludes"},
      {{"--exact", "--width", "1024"}, 2, "--width excludes --exact"},
      {{"--max-items", "5"}, 2, "--max-items requires --exact"},
      {{"--exact", "--max-items", "0"}, 2, "--max-items"},
      {{"--window", "1.5s"}, 2, "windows: entry 0 must be a whole number of seconds in [1s, 366d]"},
      {{"--time", "1"}, 2, "plain input has no fields"},
      {{"--format", "clf", "--key", "colour"}, 2, "unknown clf field 'colour'"},
      {{"--max-line-bytes", "1Mb"}, 2, "--max-line-bytes: bad size '1Mb' (expected a number of bytes, or one with a unit: B, KiB, MiB, GiB, TiB, or decimal KB, MB, GB, TB)"},
      {{"--max-line-bytes", "1GiB"}, 2, "--max-line-bytes: Value 1073741824 not in range"},
      {{"/no/such/file"}, 1, "cannot open '/no/such/file'"},
      {{kData}, 1, "is a directory"},
  };
  for (const auto& c : cases) {
    auto r = run_process(top(c.args), "x\n");
    EXPECT_EQ(r.exit_code, c.code) << c.args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args[0] << ": " << r.err;
  }
  auto r = run_process({kEbb});
  EXPECT_EQ(r.exit_code, 2);
  r = run_process({kEbb, "top", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--half-life"), std::string::npos);
}

// Keys are counted as the bytes they are; in JSON, each maximal invalid
// UTF-8 subpart reads \ufffd, so the output stays valid JSON (simdjson,
// which validates UTF-8, parses it). Two keys that differ only in invalid
// bytes stay two items.
TEST(EbbTop, JsonOutputIsValidForKeysThatAreNotUtf8) {
  auto r = run_process(top({"--json", "-k", "10"}), "caf\xE9\ncaf\xE9\ncaf\xC3\xA9\nok\xFF\xFE\ncaf\xEA\ncaf\xE9\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const auto docs = lines_of(r.out);
  ASSERT_EQ(docs.size(), 1u);
  const auto items = items_of(docs[0]);
  ASSERT_EQ(items.size(), 4u) << r.out;
  EXPECT_EQ(items[0].key, "caf\xEF\xBF\xBD");  // caf\xE9, 3 times
  EXPECT_EQ(items[0].estimate, 3);
  std::multiset<std::pair<std::string, double>> rest;
  for (std::size_t i = 1; i < items.size(); ++i) rest.emplace(items[i].key, items[i].estimate);
  const std::multiset<std::pair<std::string, double>> expected = {
      {"caf\xC3\xA9", 1}, {"ok\xEF\xBF\xBD\xEF\xBF\xBD", 1}, {"caf\xEF\xBF\xBD", 1}};  // the last: caf\xEA
  EXPECT_EQ(rest, expected);
  EXPECT_NE(docs[0].find(R"({"item_id":"caf\ufffd","estimated_count":3,)"), std::string::npos) << docs[0];
  EXPECT_EQ(number_at(docs[0], "total"), 6);
}

// One event dated far ahead (a date in 2100 among 2023's) is a malformed
// line, reported with file:line, instead of moving "now" for good: the
// decayed view stays at the newest good time, and the counts there are
// exact.
TEST(EbbTop, AFarFutureTimestampIsRefusedInsteadOfMovingNow) {
  const std::string input = "1700000000\ta\n1700000001\tb\n4102444800\tfar\n1700000002\ta\n";
  std::vector<std::string> args = {"--format", "tsv", "--time", "1", "--key", "2", "--half-life", "5m", "--json"};
  auto r = run_process(top(args), input);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("1 malformed line skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stdin:3: timestamp is 2402444799 s ahead of the newest event time so far (1700000001), "
                       "more than the 1d allowed (--max-time-jump)"),
            std::string::npos)
      << r.err;
  const auto docs = lines_of(r.out);
  ASSERT_EQ(docs.size(), 2u) << r.out;
  EXPECT_NE(docs[0].find(R"("window":{"start":1700000000,"end":1700000002})"), std::string::npos) << docs[0];
  EXPECT_EQ(counts_of(docs[0]), (std::map<std::string, double>{{"a", 2}, {"b", 1}}));
  EXPECT_EQ(number_at(docs[1], "as_of"), 1700000002);
  const auto now = counts_of(docs[1]);
  ASSERT_EQ(now.size(), 2u) << docs[1];
  const double a = std::exp2(-2.0 / 300) + 1, b = std::exp2(-1.0 / 300);
  EXPECT_NEAR(now.at("a"), a, 1e-12 * a);
  EXPECT_NEAR(now.at("b"), b, 1e-12 * b);

  // --strict: the same line stops the run, exit 1.
  auto strict_args = args;
  strict_args.push_back("--strict");
  r = run_process(top(strict_args), input);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("malformed input at stdin:3: timestamp is"), std::string::npos) << r.err;

  // --max-time-jump sets the limit: 2 h and half a second ahead is too far
  // for 1h, half an hour ahead is not.
  args.insert(args.end(), {"--max-time-jump", "1h"});
  r = run_process(top(args), "1700000000\ta\n1700007200.5\tfar\n1700001800\tb\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stdin:2: timestamp is 7200.5 s ahead of the newest event time so far (1700000000), more than the 1h allowed"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(number_at(lines_of(r.out)[1], "as_of"), 1700001800);
  EXPECT_EQ(counts_of(lines_of(r.out)[0]), (std::map<std::string, double>{{"a", 1}, {"b", 1}}));
  r = run_process(top({"--max-time-jump", "soon"}), "x\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad duration 'soon'"), std::string::npos) << r.err;
}

// Each timestamp is read in its own unit: a millisecond time on the first
// line does not make the later seconds read as milliseconds (1970).
TEST(EbbTop, EveryTimestampIsReadInItsOwnUnit) {
  const std::string input =
      "1700000000000\ta\n"        // ms
      "1700000001\tb\n"           // s
      "1700000002000000\ta\n"     // us
      "1700000003000000000\tc\n"  // ns
      "2023-11-14T22:13:24Z\tb\n";
  auto r = run_process(top({"--format", "tsv", "--time", "1", "--key", "2", "--half-life", "5m", "--json"}), input);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const auto docs = lines_of(r.out);
  ASSERT_EQ(docs.size(), 2u) << r.out;
  EXPECT_NE(docs[0].find(R"("window":{"start":1700000000,"end":1700000004})"), std::string::npos) << docs[0];
  EXPECT_EQ(number_at(docs[1], "as_of"), 1700000004);
  const auto now = counts_of(docs[1]);
  ASSERT_EQ(now.size(), 3u) << docs[1];
  const double a = std::exp2(-4.0 / 300) + std::exp2(-2.0 / 300), b = std::exp2(-3.0 / 300) + 1, c = std::exp2(-1.0 / 300);
  EXPECT_NEAR(now.at("a"), a, 1e-12 * a);
  EXPECT_NEAR(now.at("b"), b, 1e-12 * b);
  EXPECT_NEAR(now.at("c"), c, 1e-12 * c);
}

// logrotate's copytruncate: the file shrinks while ebb top reads it. The
// test waits until ebb top has begun reading the file (its offset in
// /proc/PID/fdinfo moved, or, for a reader that maps files, the mapping is
// in /proc/PID/maps), stops it, checks it has not read past the cut,
// truncates the file mid-line, and lets it go on: it must exit 0 (not die
// of SIGBUS), warn naming the file, and count exactly the complete lines
// before the cut.
TEST(EbbTop, FileTruncatedWhileReadIsCountedUpToTheCutWithAWarning) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ebb-truncate-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "app.log").string();
  constexpr std::size_t kLines = 4'000'000, kKept = 3'000'500, kLine = 8;  // "key0042\n"
  {
    std::string text;
    text.reserve(kLines * kLine);
    char line[16];
    for (std::size_t i = 0; i < kLines; ++i) {
      std::snprintf(line, sizeof line, "key%04zu\n", i % 1000);
      text += line;
    }
    std::ofstream(path, std::ios::binary) << text;
  }
  const std::string out = (dir / "out").string(), err = (dir / "err").string();
  const pid_t pid = fork();
  if (pid == 0) {
    const int in = open("/dev/null", O_RDONLY), fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600),
              fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in, 0);
    dup2(fo, 1);
    dup2(fe, 2);
    execl(kEbb.c_str(), kEbb.c_str(), "top", "--json", "-k", "1", "--no-progress", path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  const std::string proc = "/proc/" + std::to_string(pid);
  auto offset_of = [&](const std::string& fd) -> std::uint64_t {
    std::ifstream fdinfo(proc + "/fdinfo/" + fd);
    std::string key;
    std::uint64_t pos = 0;
    while (fdinfo >> key && key != "pos:") {
    }
    fdinfo >> pos;
    return pos;
  };
  auto mapped = [&] { return testing::slurp(proc + "/maps").find(path) != std::string::npos; };
  std::string fd_name;
  bool reading = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!reading && std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(proc + "/fd", ec)) {
      std::error_code link_ec;
      if (fs::read_symlink(entry.path(), link_ec) == fs::path(path)) fd_name = entry.path().filename().string();
    }
    reading = !fd_name.empty() && (offset_of(fd_name) > 0 || mapped());
    if (!reading) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  ASSERT_TRUE(reading) << "ebb top never began reading " << path;
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);
  ASSERT_TRUE(WIFSTOPPED(status));
  ASSERT_LE(offset_of(fd_name), kKept * kLine) << "ebb top read past the cut before it could be made";
  // Cut three bytes into a line: "key" is a fragment, not a key.
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(kKept * kLine + 3)), 0);
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string o = testing::slurp(out), e = testing::slurp(err);
  fs::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << "; stderr: " << e;
  EXPECT_EQ(WEXITSTATUS(status), 0) << e;
  EXPECT_EQ(e, "ebb top: warning: '" + path + "' shrank while it was being read (truncated, e.g. by logrotate's copytruncate): " +
                   "counted the complete lines of its first " + std::to_string(kKept * kLine + 3) + " of " +
                   std::to_string(kLines * kLine) + " bytes\n");
  const auto docs = lines_of(o);
  ASSERT_EQ(docs.size(), 1u) << o;
  EXPECT_EQ(number_at(docs[0], "total"), static_cast<double>(kKept));
  // Keys 0..499 appear 3001 times before the cut, the others 3000.
  const auto items = items_of(docs[0]);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].estimate, 3001);
  EXPECT_LT(items[0].key, "key0500");
}

}  // namespace
}  // namespace ebb
