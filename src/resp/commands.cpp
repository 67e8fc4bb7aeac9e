#include "ebb/resp/commands.hpp"

#include <charconv>
#include <cmath>
#include <future>
#include <type_traits>
#include <unordered_map>

#include "command_context.hpp"
#include "ebb/core/clock.hpp"
#include "ebb/core/duration.hpp"
#include "ebb/core/utf8.hpp"

namespace ebb::resp {

std::string wrong_arity(std::string_view command_name) {
  return "ERR wrong number of arguments for '" + ascii_lower(command_name) + "' command";
}

std::optional<long long> parse_integer(std::string_view s) {
  if (s.empty() || s.size() > 20 || s[0] == '+') return std::nullopt;
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  if (s.empty() || s.size() > 64 || s[0] == '+' || s[0] == ' ') return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || std::isnan(v)) return std::nullopt;
  return v;
}

long long whole_count(double upper) {
  // A few ulps of slack, so that a sum of integer weights that lands a hair
  // above its integer is not rounded up past it; only below 2^50, where 4
  // ulps are less than one count (above, the slack would cut whole counts
  // and under-state: from 2^52 on every double is an integer anyway).
  double v = upper;
  if (v < 0x1p50) {
    for (int i = 0; i < 4; ++i) v = std::nextafter(v, 0.0);
  }
  return static_cast<long long>(std::min(9.2e18, std::ceil(std::max(0.0, v))));
}

namespace {

// Runs `work`, which writes its reply to `out` through `reply`. What it
// throws replaces whatever it wrote with an error reply: a refusal's text,
// a service error's message (BUSY when overloaded), anything else as ERR.
template <typename Work>
std::invoke_result_t<Work> replying(std::string& out, ReplyWriter& reply, Work&& work) {
  const std::size_t mark = out.size();
  std::string error;
  try {
    return work();
  } catch (const CommandError& e) {
    error = e.text;
  } catch (const service::ServiceError& e) {
    error = std::string(e.kind() == service::ErrorKind::overloaded ? "BUSY " : "ERR ") + e.what();
  } catch (const std::exception& e) {
    error = std::string("ERR ") + e.what();
  }
  out.resize(mark);  // a handler refuses before it writes, but never leave half a reply
  reply.error(error);
  return std::invoke_result_t<Work>();
}

}  // namespace

std::function<void(std::string&)> deferred_reply(int protocol, std::function<void(ReplyWriter&)> work) {
  return [protocol, work = std::move(work)](std::string& out) {
    ReplyWriter reply(out, protocol);
    replying(out, reply, [&] { work(reply); });
  };
}

Outcome create_key(Context& c, const std::string& key, const std::string& spec_json, const service::RedisKey& redis, std::string_view exists_error) {
  // The key as sent must be a name as it is (the JSON would carry a
  // non-UTF-8 byte as U+FFFD: another name).
  if (const auto problem = engine::namespace_name_problem(key)) refuse("ERR name: " + *problem);
  auto& service = c.commands.service();
  return {{}, deferred_reply(c.reply.protocol(), [&service, key, spec_json, redis, exists = std::string(exists_error)](ReplyWriter& reply) {
            if (service.exists(key)) refuse(exists);
            try {
              auto spec = service::parse_namespace_spec(spec_json, service.limits());
              spec.redis = redis;  // (only RESP sets it: a request's "redis" is refused)
              service.create(std::move(spec));
            } catch (const service::ServiceError& e) {
              if (e.kind() == service::ErrorKind::conflict) refuse(exists);
              throw;
            }
            reply.simple("OK");
          })};
}

void check_items(std::span<const std::string_view> items) {
  if (all_nonempty_ascii(items)) return;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].empty()) refuse("ERR item " + std::to_string(i + 1) + ": must not be empty");
    if (const std::size_t valid = utf8_valid_prefix(items[i]); valid != items[i].size()) {
      refuse("ERR item " + std::to_string(i + 1) + ": must be UTF-8 text (byte " + std::to_string(valid) + " is not)");
    }
  }
}

void refuse_key_error(const service::ServiceError& e, std::string_view no_key) {
  if (e.kind() == service::ErrorKind::not_found) refuse(std::string(no_key));
  if (e.code() == "wrong_type") refuse(std::string(kWrongType));
}

void require_key(Context& c, const std::string& key, service::RedisKey::Type type, std::string_view no_key) {
  const auto r = keyed(no_key, [&] { return c.commands.service().redis_key(key); });
  if (r && r->type != type) refuse(std::string(kWrongType));
}

double duration_argument(Args args, std::size_t at) {
  try {
    return parse_duration(args[at]);
  } catch (const std::exception&) {
    refuse("ERR " + ascii_lower(args[at - 1]) + ": bad duration '" + std::string(args[at].substr(0, 64)) + "'");
  }
}

void require_whole(const engine::Coverage& coverage) {
  if (coverage.partial()) throw service::partitions_missing(coverage.missing, "the answer would leave its keys out (try again)");
}

namespace {

// The service's refusal of one of a command's items (its element
// `position` among the items, 0-based), in RESP's words: "ERR item 3: must
// be 1 to 1024 bytes", "ERR item 2.timestamp: ...", counted from 1 as ADD's
// own checks count.
[[noreturn]] void refuse_item(const service::ErrorElement& element, std::size_t position) {
  std::string text = "ERR item " + std::to_string(position + 1);
  if (!element.field.empty() && element.field != "item_id") text += "." + element.field;
  refuse(text + ": " + element.problem);
}

}  // namespace

std::vector<double> upper_counts(Context& c, const std::string& key, service::RedisKey::Type type,
                                 std::string_view no_key, std::span<const std::string> items) {
  engine::TopKAnswer view;
  std::vector<double> out;
  std::vector<engine::PointAnswer> answers;
  try {
    answers = c.commands.service().counts(key, items, std::nullopt, view, std::nullopt, type);
  } catch (const service::ServiceError& e) {
    refuse_key_error(e, no_key);
    if (e.element()) refuse_item(*e.element(), e.element()->index);
    if (e.code() == "batch_too_large") {
      refuse("ERR items: more than " + std::to_string(c.commands.service().limits().max_batch_events) + " items (--max-batch-events)");
    }
    throw;
  }
  out.reserve(answers.size());
  for (const auto& a : answers) out.push_back(a.item.upper);
  return out;
}

service::RedisKey requested_shape(const service::NamespaceSpec& spec) {
  if (spec.redis) return *spec.redis;
  service::RedisKey r;
  r.k = spec.config.k;
  r.width = spec.config.sketch.width;
  r.depth = spec.config.sketch.depth;
  r.decay = 1;
  return r;
}

service::Commit ingest_items(Context& c, const std::string& key, service::RedisKey::Type type, std::span<const std::string_view> items,
                             std::span<const double> weights, std::string_view no_key, const std::function<void(const engine::Namespace&, bool)>& observe,
                             std::span<const std::uint64_t> hashes) {
  std::vector<engine::Event> events;
  events.reserve(items.size());  // (a pipelined run: thousands)
  std::size_t bytes = 0;
  bool zeros = false;  // an increment of 0: nothing to count, no event
  for (std::size_t i = 0; i < items.size(); ++i) {
    bytes += items[i].size();
    if (weights[i] == 0) {
      zeros = true;
      continue;
    }
    events.push_back({items[i], c.received_at, weights[i]});
  }
  // An increment of 0 is no event, so the service's checks would not see
  // its item: every item is checked first, as it would be counted, so that
  // a command is refused whole before any of it counts (a CMS.INCRBY reads
  // every item's count after counting: a bad one there would refuse what
  // was counted).
  if (zeros) {
    try {
      c.commands.service().check_event_items(key, items, type);
    } catch (const service::ServiceError& e) {
      refuse_key_error(e, no_key);
      if (e.element()) refuse_item(*e.element(), e.element()->index);
      throw;
    }
  }
  if (events.empty()) return {};
  // The events' hashes: the items' own, unless zeros were left out.
  std::vector<std::uint64_t> event_hashes;
  if (zeros && !hashes.empty()) {
    event_hashes.reserve(events.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (weights[i] != 0) event_hashes.push_back(hashes[i]);
    }
    hashes = event_hashes;
  }
  // The item event j is (for an error's words).
  const auto position = [&](std::size_t j) {
    if (!zeros) return j;
    std::size_t i = 0;
    for (std::size_t seen = 0;; ++i) {
      if (weights[i] != 0 && seen++ == j) return i;
    }
  };
  const std::string_view ns = key;
  service::IngestRequest req;
  req.events = events;
  req.namespaces = std::span(&ns, 1);  // (every event's)
  req.received_at = c.received_at;
  req.body_bytes = bytes;
  req.hashes = hashes;
  req.observe = observe;
  req.redis_type = type;
  try {
    return c.commands.service().ingest(req);
  } catch (const service::ServiceError& e) {
    refuse_key_error(e, no_key);
    // The service names events[i]; the client sent items (zero increments
    // were not events): name the item.
    if (e.element() && e.element()->index < events.size()) refuse_item(*e.element(), position(e.element()->index));
    throw;
  }
}

std::vector<const CommandSpec*> all_command_specs() {
  std::vector<const CommandSpec*> out;
  for (const auto group : {connection_commands(), keyspace_commands(), topk_commands(), signal_commands(), cms_commands()}) {
    for (const auto& s : group) out.push_back(&s);
  }
  return out;
}

namespace {

using Table = std::unordered_map<std::string, const CommandSpec*>;

const Table& table() {
  static const Table t = [] {
    Table out;
    for (const CommandSpec* spec : all_command_specs()) out.emplace(std::string(spec->name), spec);
    return out;
  }();
  return t;
}

// Redis's text: "ERR unknown command 'foo', with args beginning with: 'a' 'b' ".
std::string unknown_command(Args args) {
  std::string text = "ERR unknown command '";
  text += args[0].substr(0, 128);
  text += "', with args beginning with: ";
  for (std::size_t i = 1; i < args.size() && text.size() < 256; ++i) {
    text += '\'';
    text += args[i].substr(0, 128);
    text += "' ";
  }
  return text;
}

}  // namespace

Commands::Commands(service::Service& service, const service::AccessTokens& tokens, ServerFigures& figures, std::string version)
    : service_(service), tokens_(tokens), figures_(figures), version_(std::move(version)), lists_(std::make_unique<ListCaches>()) {}

Commands::~Commands() = default;

namespace {

// What every command passes before it runs: a known name, its arity, the
// token its access needs, a recovered service. CommandError otherwise.
const CommandSpec& admit(const service::AccessTokens& tokens, const service::Service& service, const ClientState& client, Args args) {
  const auto& t = table();
  const auto it = t.find(ascii_lower(args[0]));
  if (it == t.end()) refuse(unknown_command(args));
  const CommandSpec& spec = *it->second;
  const auto n = static_cast<long long>(args.size());
  if ((spec.arity > 0 && n != spec.arity) || (spec.arity < 0 && n < -spec.arity)) refuse(wrong_arity(args[0]));
  if (tokens.required_for(spec.access) && !client.authenticated) refuse("NOAUTH Authentication required.");
  if (spec.access != service::Access::open && !service.recovered()) refuse("LOADING ebb is recovering its data directory");
  return spec;
}

}  // namespace

Outcome Commands::execute(ClientState& client, std::span<const std::string_view> args, std::string& out, double received_at, bool defer_if_held) {
  ReplyWriter reply(out, client.protocol);
  if (args.empty()) return {};
  figures_.commands_total.fetch_add(1, std::memory_order_relaxed);
  return replying(out, reply, [&]() -> Outcome {
    const CommandSpec& spec = admit(tokens_, service_, client, args);
    if (received_at == 0) received_at = wall_clock_now();  // (events are stamped when the command came, not when a thread took it up)
    const bool held =
        !clustered() && defer_if_held && !spec.admin && spec.access != service::Access::open && args.size() >= 2 && held_long(args[1]);
    if ((clustered() && spec.access != service::Access::open) || held) {
      // Off the event loop (commands.hpp: in cluster mode, or while a merge
      // holds the key); the arguments are copied, since
      // the connection's buffer moves on. The connection runs nothing else
      // meanwhile (the transport's rule for deferred work), so its state
      // is this command's alone.
      return {{},
              [this, &client, &spec, received_at, owned = std::vector<std::string>(args.begin(), args.end())](std::string& text) {
                const std::vector<std::string_view> views(owned.begin(), owned.end());
                ReplyWriter deferred(text, client.protocol);
                replying(text, deferred, [&] {
                  Context ctx{*this, client, views, deferred, received_at};
                  Outcome outcome = spec.run(ctx);
                  if (outcome.deferred) outcome.deferred(text);  // (its own reply: it wrote none before)
                  if (outcome.commit.lsn == 0) return;
                  if (const auto error = wait_published(outcome.commit); !error.empty()) refuse("ERR " + error);
                });
              },
              held};
    }
    Context ctx{*this, client, args, reply, received_at};
    return spec.run(ctx);
  });
}

std::string Commands::wait_published(service::Commit commit) {
  if (commit.lsn == 0) return "";
  std::promise<std::string> done;
  auto result = done.get_future();
  service_.when_durable(commit, [&done](const std::string& error) { done.set_value(error); });
  return result.get();
}

std::vector<Args> commands_of(std::span<const std::string_view> words, std::span<const std::size_t> ends) {
  std::vector<Args> out;
  out.reserve(ends.size());
  for (std::size_t j = 0, from = 0; j < ends.size(); from = ends[j++]) out.push_back(words.subspan(from, ends[j] - from));
  return out;
}

std::function<void(std::string&)> Commands::deferred_batch(ClientState& client, std::span<const Args> commands) {
  // Copied end to end, as the run's own table holds them.
  std::vector<std::string> owned;
  std::vector<std::size_t> ends;
  ends.reserve(commands.size());
  for (const auto& args : commands) {
    owned.insert(owned.end(), args.begin(), args.end());
    ends.push_back(owned.size());
  }
  return [this, &client, owned = std::move(owned), ends = std::move(ends), received_at = wall_clock_now()](std::string& text) {
    const std::vector<std::string_view> words(owned.begin(), owned.end());
    const std::vector<Args> views = commands_of(words, ends);
    std::vector<BatchReply> replies;
    try {
      execute_batch(client, views, replies, received_at);
      // (In cluster mode a reply is final when it comes back: the batch's
      // handler waited for the log before it read the list after it. A
      // single node's waits here for its record, as the loop would have.)
      std::uint64_t waited = 0;
      std::string error;
      for (auto& r : replies) {
        if (r.commit.lsn == 0) continue;
        if (clustered()) throw std::logic_error("a cluster reply still waiting for its write");
        if (r.commit.lsn != waited) error = wait_published(r.commit), waited = r.commit.lsn;
        if (!error.empty()) {
          r.text.clear();
          ReplyWriter(r.text, client.protocol).error("ERR " + error);
        }
      }
    } catch (const std::exception& e) {
      // Out of memory writing the replies, once counted (execute_batch
      // throws only then): every command says so, lest a client send them
      // again (a single node closes the connection instead).
      replies.assign(views.size(), {});
      for (auto& r : replies) {
        ReplyWriter(r.text, client.protocol).error(std::string("ERR the command was counted, but its reply could not be made (") + e.what() +
                                                   "): do not send it again");
      }
    }
    for (auto& r : replies) text += r.text;
  };
}

std::optional<BatchEntry> Commands::batch_entry(std::span<const std::string_view> args) noexcept {
  if (args.size() < 3) return std::nullopt;
  if (equals_ignoring_case(args[0], "topk.add")) return BatchEntry{args[1], args.size() - 2};
  if (equals_ignoring_case(args[0], "topk.incrby")) return BatchEntry{args[1], (args.size() - 1) / 2};
  return std::nullopt;
}

std::size_t Commands::max_batch_items() const noexcept { return service_.limits().max_batch_events; }

void Commands::execute_batch(ClientState& client, std::span<const Args> commands, std::vector<BatchReply>& replies, double received_at) {
  if (received_at == 0) received_at = wall_clock_now();
  replies.assign(commands.size(), {});
  if (commands.empty()) return;
  bool admitted = true;
  for (const auto& args : commands) {
    try {
      admit(tokens_, service_, client, args);
    } catch (const CommandError&) {
      admitted = false;  // each one's refusal, below
      break;
    }
  }
  if (admitted) {
    std::string unused;
    ReplyWriter reply(unused, client.protocol);
    Context ctx{*this, client, commands.front(), reply, received_at};
    bool counted = false;
    try {
      topk_ingest_run(ctx, commands, replies, counted);
      figures_.commands_total.fetch_add(commands.size(), std::memory_order_relaxed);
      return;
    } catch (...) {
      if (counted) throw;  // (out of memory writing the replies) never counted twice
    }
    // Nothing was counted (the service refused the batch: an item too
    // long, overloaded, the log failing...): one by one, each command
    // answers for itself.
    replies.assign(commands.size(), {});
  }
  for (std::size_t i = 0; i < commands.size(); ++i) {
    // (In place: on a single node execute_batch may run on the event loop,
    // where a deferred command must not run; in cluster mode it runs off
    // the loop already.)
    Outcome outcome = execute(client, commands[i], replies[i].text, received_at, false);
    if (outcome.deferred) outcome.deferred(replies[i].text);
    replies[i].commit = outcome.commit;
  }
}

}  // namespace ebb::resp
