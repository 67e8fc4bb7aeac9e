// What clients send on connect and around their work: PING, ECHO, HELLO,
// AUTH, CLIENT, SELECT, COMMAND, INFO, QUIT, RESET.
#include <unistd.h>

#include <array>
#include <vector>

#include "command_context.hpp"

namespace ebb::resp {
namespace {

using service::Access;

Outcome ping(Context& c) {
  if (c.args.size() > 2) refuse(wrong_arity(c.args[0]));
  if (c.args.size() == 2) c.reply.bulk(c.args[1]);
  else c.reply.simple("PONG");
  return {};
}

Outcome echo(Context& c) {
  c.reply.bulk(c.args[1]);
  return {};
}

// A token, checked as HTTP's bearer tokens are; Redis's texts.
void authenticate(Context& c, std::string_view token) {
  const auto& tokens = c.commands.tokens();
  if (!tokens.enabled()) {
    refuse("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
  }
  // (A failed AUTH keeps an earlier login, as Redis does.)
  if (!tokens.accepts(token)) refuse("WRONGPASS invalid username-password pair or user is disabled.");
  c.client.authenticated = true;
}

// AUTH token | AUTH username token (the user name is not checked: ebb's
// tokens have no users; "default" is what clients send).
Outcome auth(Context& c) {
  if (c.args.size() > 3) refuse("ERR syntax error");
  authenticate(c, c.args.back());
  c.reply.simple("OK");
  return {};
}

void check_client_name(std::string_view name) {
  for (const char ch : name) {
    if (ch <= ' ' || ch > '~') refuse("ERR Client names cannot contain spaces, newlines or special characters.");
  }
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
Outcome hello(Context& c) {
  int protocol = c.client.protocol;
  std::size_t i = 1;
  if (c.args.size() > 1) {
    const auto v = parse_integer(c.args[1]);
    if (!v) refuse("ERR Protocol version is not an integer or out of range");
    if (*v != 2 && *v != 3) refuse("NOPROTO sorry, this protocol version is not supported");
    protocol = static_cast<int>(*v);
    i = 2;
  }
  std::optional<std::string_view> token, name;
  for (; i < c.args.size(); ++i) {
    if (equals_ignoring_case(c.args[i], "AUTH") && i + 2 < c.args.size()) {
      token = c.args[i + 2];
      i += 2;
    } else if (equals_ignoring_case(c.args[i], "SETNAME") && i + 1 < c.args.size()) {
      check_client_name(c.args[i + 1]);
      name = c.args[i + 1];
      i += 1;
    } else {
      refuse("ERR Syntax error in HELLO option '" + std::string(c.args[i].substr(0, 128)) + "'");
    }
  }
  if (token) authenticate(c, *token);
  if (c.commands.tokens().required_for(Access::read) && !c.client.authenticated) {
    refuse("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
  }
  if (name) c.client.name = *name;
  c.client.protocol = protocol;
  c.reply.set_protocol(protocol);
  c.reply.map(7);
  c.reply.bulk("server");
  c.reply.bulk("ebb");
  c.reply.bulk("version");
  c.reply.bulk(c.commands.version());
  c.reply.bulk("proto");
  c.reply.integer(protocol);
  c.reply.bulk("id");
  c.reply.integer(static_cast<long long>(c.client.id));
  c.reply.bulk("mode");
  c.reply.bulk("standalone");
  c.reply.bulk("role");
  c.reply.bulk("master");
  c.reply.bulk("modules");
  c.reply.array(0);
  return {};
}

// CLIENT SETNAME / GETNAME / ID / SETINFO / INFO
Outcome client(Context& c) {
  const std::string sub = ascii_lower(c.args[1]);
  if (sub == "setname" && c.args.size() == 3) {
    check_client_name(c.args[2]);
    c.client.name = c.args[2];
    c.reply.simple("OK");
  } else if (sub == "getname" && c.args.size() == 2) {
    if (c.client.name.empty()) c.reply.null();
    else c.reply.bulk(c.client.name);
  } else if (sub == "id" && c.args.size() == 2) {
    c.reply.integer(static_cast<long long>(c.client.id));
  } else if (sub == "setinfo" && c.args.size() == 4) {
    c.reply.simple("OK");  // library name and version: accepted, not kept
  } else if (sub == "info" && c.args.size() == 2) {
    c.reply.bulk("id=" + std::to_string(c.client.id) + " name=" + c.client.name + " db=0 resp=" + std::to_string(c.client.protocol) + "\n");
  } else {
    refuse("ERR unknown subcommand or wrong number of arguments for '" + std::string(c.args[1].substr(0, 128)) + "'. Try CLIENT HELP.");
  }
  return {};
}

// One database: SELECT 0.
Outcome select(Context& c) {
  const auto db = parse_integer(c.args[1]);
  if (!db) refuse("ERR value is not an integer or out of range");
  if (*db != 0) refuse("ERR DB index is out of range");
  c.reply.simple("OK");
  return {};
}

Outcome quit(Context& c) {
  c.client.quit = true;
  c.reply.simple("OK");
  return {};
}

Outcome reset(Context& c) {
  c.client.protocol = 2;
  c.reply.set_protocol(2);
  c.client.name.clear();
  c.client.authenticated = false;
  c.reply.simple("RESET");
  return {};
}

Outcome info(Context& c);
Outcome command(Context& c);

constexpr std::array kCommands{
    CommandSpec{"ping", -1, Access::open, ping},
    CommandSpec{"echo", 2, Access::open, echo},
    CommandSpec{"auth", -2, Access::open, auth},
    CommandSpec{"hello", -1, Access::open, hello},
    CommandSpec{"client", -2, Access::open, client},
    CommandSpec{"select", 2, Access::open, select},
    CommandSpec{"quit", -1, Access::open, quit},
    CommandSpec{"reset", 1, Access::open, reset},
    CommandSpec{"info", -1, Access::read, info},
    CommandSpec{"command", -1, Access::open, command},
};

std::string info_text(Context& c, std::string_view section) {
  auto& f = c.commands.figures();
  const std::string s = ascii_lower(section);
  const bool all = s.empty() || s == "all" || s == "everything" || s == "default";
  std::string out;
  if (all || s == "server") {
    out += "# Server\r\nredis_version:7.0.0\r\nebb_version:" + c.commands.version() + "\r\nredis_mode:standalone\r\n";
    out += "process_id:" + std::to_string(static_cast<long long>(::getpid())) + "\r\n\r\n";
  }
  if (all || s == "clients") {
    out += "# Clients\r\nconnected_clients:" + std::to_string(f.connected.load()) + "\r\n\r\n";
  }
  if (all || s == "stats") {
    out += "# Stats\r\ntotal_connections_received:" + std::to_string(f.connections_total.load()) +
           "\r\ntotal_commands_processed:" + std::to_string(f.commands_total.load()) +
           "\r\nprotocol_errors:" + std::to_string(f.protocol_errors.load()) + "\r\n\r\n";
  }
  if (all || s == "keyspace") {
    const auto keys = c.commands.service().size();
    out += "# Keyspace\r\n";
    if (keys > 0) out += "db0:keys=" + std::to_string(keys) + ",expires=0,avg_ttl=0\r\n";
  }
  return out;
}

Outcome info(Context& c) {
  c.reply.verbatim(info_text(c, c.args.size() > 1 ? c.args[1] : ""));
  return {};
}

// Redis 7's COMMAND shapes, enough for redis-cli's hints and clients that
// look commands up: COMMAND, COMMAND COUNT, COMMAND INFO name...,
// COMMAND DOCS (none: an empty map), COMMAND LIST.
void write_info(ReplyWriter& r, const CommandSpec& s) {
  r.array(10);
  r.bulk(s.name);
  r.integer(s.arity);
  r.array(s.access == Access::open ? 0 : 1);
  if (s.access == Access::write) r.simple("write");
  if (s.access == Access::read) r.simple("readonly");
  const bool keyed = s.name.find('.') != std::string_view::npos || s.name == "del" || s.name == "exists" || s.name == "type";
  r.integer(keyed ? 1 : 0);
  r.integer(keyed ? (s.name == "del" || s.name == "exists" ? -1 : 1) : 0);
  r.integer(keyed ? 1 : 0);
  r.array(0);  // ACL categories
  r.array(0);  // tips
  r.array(0);  // key specifications
  r.array(0);  // subcommands
}

Outcome command(Context& c) {
  const auto specs = all_command_specs();
  const std::string sub = c.args.size() > 1 ? ascii_lower(c.args[1]) : "";
  if (sub.empty()) {
    c.reply.array(specs.size());
    for (const auto* s : specs) write_info(c.reply, *s);
  } else if (sub == "count" && c.args.size() == 2) {
    c.reply.integer(static_cast<long long>(specs.size()));
  } else if (sub == "list" && c.args.size() == 2) {
    c.reply.array(specs.size());
    for (const auto* s : specs) c.reply.bulk(s->name);
  } else if (sub == "docs") {
    c.reply.map(0);
  } else if (sub == "info") {
    c.reply.array(c.args.size() - 2);
    for (std::size_t i = 2; i < c.args.size(); ++i) {
      const std::string name = ascii_lower(c.args[i]);
      const CommandSpec* found = nullptr;
      for (const auto* s : specs) {
        if (s->name == name) found = s;
      }
      if (found) write_info(c.reply, *found);
      else c.reply.null();
    }
  } else {
    refuse("ERR unknown subcommand or wrong number of arguments for '" + std::string(c.args[1].substr(0, 128)) + "'. Try COMMAND HELP.");
  }
  return {};
}

}  // namespace

std::span<const CommandSpec> connection_commands() { return kCommands; }

}  // namespace ebb::resp
