// RedisBloom's CMS.* on ebb namespaces (docs/resp.md): INITBYDIM and
// INITBYPROB create a namespace whose Count-Min sketch is at least the
// width x depth asked for (width rounded up to a power of two), INCRBY
// counts through the service (every pair checked first) and answers each
// item's count after it, MERGE sums keys into one, QUERY and INFO read.
// Counts are upper bounds.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "command_context.hpp"
#include "ebb/io/json_writer.hpp"

namespace ebb::resp {
namespace {

using service::Access;
using service::RedisKey;

constexpr std::string_view kNoKey = "CMS: key does not exist";
void require_cms(Context& c, const std::string& key) { require_key(c, key, RedisKey::Type::cms, kNoKey); }

// A CMS key's width and depth as created (a namespace made over HTTP: its
// own), in one lookup; RedisBloom's errors when it is missing or a top-K.
RedisKey cms_shape(Context& c, const std::string& key) {
  const service::NamespaceSpec spec = keyed(kNoKey, [&] { return c.commands.service().spec(key); });
  if (spec.redis && spec.redis->type != RedisKey::Type::cms) refuse(std::string(kWrongType));
  return requested_shape(spec);
}

// A CMS key is a namespace with one all-time view of that sketch (and a
// small candidate heap: a CMS answers points, not lists).
Outcome create(Context& c, long long width, long long depth) {
  const std::string key(c.args[1]);
  io::JsonWriter w;
  w.begin_object();
  w.key("name").value(key);
  w.key("k").value(std::uint64_t{10});
  w.key("candidates").value(std::uint64_t{64});
  w.key("sketch_width").value(std::max<std::uint64_t>(16, std::bit_ceil(static_cast<std::uint64_t>(width))));
  w.key("sketch_depth").value(static_cast<std::uint64_t>(depth));
  w.end_object();
  RedisKey r;
  r.type = RedisKey::Type::cms;
  r.width = static_cast<std::uint64_t>(width);
  r.depth = static_cast<std::uint64_t>(depth);
  return create_key(c, key, w.str(), r, "CMS: key already exists");
}

// CMS.INITBYDIM key width depth
Outcome initbydim(Context& c) {
  const auto width = parse_integer(c.args[2]), depth = parse_integer(c.args[3]);
  if (!width || *width < 1 || static_cast<std::uint64_t>(*width) > RedisKey::kMaxDimension) refuse("CMS: invalid width");
  if (!depth || *depth < 1 || static_cast<std::uint64_t>(*depth) > RedisKey::kMaxDimension) refuse("CMS: invalid depth");
  return create(c, *width, *depth);
}

// CMS.INITBYPROB key error probability: RedisBloom's sizing,
// width = ceil(2 / error), depth = ceil(log10(probability) / log10(0.5)).
Outcome initbyprob(Context& c) {
  const auto error = parse_double(c.args[2]), probability = parse_double(c.args[3]);
  if (!error || !(*error > 0 && *error < 1)) refuse("CMS: invalid overestimation value");
  if (!probability || !(*probability > 0 && *probability < 1)) refuse("CMS: invalid prob value");
  const double width = std::ceil(2 / *error), depth = std::ceil(std::log10(*probability) / std::log10(0.5));
  if (width > static_cast<double>(RedisKey::kMaxDimension)) refuse("CMS: invalid overestimation value");
  if (depth > static_cast<double>(RedisKey::kMaxDimension)) refuse("CMS: invalid prob value");
  return create(c, static_cast<long long>(width), std::max(1LL, static_cast<long long>(depth)));
}

// CMS.INCRBY key item n [item n ...]: each item's count once the command
// is counted, less what later pairs of the same command added to it (the
// count "after its own increment", as RedisBloom answers pair by pair).
Outcome incrby(Context& c) {
  if ((c.args.size() - 2) % 2 != 0) refuse(wrong_arity(c.args[0]));
  const std::string key(c.args[1]);
  std::vector<std::string> items;
  std::vector<double> weights;
  for (std::size_t i = 2; i < c.args.size(); i += 2) {
    const auto n = parse_integer(c.args[i + 1]);
    if (!n) refuse("CMS: Cannot parse number");
    if (*n < 0) refuse("CMS: Number cannot be negative");
    if (static_cast<double>(*n) > engine::NamespaceConfig::kMaxWeight) refuse("CMS: INCRBY overflow");
    items.emplace_back(c.args[i]);
    weights.push_back(static_cast<double>(*n));
  }
  std::vector<std::string_view> views(items.begin(), items.end());
  check_items(views);
  require_cms(c, key);
  std::vector<double> after;
  bool applied = false;  // (single node: the observer saw the batch counted)
  service::Commit commit;
  try {
    commit = ingest_items(c, key, RedisKey::Type::cms, views, weights, kNoKey, [&](const engine::Namespace& ns, bool counted) {
      if (!counted) return;
      applied = true;
      for (const auto& a : ns.counts(items)) after.push_back(a.item.upper);
    });
  } catch (const service::ServiceError& e) {
    // Past 2^53 counts stop being exact: refused whole, in RedisBloom's words for a counter's overflow.
    if (e.code() == "count_overflow") refuse("CMS: INCRBY overflow");
    throw;
  }
  // No counts from the observer (every increment 0, it failed, or cluster
  // mode, where the partitions count once the log has the increment): read
  // them now, in cluster mode once the log has it (read-your-writes).
  if (after.size() != items.size()) {
    const bool published = c.commands.clustered() && commit.lsn != 0;
    if (published) {
      if (const auto error = c.commands.wait_published(commit); !error.empty()) refuse("ERR " + error);
      commit = {};
    }
    // Once something is counted, no error may read as a refusal: a client
    // must not send the increments again.
    const auto counted_but = [](std::string_view why) {
      refuse("ERR the increments are counted, but their counts cannot be read now: " + std::string(why));
    };
    try {
      after = upper_counts(c, key, RedisKey::Type::cms, kNoKey, items);
    } catch (const CommandError& e) {
      if (!published && !applied) throw;
      counted_but(std::string_view(e.text).starts_with("ERR ") ? std::string_view(e.text).substr(4) : std::string_view(e.text));
    } catch (const std::exception& e) {
      if (!published && !applied) throw;
      counted_but(e.what());
    }
  }
  std::unordered_map<std::string_view, double> later;  // what the pairs after this one added to its item
  std::vector<long long> reply(items.size());
  for (std::size_t i = items.size(); i-- > 0;) {
    double& added = later[items[i]];
    reply[i] = whole_count(std::max(0.0, after[i] - added));
    added += weights[i];
  }
  c.reply.array(reply.size());
  for (const long long v : reply) c.reply.integer(v);
  return {commit, {}};
}

Outcome query(Context& c) {
  const std::string key(c.args[1]);
  require_cms(c, key);
  const std::vector<std::string> items(c.args.begin() + 2, c.args.end());
  const auto counts = upper_counts(c, key, RedisKey::Type::cms, kNoKey, items);
  c.reply.array(counts.size());
  for (const double upper : counts) c.reply.integer(whole_count(upper));
  return {};
}

// CMS.MERGE destination numkeys source [source ...] [WEIGHTS weight ...]:
// the destination's counts become the weighted sum of the sources' (it may
// be one of them), as RedisBloom's do; checked in RedisBloom's order, then
// summed by the service off the event loop. Weights must be 0 or more:
// conservative-update counters cannot be subtracted (docs/resp.md).
Outcome merge(Context& c) {
  const std::string destination(c.args[1]);
  const RedisKey shape = cms_shape(c, destination);
  const auto numkeys = parse_integer(c.args[2]);
  if (!numkeys) refuse("CMS: invalid numkeys");
  if (*numkeys <= 0) refuse("CMS: Number of keys must be positive");
  const Args rest = c.args.subspan(3);
  const auto keyword = std::find_if(rest.begin(), rest.end(), [](std::string_view a) { return equals_ignoring_case(a, "weights"); });
  const auto at = static_cast<std::size_t>(keyword - rest.begin());
  const auto n = static_cast<std::size_t>(*numkeys);
  if (keyword == rest.end()) {
    if (rest.size() != n) refuse("CMS: wrong number of keys");
  } else if (at != n || rest.size() != 1 + 2 * n) {
    refuse("CMS: wrong number of keys/weights");
  }
  std::vector<std::string> sources;
  std::vector<double> weights;
  for (std::size_t i = 0; i < n; ++i) {
    long long weight = 1;
    if (keyword != rest.end()) {
      const auto w = parse_integer(rest[n + 1 + i]);
      if (!w) refuse("CMS: invalid weight value");
      if (*w < 0) refuse("CMS: invalid weight value: ebb cannot subtract counts (a weight must be 0 or more)");
      weight = *w;
    }
    sources.emplace_back(rest[i]);
    const RedisKey theirs = cms_shape(c, sources.back());
    if (theirs.width != shape.width || theirs.depth != shape.depth) refuse("CMS: width/depth is not equal");
    weights.push_back(static_cast<double>(weight));
  }
  auto& service = c.commands.service();
  return {{}, deferred_reply(c.reply.protocol(), [&service, destination, sources = std::move(sources), weights = std::move(weights)](ReplyWriter& reply) {
            try {
              service.merge(destination, sources, weights, RedisKey::Type::cms);
            } catch (const service::ServiceError& e) {
              if (e.code() == "sum_overflow") refuse("CMS: MERGE overflow");
              refuse_key_error(e, kNoKey);  // deleted, or made again as a top-K, meanwhile
              throw;
            }
            reply.simple("OK");
          })};
}

// CMS.INFO key: width, depth as created, count (the weight counted), then ebb's shape.
Outcome info(Context& c) {
  const std::string key(c.args[1]);
  require_cms(c, key);
  const auto described = keyed(kNoKey, [&] { return c.commands.service().describe(key, RedisKey::Type::cms); });
  require_whole(described.coverage);
  const auto& config = described.spec.config;
  const RedisKey r = requested_shape(described.spec);
  c.reply.map(5);
  c.reply.bulk("width");
  c.reply.integer(static_cast<long long>(r.width));
  c.reply.bulk("depth");
  c.reply.integer(static_cast<long long>(r.depth));
  c.reply.bulk("count");
  c.reply.integer(whole_count(described.stats.weight));
  c.reply.bulk("ebb_sketch_width");
  c.reply.integer(config.sketch.width);
  c.reply.bulk("ebb_sketch_depth");
  c.reply.integer(config.sketch.depth);
  return {};
}

constexpr std::array kCommands{
    CommandSpec{"cms.initbydim", 4, Access::write, initbydim, true},
    CommandSpec{"cms.initbyprob", 4, Access::write, initbyprob, true},
    CommandSpec{"cms.incrby", -4, Access::write, incrby},
    CommandSpec{"cms.query", -3, Access::read, query},
    CommandSpec{"cms.merge", -4, Access::write, merge, true},
    CommandSpec{"cms.info", 2, Access::read, info},
};

}  // namespace

std::span<const CommandSpec> cms_commands() { return kCommands; }

}  // namespace ebb::resp
