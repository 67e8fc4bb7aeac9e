// ebb's own TOPK commands, for what RedisBloom cannot answer (docs/resp.md):
// TOPK.HOTKEYS (the keys at or above the key's hot-key threshold, set with
// TOPK.RESERVE ... HOTKEYS rate) and TOPK.TRENDING (the items rising
// fastest, between two of its half-lives). The service answers; this file
// parses and formats, as GET /hot-keys and GET /trending do.
#include <array>

#include "command_context.hpp"

namespace ebb::resp {
namespace {

using service::Access;

// TOPK.HOTKEYS key: one [item, rate (events/s), since (Unix seconds)] per
// hot key, highest rate first, as of the last evaluation.
Outcome hot_keys(Context& c) {
  const std::string key(c.args[1]);
  require_topk(c, key);
  service::HotKeysAnswer answer;
  try {
    answer = c.commands.service().hot_keys(key, {}, service::RedisKey::Type::topk);
  } catch (const service::ServiceError& e) {
    if (e.code() != "hot_keys_off") {
      refuse_key_error(e, kTopKNoKey);  // (deleted, or made again as a CMS, since require_topk)
      throw;
    }
    refuse("ERR hot keys: key '" + key + "' has no hot-key threshold (TOPK.RESERVE key k HOTKEYS rate, or PATCH /namespaces/{name})");
  }
  require_whole(answer.coverage);
  c.reply.array(answer.items.size());
  for (const auto& item : answer.items) {
    c.reply.array(3);
    c.reply.bulk(item.key);
    c.reply.number(item.rate);
    c.reply.number(item.since);
  }
  return {};
}

// TOPK.TRENDING key [K n] [SHORT d] [LONG d] [MINCOUNT x]: one [item,
// score, short rate, long rate] per item, highest score first
// (engine/trending.hpp defines the score).
Outcome trending(Context& c) {
  const std::string key(c.args[1]);
  std::optional<std::size_t> k;
  std::optional<double> short_half_life, long_half_life;
  double min_count = engine::kDefaultTrendingMinCount;
  for (std::size_t i = 2; i < c.args.size(); i += 2) {
    const std::string option = ascii_lower(c.args[i]);
    if (option != "k" && option != "short" && option != "long" && option != "mincount") {
      refuse("ERR syntax error: '" + std::string(c.args[i].substr(0, 64)) + "' is not K, SHORT, LONG or MINCOUNT");
    }
    if (i + 1 >= c.args.size()) refuse("ERR syntax error: " + std::string(c.args[i]) + " needs a value");
    if (option == "k") {
      const auto n = parse_integer(c.args[i + 1]);
      if (!n || *n < 1) refuse("ERR k: must be a positive integer");
      k = static_cast<std::size_t>(*n);
    } else if (option == "mincount") {
      const auto x = parse_double(c.args[i + 1]);
      if (!x || !(*x >= 0 && *x < INFINITY)) refuse("ERR mincount: must be a number >= 0");
      min_count = *x;
    } else {
      (option == "short" ? short_half_life : long_half_life) = duration_argument(c.args, i + 1);
    }
  }
  require_topk(c, key);
  const auto answer = keyed(kTopKNoKey, [&] { return c.commands.service().trending(key, short_half_life, long_half_life, k, min_count, std::nullopt, service::RedisKey::Type::topk); });
  require_whole(answer.coverage);
  c.reply.array(answer.items.size());
  for (const auto& item : answer.items) {
    c.reply.array(4);
    c.reply.bulk(item.key);
    c.reply.number(item.score);
    c.reply.number(item.short_rate);
    c.reply.number(item.long_rate);
  }
  return {};
}

constexpr std::array kCommands{
    CommandSpec{"topk.hotkeys", 2, Access::read, hot_keys},
    CommandSpec{"topk.trending", -2, Access::read, trending},
};

}  // namespace

std::span<const CommandSpec> signal_commands() { return kCommands; }

}  // namespace ebb::resp
