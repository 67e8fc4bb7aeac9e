#pragma once
// What a command handler sees (private to the RESP layer): the service,
// the connection, its arguments and the reply writer. A handler refuses a
// command by throwing CommandError with the error reply's text; it checks
// every argument before it changes anything.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ebb/resp/commands.hpp"
#include "ebb/resp/reply.hpp"

namespace ebb::resp {

using Args = std::span<const std::string_view>;

struct CommandError {
  std::string text;  // the error reply without its '-': "ERR ...", "WRONGTYPE ...", "TopK: ..."
};

[[noreturn]] inline void refuse(std::string text) { throw CommandError{std::move(text)}; }

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
};

std::span<const CommandSpec> connection_commands();
std::span<const CommandSpec> keyspace_commands();
std::span<const CommandSpec> topk_commands();
std::span<const CommandSpec> cms_commands();

// Helpers shared by the handlers.
std::string lower(std::string_view s);
std::string wrong_arity(std::string_view command_name);  // "ERR wrong number of arguments for 'topk.add' command"
// A decimal integer as Redis reads one (no spaces, no '+'); nullopt otherwise.
std::optional<long long> parse_integer(std::string_view s);
std::optional<double> parse_double(std::string_view s);
bool equals_ignoring_case(std::string_view a, std::string_view b);
// A count as an integer reply: the upper bound rounded up (a decayed count
// is fractional; a count is never under-stated).
long long whole_count(double upper);
// Creates the namespace a RESERVE / INITBY* command describes (the JSON of
// POST /namespaces: the service's rules and limits apply); `exists_error`
// is the reply when the key is taken.
void create_key(Context& c, const std::string& key, const std::string& spec_json, std::string_view exists_error);

}  // namespace ebb::resp
