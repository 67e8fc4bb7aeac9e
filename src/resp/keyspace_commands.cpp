// Keys are namespaces: DEL, EXISTS, TYPE, DBSIZE.
#include <array>
#include <set>
#include <string_view>
#include <vector>

#include "command_context.hpp"

namespace ebb::resp {
namespace {

using service::Access;

// One key at a time, each durable before the next, off the event loop (as
// Redis, not atomic across keys: a failure past the first leaves the
// earlier ones deleted). A key named twice is deleted once: a create from
// another connection between the two would otherwise count twice.
Outcome del(Context& c) {
  std::vector<std::string> keys;
  std::set<std::string_view> named;
  for (std::size_t i = 1; i < c.args.size(); ++i) {
    if (named.insert(c.args[i]).second) keys.emplace_back(c.args[i]);
  }
  auto& service = c.commands.service();
  return {{}, deferred_reply(c.reply.protocol(), [&service, keys = std::move(keys)](ReplyWriter& reply) {
            long long removed = 0;
            for (const auto& key : keys) {
              try {
                service.remove(key);
                ++removed;
              } catch (const service::ServiceError& e) {
                if (e.kind() != service::ErrorKind::not_found) throw;
              }
            }
            reply.integer(removed);
          })};
}

// (EXISTS, TYPE, DBSIZE: in cluster mode, after every change acknowledged
// anywhere before them; sync_catalog.)
Outcome exists(Context& c) {
  c.commands.service().sync_catalog();
  long long n = 0;
  for (std::size_t i = 1; i < c.args.size(); ++i) n += c.commands.service().exists(std::string(c.args[i])) ? 1 : 0;
  c.reply.integer(n);
  return {};
}

// RedisBloom's type names; a namespace made over HTTP is a top-K.
Outcome type(Context& c) {
  c.commands.service().sync_catalog();
  try {
    const auto key = c.commands.service().redis_key(std::string(c.args[1]));
    c.reply.simple(key && key->type == service::RedisKey::Type::cms ? "CMSk-TYPE" : "TopK-TYPE");
  } catch (const service::ServiceError& e) {
    if (e.kind() != service::ErrorKind::not_found) throw;
    c.reply.simple("none");
  }
  return {};
}

Outcome dbsize(Context& c) {
  c.commands.service().sync_catalog();
  c.reply.integer(static_cast<long long>(c.commands.service().size()));
  return {};
}

constexpr std::array kCommands{
    CommandSpec{"del", -2, Access::write, del, true},
    CommandSpec{"exists", -2, Access::read, exists},
    CommandSpec{"type", 2, Access::read, type},
    CommandSpec{"dbsize", 1, Access::read, dbsize},
};

}  // namespace

std::span<const CommandSpec> keyspace_commands() { return kCommands; }

}  // namespace ebb::resp
