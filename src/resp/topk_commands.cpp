// RedisBloom's TOPK.* on ebb namespaces (docs/resp.md): RESERVE creates a
// namespace sized for k (at least the width x depth asked for), ADD and
// INCRBY ingest through the service (all or nothing: every argument is
// checked first), QUERY / COUNT / INFO answer from the namespace's first
// view, LIST from it or the HALFLIFE / WINDOW / ALLTIME view given. Counts
// are upper bounds, never under-estimates; WITHBOUNDS gives all three.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_set>
#include <vector>

#include "command_context.hpp"
#include "ebb/core/byte_size.hpp"
#include "ebb/core/hash.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/io/json_writer.hpp"

namespace ebb::resp {
namespace {

using service::Access;
using service::RedisKey;

// RedisBloom's text, spaces and all (a C string continued over two lines).
constexpr std::string_view kBadIncrement =
    "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";
constexpr long long kMaxIncrement = 100000;
// What RESERVE gives a key at the least, and per item of k: issue 11's
// 128 KiB keeps the top 100 exact on every stream measured.
constexpr std::uint64_t kMinMemory = 128 << 10;
constexpr std::uint64_t kMemoryPerK = 1311;
constexpr std::uint64_t kMaxMemory = std::uint64_t{1} << 30;

// A view named by HALFLIFE d / WINDOW d / ALLTIME at args[i]; advances i.
std::optional<engine::ViewSpec> view_option(Context& c, std::size_t& i) {
  const auto word = c.args[i];
  if (equals_ignoring_case(word, "ALLTIME")) return engine::ViewSpec::all_time();
  if (!equals_ignoring_case(word, "HALFLIFE") && !equals_ignoring_case(word, "WINDOW")) return std::nullopt;
  if (i + 1 >= c.args.size()) refuse("ERR syntax error: " + std::string(word) + " needs a duration such as 5m");
  const double seconds = duration_argument(c.args, ++i);
  return equals_ignoring_case(word, "HALFLIFE") ? engine::ViewSpec::decayed(seconds) : engine::ViewSpec::sliding(seconds);
}

// TOPK.RESERVE key k [width depth decay] [HALFLIFE d]... [WINDOW d]...
//              [HOTKEYS rate [d]]
Outcome reserve(Context& c) {
  const std::string key(c.args[1]);
  const auto k = parse_integer(c.args[2]);
  if (!k || *k < 1) refuse("TopK: invalid k");
  long long width = 8, depth = 7;
  double decay = 0.9;
  std::size_t i = 3;
  const auto is_keyword = [&](std::size_t at) {
    return at < c.args.size() && (equals_ignoring_case(c.args[at], "HALFLIFE") || equals_ignoring_case(c.args[at], "WINDOW") ||
                                  equals_ignoring_case(c.args[at], "HOTKEYS"));
  };
  if (i < c.args.size() && !is_keyword(i)) {
    if (i + 3 > c.args.size() || is_keyword(i + 1) || is_keyword(i + 2)) refuse(wrong_arity(c.args[0]));
    const auto w = parse_integer(c.args[3]), d = parse_integer(c.args[4]);
    const auto y = parse_double(c.args[5]);
    if (!w || *w < 1) refuse("TopK: invalid width");
    if (!d || *d < 1) refuse("TopK: invalid depth");
    if (!y || !(*y > 0 && *y <= 1)) refuse("TopK: invalid decay value. must be '<= 1' & '> 0'");
    width = *w;
    depth = *d;
    decay = *y;
    i = 6;
  }
  std::vector<std::string> half_lives, windows;
  std::optional<double> hot_key_threshold;
  std::optional<std::string> hot_key_half_life;
  for (; i < c.args.size(); ++i) {
    if (!is_keyword(i)) refuse(wrong_arity(c.args[0]));
    if (equals_ignoring_case(c.args[i], "HOTKEYS")) {
      // HOTKEYS rate [d]: the detector's threshold (events/s) and, unless
      // a keyword follows, its half-life.
      const auto rate = i + 1 < c.args.size() ? parse_double(c.args[i + 1]) : std::nullopt;
      if (!rate || !(*rate > 0 && *rate < INFINITY)) refuse("ERR hotkeys: needs a rate in events/s, a number > 0");
      hot_key_threshold = *rate;
      ++i;
      if (i + 1 < c.args.size() && !is_keyword(i + 1)) hot_key_half_life = std::string(c.args[++i]);
      continue;
    }
    const bool half_life = equals_ignoring_case(c.args[i], "HALFLIFE");
    if (i + 1 >= c.args.size()) refuse("ERR syntax error: " + std::string(c.args[i]) + " needs a duration such as 5m");
    (half_life ? half_lives : windows).emplace_back(c.args[++i]);
  }
  if (static_cast<std::uint64_t>(width) > RedisKey::kMaxDimension || static_cast<std::uint64_t>(depth) > RedisKey::kMaxDimension ||
      static_cast<double>(width) * static_cast<double>(depth) * 8 > static_cast<double>(kMaxMemory)) {
    refuse("ERR width x depth: more than ebb keeps for one view (1 GiB); ebb sizes its own sketch from k (docs/resp.md)");
  }
  // The spec as POST /namespaces would take it: the service's rules and limits apply.
  io::JsonWriter w;
  w.begin_object();
  w.key("name").value(key);
  w.key("k").value(static_cast<std::uint64_t>(*k));
  if (!half_lives.empty()) {
    w.key("half_lives").begin_array();
    for (const auto& h : half_lives) w.value(h);
    w.end_array();
  }
  if (!windows.empty()) {
    w.key("windows").begin_array();
    for (const auto& x : windows) w.value(x);
    w.end_array();
  }
  if (hot_key_threshold) w.key("hot_key_threshold").value(*hot_key_threshold);
  if (hot_key_half_life) w.key("hot_key_half_life").value(*hot_key_half_life);
  if (windows.empty() || !half_lives.empty()) {
    const std::uint64_t asked = static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(depth) * 8;
    w.key("memory").value(std::min(kMaxMemory, std::max({kMinMemory, static_cast<std::uint64_t>(*k) * kMemoryPerK, asked})));
  }
  w.end_object();
  RedisKey r;
  r.type = RedisKey::Type::topk;
  r.k = static_cast<std::uint64_t>(*k);
  r.width = static_cast<std::uint64_t>(width);
  r.depth = static_cast<std::uint64_t>(depth);
  r.decay = decay;
  return create_key(c, key, w.str(), r, "TopK: key already exists");
}

// The state the cache names, as the namespace is now; `lowest`: the lowest
// listed score read now, if it was.
ListCache stamp(const engine::Namespace& ns, std::shared_ptr<const ListKeys> list, double lowest = NAN) {
  const auto& view = ns.view(std::nullopt);
  return {ns.instance_id(), ns.batches(), view.evictions(), ns.config().k, std::move(list), lowest, view.rescales()};
}

// The lowest score of the listed keys now; NaN when one is not held (let go
// of) or the view cannot say.
double lowest_listed(const engine::View& view, const ListKeys& list) {
  std::vector<std::optional<double>> scores(list.keys.size());
  if (!view.held_scores(list.views, list.hashes, scores)) return NAN;
  double lowest = INFINITY;
  for (const auto& score : scores) {
    if (!score) return NAN;
    lowest = std::min(lowest, *score);
  }
  return lowest;
}

// Keys in list order, with their membership table.
std::shared_ptr<ListKeys> list_keys_of(std::vector<std::string> keys) {
  auto list = std::make_shared<ListKeys>();
  list->keys = std::move(keys);
  list->table.resize(std::bit_ceil(4 * list->keys.size() + 4));
  const std::size_t mask = list->table.size() - 1;
  for (std::uint32_t i = 0; i < list->keys.size(); ++i) {
    const std::uint64_t hash = hash_key(list->keys[i]);
    list->views.push_back(list->keys[i]);
    list->hashes.push_back(hash);
    std::size_t at = hash & mask;
    while (list->table[at].second != 0) at = (at + 1) & mask;
    list->table[at] = {hash, i + 1};
  }
  return list;
}

ListCache list_of(const engine::Namespace& ns) {
  std::vector<std::string> keys;
  for (auto& item : ns.top().items) keys.push_back(std::move(item.key));
  auto list = list_keys_of(std::move(keys));
  const double lowest = lowest_listed(ns.view(std::nullopt), *list);
  return stamp(ns, std::move(list), lowest);
}

bool listed(const ListCache& cache, std::string_view key, std::uint64_t hash) {
  const auto& l = *cache.list;
  const std::size_t mask = l.table.size() - 1;
  for (std::size_t at = hash & mask; l.table[at].second != 0; at = (at + 1) & mask) {
    if (l.table[at].first == hash && l.keys[l.table[at].second - 1] == key) return true;
  }
  return false;
}
bool listed(const ListCache& cache, std::string_view key) { return listed(cache, key, hash_key(key)); }

// The batch's outsiders found from the other side, when that is cheaper:
// a batch of thousands of items (pipelined ADDs run as one) looked up one
// by one costs more than one pass over the view's summary (a lookup each
// missed cache: the sketch's counters had pushed the summary out of it).
// Every key held with a score of at least `below` that was not listed is
// an outsider if it is one of the batch's items: outsider_at(score) is
// called for each such key. False, with outsider_at not called: not done
// (the view cannot scan, the pass would cost more than the lookups, the
// list's lowest score is not known, or more than kMaxUnlisted keys not
// listed score that high); look the items up instead.
template <typename Each>
bool outsiders_by_scan(const engine::View& view, const ListCache& before, double below, std::span<const std::string_view> items,
                       std::span<const std::uint64_t> hashes, Each&& outsider_at) {
  // The pass costs about an eighth of a lookup per held key, plus a probe
  // of the list for each key it finds, the listed ones among them (counted
  // as kListedCost steps of the pass each). Past a few dozen unlisted keys
  // above `below`, matching them against the batch costs more.
  constexpr std::size_t kScanCostRatio = 8, kListedCost = 2, kMaxUnlisted = 32;
  if (!std::isfinite(below)) return false;
  const std::size_t listed_keys = before.list->keys.size();
  const std::size_t budget = items.size() * kScanCostRatio;
  if (budget <= kListedCost * listed_keys) return false;
  thread_local std::vector<HeldScore> held;  // (its keys are the summary's: cleared before returning)
  held.clear();
  const bool scanned = view.held_at_least(below, budget - kListedCost * listed_keys, listed_keys + kMaxUnlisted, held);
  if (scanned) std::erase_if(held, [&](const HeldScore& h) { return listed(before, h.key, h.hash); });
  if (!scanned || held.size() > kMaxUnlisted) {
    held.clear();
    return false;
  }
  for (std::size_t i = 0; i < items.size() && !held.empty(); ++i) {
    for (std::size_t j = 0; j < held.size(); ++j) {
      if (held[j].hash != hashes[i] || held[j].key != items[i]) continue;
      outsider_at(held[j].score);
      held[j] = held.back();  // each key once
      held.pop_back();
      break;
    }
  }
  held.clear();
  return true;
}

// The list after counting `items` (hashes[i] = hash_key(items[i])) into a
// namespace whose list was `before`: `before`'s, restamped, unless the
// batch may have changed it (then computed anew). The list is the view's
// top k by score, and a batch only raises the scores of its own items (a
// rescale moves every score alike): it can change only if an item not
// listed is now held with a score at least the lowest listed one, or a
// listed key was let go of.
ListCache list_after(const engine::Namespace& ns, const ListCache& before, std::span<const std::string_view> items,
                     std::span<const std::uint64_t> hashes) {
  const auto& view = ns.view(std::nullopt);
  double best_outsider = -INFINITY;
  bool outsider = false;
  // With a full list and its lowest score known (same scale), an item
  // scored below that can change nothing, listed or not (scores only
  // rise): most items of a batch are settled by one look at the view.
  const double below = !std::isnan(before.lowest) && view.rescales() == before.rescales && before.list->keys.size() >= before.k
                           ? before.lowest
                           : -INFINITY;
  auto outsider_at = [&](double score) {
    outsider = true;
    best_outsider = std::max(best_outsider, score);
  };
  if (!outsiders_by_scan(view, before, below, items, hashes, outsider_at)) {
    std::vector<std::optional<double>> scores(items.size());
    if (!view.held_scores(items, hashes, scores)) return list_of(ns);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (scores[i] && *scores[i] >= below && !listed(before, items[i], hashes[i])) outsider_at(*scores[i]);
    }
  }
  if (outsider && before.list->keys.size() < before.k) return list_of(ns);  // room in the list
  const bool none_left = view.evictions() == before.evictions;
  if (!outsider && none_left) return stamp(ns, before.list, before.lowest);
  // The cheap way: the lowest listed score then is a floor on the lowest
  // now (same scale), and no listed key was let go of if every key let go
  // of had a bound below it.
  if (!std::isnan(before.lowest) && view.rescales() == before.rescales && best_outsider < before.lowest) {
    const auto evicted = view.evicted_bound();
    if (none_left || (evicted && *evicted < before.lowest)) return stamp(ns, before.list, before.lowest);
  }
  // Else read every listed key's score now.
  const double lowest = lowest_listed(view, *before.list);
  if (std::isnan(lowest) || (outsider && best_outsider >= lowest)) return list_of(ns);
  return stamp(ns, before.list, lowest);
}

// The top-K list's keys, rendered once per change of the namespace and
// shared by the QUERY commands meanwhile (the service's answer cache):
// each key as its length (4 bytes) and bytes.
std::shared_ptr<const std::string> list_keys(Context& c, const std::string& key) {
  return keyed(kTopKNoKey, [&] { return c.commands.service().top_rendered(key, std::nullopt, std::nullopt, "resp:keys", [](const engine::TopKAnswer& a) {
    require_whole(a.coverage);
    std::string out;
    for (const auto& item : a.items) {
      const auto n = static_cast<std::uint32_t>(item.key.size());
      out.append(reinterpret_cast<const char*>(&n), 4);
      out += item.key;
    }
    return out;
  }, RedisKey::Type::topk); });
}

// Each key of such a rendering, in list order.
template <typename Each>
void for_each_listed(const std::string& rendered, Each&& each) {
  for (std::size_t at = 0; at + 4 <= rendered.size();) {
    std::uint32_t n;
    std::memcpy(&n, rendered.data() + at, 4);
    each(std::string_view(rendered).substr(at + 4, n));
    at += 4 + n;
  }
}

// The list as the partitions hold it now (cluster mode), read-your-writes.
ListCache cluster_list(Context& c, const std::string& key) {
  std::vector<std::string> keys;
  for_each_listed(*list_keys(c, key), [&](std::string_view k) { keys.emplace_back(k); });
  ListCache out;
  out.list = list_keys_of(std::move(keys));
  return out;
}

// The items of one or more ADD / INCRBY commands on one key (with their
// weights; command j's end at ends[j]) counted as one batch, and for each
// item the item it pushed out of the top-K list, if any (nil when none):
// command j's reply written by reply_for(j). `done`: set once the batch
// is (what throws after that must not lead to counting it again).
service::Commit count_and_answer(Context& c, const std::string& key, std::span<const std::string_view> items, std::span<const double> weights,
                                 std::span<const std::size_t> ends, const std::function<ReplyWriter&(std::size_t)>& reply_for, bool& done) {
  std::vector<std::uint64_t> hashes(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) hashes[i] = hash_key(items[i]);
  ListCache before, after;
  bool observed = false;
  service::Commit commit;
  if (c.commands.clustered()) {
    // Cluster mode: the partitions count the batch once it is in the log,
    // so the list is read (merged, read-your-writes) before the batch is
    // published and again once JetStream has it: what other writers counted
    // between the two reads is in the change too (docs/resp.md). A list that
    // cannot be read whole (a partition not answering in time) names nothing.
    std::optional<ListCache> read_before;
    try {
      read_before = cluster_list(c, key);
    } catch (const service::ServiceError&) {
    }
    commit = ingest_items(c, key, service::RedisKey::Type::topk, items, weights, kTopKNoKey, nullptr, hashes);
    done = true;
    if (const auto error = c.commands.wait_published(commit); !error.empty()) {
      for (std::size_t j = 0; j < ends.size(); ++j) reply_for(j).error("ERR " + error);
      return {};
    }
    const bool published = commit.lsn != 0;  // (increments of 0 only: nothing was)
    commit = {};                              // in the log: the reply is final
    if (read_before) {
      before = std::move(*read_before);
      try {
        after = published ? cluster_list(c, key) : before;
        observed = true;
      } catch (const service::ServiceError&) {
      }
    }
  } else {
    // The list before and after the batch, under the namespace's lock: the
    // one TOPK.ADD left last time when nothing else was counted since; after,
    // the same list unless the batch may have changed it.
    auto& caches = c.commands.list_caches();
    commit = ingest_items(c, key, service::RedisKey::Type::topk, items, weights, kTopKNoKey, [&](const engine::Namespace& ns, bool counted) {
        if (!counted) {
          // (A window's list also changes as time passes, with no batch:
          // its list before is read now, never the one left last time.)
          if (ns.view(std::nullopt).spec().kind != engine::ViewSpec::Kind::window) {
            std::lock_guard lock(caches.mu);
            const auto it = caches.by_key.find(key);
            if (it != caches.by_key.end() && it->second.instance == ns.instance_id() && it->second.batches == ns.batches() &&
                it->second.k == ns.config().k) {
              before = it->second;
            }
          }
          if (before.instance == 0) before = list_of(ns);
          return;
        }
        after = list_after(ns, before, items, hashes);
        std::lock_guard lock(caches.mu);
        if (caches.by_key.size() >= Commands::ListCaches::kMaxKeys && !caches.by_key.contains(key)) caches.by_key.clear();
        caches.by_key[key] = after;
        observed = true;
      }, hashes);
    done = true;
  }
  // Who left the list, and who came in: each leaver is named at the first
  // argument that entered, in order (RedisBloom names the item expelled by
  // each add). More leavers than arguments that entered (a key the batch's
  // items pushed out of the summary, replaced in the list by one already
  // held): the others at the first arguments left, in order, so that every
  // leaver is named while the command has arguments to name it at. Unknown
  // (the observer failed): nothing is named. The same list (most
  // commands): nobody left.
  std::vector<std::string_view> expelled;
  if (observed && after.list != before.list) {
    for (const auto& k : before.list->keys) {
      if (!listed(after, k)) expelled.push_back(k);
    }
  }
  // (Sized only when someone left: most batches name nobody.)
  std::vector<std::optional<std::string_view>> answer(expelled.empty() ? 0 : items.size());
  std::vector<std::string_view> named;
  std::size_t next = 0;
  for (std::size_t i = 0; i < items.size() && next < expelled.size(); ++i) {
    const auto item = items[i];
    if (weights[i] > 0 && listed(after, item, hashes[i]) && !listed(before, item, hashes[i]) &&
        std::find(named.begin(), named.end(), item) == named.end()) {
      named.push_back(item);
      answer[i] = expelled[next++];
    }
  }
  for (std::size_t i = 0; i < items.size() && next < expelled.size(); ++i) {
    if (weights[i] > 0 && !answer[i]) answer[i] = expelled[next++];
  }
  std::size_t from = 0;
  for (std::size_t j = 0; j < ends.size(); ++j) {
    auto& reply = reply_for(j);
    reply.array(ends[j] - from);
    if (expelled.empty()) {
      reply.nulls(ends[j] - from);
      from = ends[j];
    }
    for (; from < ends[j]; ++from) {
      if (answer[from]) reply.bulk(*answer[from]);
      else reply.null();
    }
  }
  return commit;
}

// An ADD's or INCRBY's items and weights, every argument checked
// (INCRBY: every increment before any is counted; RedisBloom counts those
// before a bad one).
void parse_items(Args args, std::vector<std::string_view>& items, std::vector<double>& weights) {
  if (equals_ignoring_case(args[0], "topk.add")) {
    items.insert(items.end(), args.begin() + 2, args.end());
    weights.insert(weights.end(), args.size() - 2, 1.0);
    check_items(std::span(items).last(args.size() - 2));
    return;
  }
  if (!equals_ignoring_case(args[0], "topk.incrby")) throw std::logic_error("parse_items: not an ADD or INCRBY");
  if ((args.size() - 2) % 2 != 0) refuse(wrong_arity(args[0]));
  const std::size_t first = items.size();
  for (std::size_t i = 2; i < args.size(); i += 2) {
    const auto n = parse_integer(args[i + 1]);
    if (!n || *n < 0 || *n > kMaxIncrement) refuse(std::string(kBadIncrement));
    items.push_back(args[i]);
    weights.push_back(static_cast<double>(*n));
  }
  check_items(std::span(items).subspan(first));
}

// TOPK.ADD key item [item ...] and TOPK.INCRBY key item incr [item incr ...].
Outcome ingest(Context& c) {
  std::vector<std::string_view> items;
  std::vector<double> weights;
  parse_items(c.args, items, weights);
  const std::string key(c.args[1]);
  require_topk(c, key);
  const std::size_t end = items.size();
  bool counted = false;  // (one command: never run again)
  return {count_and_answer(c, key, items, weights, std::span(&end, 1), [&](std::size_t) -> ReplyWriter& { return c.reply; }, counted), {}};
}

Outcome query(Context& c) {
  const std::string key(c.args[1]);
  require_topk(c, key);
  const auto keys = list_keys(c, key);
  std::unordered_set<std::string_view> listed;
  for_each_listed(*keys, [&](std::string_view k) { listed.insert(k); });
  c.reply.array(c.args.size() - 2);
  for (std::size_t i = 2; i < c.args.size(); ++i) c.reply.boolean(listed.contains(c.args[i]));
  return {};
}

Outcome count(Context& c) {
  const std::string key(c.args[1]);
  require_topk(c, key);
  const std::vector<std::string> items(c.args.begin() + 2, c.args.end());
  const auto counts = upper_counts(c, key, RedisKey::Type::topk, kTopKNoKey, items);
  c.reply.array(counts.size());
  for (const double upper : counts) c.reply.integer(whole_count(upper));
  return {};
}

// TOPK.LIST key [WITHCOUNT] [WITHBOUNDS] [HALFLIFE d | WINDOW d | ALLTIME]
Outcome list(Context& c) {
  const std::string key(c.args[1]);
  bool with_count = false, with_bounds = false;
  std::optional<engine::ViewSpec> view;
  for (std::size_t i = 2; i < c.args.size(); ++i) {
    if (equals_ignoring_case(c.args[i], "WITHCOUNT") && !with_count) {
      with_count = true;
    } else if (equals_ignoring_case(c.args[i], "WITHBOUNDS") && !with_bounds) {
      with_bounds = true;
    } else if (auto v = view ? std::nullopt : view_option(c, i)) {
      view = v;
    } else {
      refuse("WITHCOUNT keyword expected");
    }
  }
  require_topk(c, key);
  const int protocol = c.reply.protocol();
  const std::string format = "resp" + std::to_string(protocol) + ":list:" + (with_count ? "c" : "") + (with_bounds ? "b" : "");
  const auto rendered = keyed(kTopKNoKey, [&] { return c.commands.service().top_rendered(key, view, std::nullopt, format, [&](const engine::TopKAnswer& a) {
    require_whole(a.coverage);
    std::string out;
    ReplyWriter r(out, protocol);
    const std::size_t per_item = 1 + (with_count ? 1 : 0) + (with_bounds ? 3 : 0);
    r.array(a.items.size() * per_item);
    for (const auto& item : a.items) {
      r.bulk(item.key);
      if (with_count) r.integer(whole_count(item.upper));
      if (with_bounds) {
        r.number(item.lower);
        r.number(item.estimate);
        r.number(item.upper);
      }
    }
    return out;
  }, RedisKey::Type::topk); });
  c.reply.raw(*rendered);
  return {};
}

// TOPK.INFO key: RedisBloom's fields as RESERVE was given them (a namespace
// made over HTTP: its own k, width and depth, decay 1), then ebb's shape.
Outcome info(Context& c) {
  const std::string key(c.args[1]);
  require_topk(c, key);
  const auto described = keyed(kTopKNoKey, [&] { return c.commands.service().describe(key, RedisKey::Type::topk); });
  require_whole(described.coverage);
  const auto& config = described.spec.config;
  const RedisKey r = requested_shape(described.spec);
  std::vector<std::string> views;
  if (config.all_time) views.push_back("all");  // (the namespace's order: LIST's default view is the first)
  for (double w : config.windows) views.push_back("window " + format_duration(w));
  for (double h : config.half_lives) views.push_back("half_life " + format_duration(h));
  c.reply.map(9);
  c.reply.bulk("k");
  c.reply.integer(static_cast<long long>(config.k));  // (PATCH may have changed it since RESERVE)
  c.reply.bulk("width");
  c.reply.integer(static_cast<long long>(r.width));
  c.reply.bulk("depth");
  c.reply.integer(static_cast<long long>(r.depth));
  c.reply.bulk("decay");
  c.reply.number(r.decay);
  c.reply.bulk("ebb_sketch_width");
  c.reply.integer(config.sketch.width);
  c.reply.bulk("ebb_sketch_depth");
  c.reply.integer(config.sketch.depth);
  c.reply.bulk("ebb_candidates");
  c.reply.integer(config.candidates);
  c.reply.bulk("ebb_memory_bytes");
  c.reply.integer(static_cast<long long>(described.stats.memory_bytes));
  c.reply.bulk("ebb_views");
  c.reply.array(views.size());
  for (const auto& v : views) c.reply.bulk(v);
  return {};
}

constexpr std::array kCommands{
    CommandSpec{"topk.reserve", -3, Access::write, reserve, true},
    CommandSpec{"topk.add", -3, Access::write, ingest},
    CommandSpec{"topk.incrby", -4, Access::write, ingest},
    CommandSpec{"topk.query", -3, Access::read, query},
    CommandSpec{"topk.count", -3, Access::read, count},
    CommandSpec{"topk.list", -2, Access::read, list},
    CommandSpec{"topk.info", 2, Access::read, info},
};

}  // namespace

std::span<const CommandSpec> topk_commands() { return kCommands; }

void topk_ingest_run(Context& c, std::span<const Args> commands, std::vector<BatchReply>& replies, bool& counted_any) {
  const std::string key(c.args[1]);
  require_topk(c, key);
  std::vector<std::string_view> items;
  std::vector<double> weights;
  std::vector<std::size_t> ends;     // of the commands counted
  std::vector<std::size_t> counted;  // their indices in `commands`
  std::vector<bool> logged;          // whether each counts anything (not only increments of 0)
  std::size_t arguments = 0;
  for (const auto& args : commands) arguments += args.size();
  items.reserve(arguments);  // (more than the run has items: no reallocation)
  weights.reserve(arguments);
  for (std::size_t j = 0; j < commands.size(); ++j) {
    if (commands[j][1] != c.args[1]) throw std::logic_error("topk_ingest_run: a run over more than one key");
    const std::size_t mark = items.size();
    try {
      parse_items(commands[j], items, weights);
    } catch (const CommandError& e) {
      // This command is refused alone; the others count.
      items.resize(mark);
      weights.resize(mark);
      ReplyWriter(replies[j].text, c.reply.protocol()).error(e.text);
      continue;
    }
    ends.push_back(items.size());
    counted.push_back(j);
    logged.push_back(std::any_of(weights.begin() + static_cast<std::ptrdiff_t>(mark), weights.end(), [](double w) { return w > 0; }));
  }
  if (counted.empty()) return;
  std::vector<ReplyWriter> writers;
  writers.reserve(counted.size());
  for (const std::size_t j : counted) writers.emplace_back(replies[j].text, c.reply.protocol());
  const auto commit = count_and_answer(c, key, items, weights, ends, [&](std::size_t n) -> ReplyWriter& { return writers[n]; }, counted_any);
  for (std::size_t n = 0; n < counted.size(); ++n) {
    if (logged[n]) replies[counted[n]].commit = commit;
  }
}

}  // namespace ebb::resp
