#pragma once
// Clients of `ebb serve`: `ebb send` streams files or stdin to a server in
// batches; `ebb query` asks it for a top-K list or item counts.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ebb/io/record_parser.hpp"

namespace CLI {
class App;
}

namespace ebb::cli {

struct SendOptions {
  std::vector<std::string> files;
  std::string url = "http://127.0.0.1:8080";
  std::string auth_token_file;  // the server's --auth-token-file: its first token is sent
  std::string ns;
  std::string format = "plain";
  io::FieldSpec fields;
  std::string time_format = "auto";
  std::string max_time_jump = "1d";
  std::size_t batch = 1000;
  unsigned retries = 5;  // per batch, on 429/503 or a lost connection
  std::uint32_t max_key_bytes = 1024;
  std::uint32_t max_line_bytes = 1 << 20;
  bool strict = false;
  bool no_progress = false;
};

struct QueryOptions {
  std::string url = "http://127.0.0.1:8080";
  std::string auth_token_file;  // the server's --auth-token-file: its first token is sent
  std::string ns;
  std::uint32_t k = 0;  // 0: the namespace's k
  std::string half_life;
  std::string window;
  std::optional<double> timestamp;  // as it was then (seconds since the epoch)
  std::optional<double> history_from, history_to;  // GET /history for --item
  std::vector<std::string> items;
  bool trending = false;  // GET /trending
  std::string short_half_life, long_half_life;
  std::optional<double> min_count;
  bool anomalies = false;  // GET /anomalies (--window, --baseline or --baseline-offset)
  bool audit = false;      // the accuracy self-audit's figures (GET /namespaces/{name})
  std::string baseline, baseline_offset;
  std::optional<double> min_jump, min_score;
  std::optional<std::size_t> min_rank_jump;
  // POST /top-k/personalised: the user's items, "ID[=WEIGHT][@TIMESTAMP]",
  // and alpha (the global list's share of the score).
  std::vector<std::string> user_items;
  std::optional<double> alpha;
  bool hot_keys = false;  // GET /hot-keys
  bool follow = false;    // with hot_keys: GET /hot-keys/stream
  // Distributions that forget (no namespace): GET /dist, /get (fields),
  // /nmostprobable (most_probable), at an optional rate; GET /dbsize.
  std::string distribution;
  std::vector<std::string> fields;
  std::optional<std::size_t> most_probable;
  std::optional<double> rate;
  bool dbsize = false;
  bool json = false;
};

CLI::App* add_send_command(CLI::App& app, SendOptions& opts);
CLI::App* add_query_command(CLI::App& app, QueryOptions& opts);
int run_send(const SendOptions& opts);
int run_query(const QueryOptions& opts);

}  // namespace ebb::cli
