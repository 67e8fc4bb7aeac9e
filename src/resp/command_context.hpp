#pragma once
// What a command handler sees (private to the RESP layer): the service,
// the connection, its arguments and the reply writer. A handler refuses a
// command by throwing CommandError with the error reply's text; it checks
// every argument before it changes anything.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ebb/core/ascii_case.hpp"
#include "ebb/resp/commands.hpp"
#include "ebb/resp/reply.hpp"

namespace ebb::resp {

using Args = std::span<const std::string_view>;

// What TOPK.ADD last saw of a key's list, so that the next command on it
// can tell what it changed without computing the list twice: valid while
// the namespace (instance) has counted no other batch and keeps the same k.
struct ListKeys {
  ListKeys() = default;
  ListKeys(const ListKeys&) = delete;  // (views point into its own keys)
  ListKeys& operator=(const ListKeys&) = delete;
  std::vector<std::string> keys;  // in list order
  std::vector<std::string_view> views;  // keys[i]'s bytes, and
  std::vector<std::uint64_t> hashes;    // its hash_key: a view's held_scores() takes both
  // Membership: open addressing on hash_key, a quarter full; each cell the
  // key's hash and its index + 1 (0: empty).
  std::vector<std::pair<std::uint64_t, std::uint32_t>> table;
};
struct ListCache {
  std::uint64_t instance = 0, batches = 0, evictions = 0;
  std::size_t k = 0;
  std::shared_ptr<const ListKeys> list;  // shared: an unchanged list is not copied
  // The lowest score of a listed key when it was read (NaN: not read), in
  // the view's scale of `rescales`: listed keys' scores only rise, so it
  // stays a floor on the lowest one while no rescale comes between.
  double lowest = NAN;
  std::uint64_t rescales = 0;
};

struct Commands::ListCaches {
  std::mutex mu;
  std::unordered_map<std::string, ListCache> by_key;
  static constexpr std::size_t kMaxKeys = 4096;  // then it starts over (a cache: losing it costs time only)
};

struct CommandError {
  std::string text;  // the error reply without its '-': "ERR ...", "WRONGTYPE ...", "TopK: ..."
};

[[noreturn]] inline void refuse(std::string text) { throw CommandError{std::move(text)}; }
inline constexpr std::string_view kWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value";

struct Context {
  Commands& commands;
  ClientState& client;
  Args args;  // args[0]: the command's name as sent
  ReplyWriter& reply;
  double received_at = 0;  // wall clock, Unix seconds
};

// A command's entry in the table. arity as Redis states it: n > 0 exactly
// n arguments (the name included), n < 0 at least -n.
struct CommandSpec {
  std::string_view name;  // lower case
  int arity;
  service::Access access;
  Outcome (*run)(Context&);
  // It runs off the event loop itself, on the admin pool (RESERVE, INITBY*,
  // MERGE, DEL): never deferred to the pool of commands waiting out a merge.
  bool admin = false;
};

std::span<const CommandSpec> connection_commands();
std::span<const CommandSpec> keyspace_commands();
std::span<const CommandSpec> topk_commands();
std::span<const CommandSpec> signal_commands();  // TOPK.HOTKEYS, TOPK.TRENDING: ebb's own
std::span<const CommandSpec> cms_commands();
// Every command of the tables above, in that order (COMMAND lists them so).
std::vector<const CommandSpec*> all_command_specs();

// TOPK.ADD / TOPK.INCRBY commands on c.args[1] (Commands::execute_batch),
// counted as one batch; replies[i]: commands[i]'s (sized by the caller).
// Throws what ingest throws; `counted` says whether the batch was counted
// before a throw.
void topk_ingest_run(Context& c, std::span<const Args> commands, std::vector<BatchReply>& replies, bool& counted);

// Helpers shared by the handlers.
std::string wrong_arity(std::string_view command_name);  // "ERR wrong number of arguments for 'topk.add' command"
// A decimal integer as Redis reads one (no spaces, no '+'); nullopt otherwise.
std::optional<long long> parse_integer(std::string_view s);
std::optional<double> parse_double(std::string_view s);
// A count as an integer reply: the upper bound rounded up (a decayed count
// is fractional; a count is never under-stated).
long long whole_count(double upper);
// Items as RESP takes them: non-empty UTF-8 (as HTTP's JSON carries them);
// CommandError naming the item (1-based) otherwise.
void check_items(std::span<const std::string_view> items);
// Counts items (with their weights; 0: not counted) into the key through
// the service, while it is a key of `type` (else WRONGTYPE, checked with
// the batch: the key may have been made again since require_key()),
// `observe` seeing the namespace before and after (see IngestRequest);
// errors name the item. Commit: wait for it before the reply.
// `no_key` is the reply when the key is gone (deleted meanwhile). `hashes`:
// hash_key() of each item when the caller has them (empty: the service's job).
service::Commit ingest_items(Context& c, const std::string& key, service::RedisKey::Type type, std::span<const std::string_view> items,
                             std::span<const double> weights, std::string_view no_key, const std::function<void(const engine::Namespace&, bool)>& observe,
                             std::span<const std::uint64_t> hashes = {});
// That the key exists (else `no_key`, RedisBloom's text) and answers
// commands of `type` (a namespace made over HTTP answers both; else
// WRONGTYPE).
void require_key(Context& c, const std::string& key, service::RedisKey::Type type, std::string_view no_key);
// The TOPK commands' (RedisBloom's) text for a missing key, and their check.
inline constexpr std::string_view kTopKNoKey = "TopK: key does not exist";
inline void require_topk(Context& c, const std::string& key) { require_key(c, key, service::RedisKey::Type::topk, kTopKNoKey); }
// The duration at args[at] (5m, 1h...), for the option named at args[at - 1];
// CommandError "ERR <option>: bad duration '...'" otherwise.
double duration_argument(Args args, std::size_t at);
// Cluster mode: an answer merged from the partitions must span them all
// (RESP has no field to say that a partition is missing from a list):
// ServiceError unavailable "partition_unavailable" naming the missing ones.
void require_whole(const engine::Coverage& coverage);
// A service refusal about the key itself, in RedisBloom's words: missing
// (deleted since require_key()) is `no_key`, made again as the other type
// is WRONGTYPE; any other error returns, for the caller to map or rethrow.
void refuse_key_error(const service::ServiceError& e, std::string_view no_key);
// call() (a read of the key after require_key()), with refuse_key_error()'s
// words for a key deleted or made again meanwhile.
template <typename Call>
auto keyed(std::string_view no_key, Call&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const service::ServiceError& e) {
    refuse_key_error(e, no_key);
    throw;
  }
}
// Each item's count in the key's first view: its upper bound, read while
// the key is one of `type` (else WRONGTYPE: it may have been made again
// since require_key(); deleted since: `no_key`).
std::vector<double> upper_counts(Context& c, const std::string& key, service::RedisKey::Type type,
                                 std::string_view no_key, std::span<const std::string> items);
// What RESERVE / INITBY* were given, as TOPK.INFO / CMS.INFO echo it; a
// namespace made over HTTP: its own k, width and depth, decay 1.
service::RedisKey requested_shape(const service::NamespaceSpec& spec);
// Creates the namespace a RESERVE / INITBY* command describes (the JSON of
// POST /namespaces: the service's rules and limits apply), off the event
// loop; `exists_error` is the reply when the key is taken. The name is
// checked at once.
Outcome create_key(Context& c, const std::string& key, const std::string& spec_json, const service::RedisKey& redis, std::string_view exists_error);
// Work for Outcome::deferred: runs `work` (which writes its reply), turning
// what it throws into the error reply, as execute() does.
std::function<void(std::string&)> deferred_reply(int protocol, std::function<void(ReplyWriter&)> work);

}  // namespace ebb::resp
