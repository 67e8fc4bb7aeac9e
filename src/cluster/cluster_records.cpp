// Commit records and the query wire format (cluster/cluster_records.hpp).
#include "ebb/cluster/cluster_records.hpp"

#include <cmath>
#include <limits>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"

namespace ebb::cluster {
namespace {

constexpr std::size_t kMaxString = std::size_t{64} << 20;
constexpr std::size_t kMaxItems = std::size_t{1} << 24;

// A count of elements to come, each at least `min_bytes` long: refused
// when the bytes left cannot hold them (so a forged count never makes a
// reader reserve gigabytes), or past kMaxItems.
std::uint32_t count_of(BinaryReader& r, std::size_t min_bytes, const char* what) {
  const auto n = r.get<std::uint32_t>();
  if (n > kMaxItems || n > r.remaining() / min_bytes) r.fail(std::string("too many ") + what);
  return n;
}

void put_view(BinaryWriter& w, const engine::ViewSpec& v) {
  w.put<std::uint8_t>(static_cast<std::uint8_t>(v.kind));
  w.put<double>(v.half_life);
  w.put<double>(v.window);
}

engine::ViewSpec get_view(BinaryReader& r) {
  const auto kind = r.get<std::uint8_t>();
  if (kind > static_cast<std::uint8_t>(engine::ViewSpec::Kind::window)) r.fail("unknown view kind " + std::to_string(kind));
  engine::ViewSpec v;
  v.kind = static_cast<engine::ViewSpec::Kind>(kind);
  v.half_life = r.get<double>();
  v.window = r.get<double>();
  return v;
}

void put_item(BinaryWriter& w, const CountedItem& i) {
  w.put_string(i.key);
  w.put<double>(i.estimate);
  w.put<double>(i.lower);
  w.put<double>(i.upper);
}

CountedItem get_item(BinaryReader& r) {
  CountedItem i;
  i.key = r.get_string(kMaxString);
  i.estimate = r.get<double>();
  i.lower = r.get<double>();
  i.upper = r.get<double>();
  return i;
}

void put_accuracy(BinaryWriter& w, const engine::Accuracy& a) {
  w.put_string(a.type);
  for (double d : {a.epsilon, a.confidence, a.max_error, a.guarantee_threshold}) w.put<double>(d);
  w.put<std::uint32_t>(a.candidates);
  w.put<std::uint8_t>(a.undersized);
  w.put<std::uint8_t>(a.tail_uncertain);
  for (std::uint64_t n : {a.items, a.evicted_items, a.memory_budget, a.memory_bytes}) w.put<std::uint64_t>(n);
}

engine::Accuracy get_accuracy(BinaryReader& r) {
  engine::Accuracy a;
  a.type = r.get_string(64);
  for (double* d : {&a.epsilon, &a.confidence, &a.max_error, &a.guarantee_threshold}) *d = r.get<double>();
  a.candidates = r.get<std::uint32_t>();
  a.undersized = r.get<std::uint8_t>() != 0;
  a.tail_uncertain = r.get<std::uint8_t>() != 0;
  for (std::uint64_t* n : {&a.items, &a.evicted_items, &a.memory_budget, &a.memory_bytes}) *n = r.get<std::uint64_t>();
  return a;
}

// What a view's answers share (TopKAnswer and PointAnswer alike).
template <typename Answer>
void put_frame(BinaryWriter& w, const Answer& a) {
  put_view(w, a.view);
  for (double d : {a.as_of, a.window_start, a.window_end, a.granularity}) w.put<double>(d);
  w.put_string(a.source);
  put_accuracy(w, a.accuracy);
}

template <typename Answer>
void get_frame(BinaryReader& r, Answer& a) {
  a.view = get_view(r);
  for (double* d : {&a.as_of, &a.window_start, &a.window_end, &a.granularity}) *d = r.get<double>();
  a.source = r.get_string(64);
  a.accuracy = get_accuracy(r);
}

void put_top(BinaryWriter& w, const engine::TopKAnswer& a) {
  put_frame(w, a);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(a.items.size()));
  for (const auto& i : a.items) put_item(w, i);
  w.put<double>(a.unlisted_upper);
  w.put<double>(a.total);
}

engine::TopKAnswer get_top(BinaryReader& r) {
  engine::TopKAnswer a;
  get_frame(r, a);
  const auto n = count_of(r, 4, "items");
  a.items.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) a.items.push_back(get_item(r));
  a.unlisted_upper = r.get<double>();
  a.total = r.get<double>();
  return a;
}

void put_point(BinaryWriter& w, const engine::PointAnswer& a) {
  put_frame(w, a);
  put_item(w, a.item);
  w.put<std::uint8_t>(a.tracked);
  w.put<std::uint8_t>(a.listed ? (*a.listed ? 2 : 1) : 0);
  w.put<double>(a.rate);
}

engine::PointAnswer get_point(BinaryReader& r) {
  engine::PointAnswer a;
  get_frame(r, a);
  a.item = get_item(r);
  a.tracked = r.get<std::uint8_t>() != 0;
  if (const auto listed = r.get<std::uint8_t>(); listed != 0) a.listed = listed == 2;
  a.rate = r.get<double>();
  return a;
}

void put_trending(BinaryWriter& w, const engine::TrendingAnswer& a) {
  put_view(w, a.short_view);
  put_view(w, a.long_view);
  for (double d : {a.as_of, a.min_count, a.since, a.first_event}) w.put<double>(d);
  w.put<std::uint64_t>(a.candidates);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(a.items.size()));
  for (const auto& i : a.items) {
    w.put_string(i.key);
    for (double d : {i.score, i.short_rate, i.long_rate}) w.put<double>(d);
    put_item(w, i.short_count);
    put_item(w, i.long_count);
  }
}

engine::TrendingAnswer get_trending(BinaryReader& r) {
  engine::TrendingAnswer a;
  a.short_view = get_view(r);
  a.long_view = get_view(r);
  for (double* d : {&a.as_of, &a.min_count, &a.since, &a.first_event}) *d = r.get<double>();
  a.candidates = r.get<std::uint64_t>();
  const auto n = count_of(r, 4, "items");
  a.items.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    engine::TrendingItem t;
    t.key = r.get_string(kMaxString);
    for (double* d : {&t.score, &t.short_rate, &t.long_rate}) *d = r.get<double>();
    t.short_count = get_item(r);
    t.long_count = get_item(r);
    a.items.push_back(std::move(t));
  }
  return a;
}

void put_hot_keys(BinaryWriter& w, const service::HotKeysAnswer& a) {
  w.put_string(a.ns);
  for (double d : {a.threshold, a.half_life, a.cool_fraction, a.evaluated_at}) w.put<double>(d);
  w.put<std::uint8_t>(a.complete);
  for (const auto* list : {&a.items, &a.watched}) {
    w.put<std::uint32_t>(static_cast<std::uint32_t>(list->size()));
    for (const auto& k : *list) {
      w.put_string(k.key);
      w.put<double>(k.rate);
      w.put<double>(k.since);
    }
  }
}

service::HotKeysAnswer get_hot_keys(BinaryReader& r) {
  service::HotKeysAnswer a;
  a.ns = r.get_string(kMaxString);
  for (double* d : {&a.threshold, &a.half_life, &a.cool_fraction, &a.evaluated_at}) *d = r.get<double>();
  a.complete = r.get<std::uint8_t>() != 0;
  for (auto* list : {&a.items, &a.watched}) {
    const auto n = count_of(r, 4, "keys");
    list->reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      engine::HotKey k;
      k.key = r.get_string(kMaxString);
      k.rate = r.get<double>();
      k.since = r.get<double>();
      list->push_back(std::move(k));
    }
  }
  return a;
}

void put_distribution(BinaryWriter& w, const engine::DistributionAnswer& a) {
  w.put_string(a.distribution);
  for (double d : {a.z, a.t, a.rate}) w.put<double>(d);
  w.put<std::uint8_t>(static_cast<std::uint8_t>(a.decay));
  w.put<std::uint32_t>(static_cast<std::uint32_t>(a.bins.size()));
  for (const auto& b : a.bins) {
    w.put_string(b.bin);
    w.put<double>(b.count);
    w.put<double>(b.p);
  }
}

engine::DistributionAnswer get_distribution(BinaryReader& r) {
  engine::DistributionAnswer a;
  a.distribution = r.get_string(kMaxString);
  for (double* d : {&a.z, &a.t, &a.rate}) *d = r.get<double>();
  const auto decay = r.get<std::uint8_t>();
  if (decay > static_cast<std::uint8_t>(engine::DistributionDecay::poisson)) r.fail("unknown decay " + std::to_string(decay));
  a.decay = static_cast<engine::DistributionDecay>(decay);
  const auto n = count_of(r, 4, "bins");
  a.bins.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    engine::DistributionBin b;
    b.bin = r.get_string(kMaxString);
    b.count = r.get<double>();
    b.p = r.get<double>();
    a.bins.push_back(std::move(b));
  }
  return a;
}

void put_stats(BinaryWriter& w, const engine::NamespaceStats& s) {
  w.put<std::uint64_t>(s.events);
  w.put<std::uint64_t>(s.excluded);
  w.put<std::uint64_t>(s.batches);
  w.put<double>(s.weight);
  w.put<double>(s.newest_time);
  w.put<std::uint64_t>(s.memory_bytes);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(s.views.size()));
  for (const auto& v : s.views) {
    put_view(w, v.view);
    w.put<std::uint64_t>(v.memory_bytes);
    w.put<std::uint64_t>(v.dropped);
  }
}

engine::NamespaceStats get_stats(BinaryReader& r) {
  engine::NamespaceStats s;
  s.events = r.get<std::uint64_t>();
  s.excluded = r.get<std::uint64_t>();
  s.batches = r.get<std::uint64_t>();
  s.weight = r.get<double>();
  s.newest_time = r.get<double>();
  s.memory_bytes = static_cast<std::size_t>(r.get<std::uint64_t>());
  const auto n = count_of(r, 33, "views");
  s.views.resize(n);
  for (auto& v : s.views) {
    v.view = get_view(r);
    v.memory_bytes = static_cast<std::size_t>(r.get<std::uint64_t>());
    v.dropped = r.get<std::uint64_t>();
  }
  return s;
}

// A namespace's accuracy audit figures (a stats reply carries none: an
// older build reads those, so the audit is a question of its own).
void put_audit(BinaryWriter& w, const engine::NamespaceStats& s) {
  w.put<std::uint8_t>(s.audit.enabled ? 1 : 0);
  w.put<std::uint64_t>(s.audit.sampled_items);
  w.put<std::uint64_t>(s.audit.top_items);
  w.put<double>(s.audit.sample_share);
  w.put<std::uint8_t>(s.audit.from_start ? 1 : 0);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(s.views.size()));
  for (const auto& v : s.views) {
    put_view(w, v.view);
    const auto& a = v.audit;
    w.put<double>(a.as_of);
    w.put<std::uint64_t>(a.compared);
    w.put<std::uint64_t>(a.outside_bound);
    for (double d : {a.max_error, a.max_relative_error, a.error_bound}) w.put<double>(d);
    w.put<std::uint64_t>(a.top_compared);
    w.put<double>(a.top_max_error_share);
    w.put<std::uint32_t>(a.suggested_growth);
    for (auto c : a.histogram.counts) w.put<std::uint64_t>(c);
    w.put<std::uint64_t>(a.histogram.count);
    w.put<double>(a.histogram.sum);
  }
}

engine::NamespaceStats get_audit(BinaryReader& r) {
  engine::NamespaceStats s;
  const auto enabled = r.get<std::uint8_t>();
  if (enabled > 1) r.fail("bad audit flag");
  s.audit.enabled = enabled == 1;
  s.audit.sampled_items = r.get<std::uint64_t>();
  s.audit.top_items = r.get<std::uint64_t>();
  s.audit.sample_share = r.get<double>();
  const auto from_start = r.get<std::uint8_t>();
  if (from_start > 1) r.fail("bad audit flag");
  s.audit.from_start = from_start == 1;
  const auto n = count_of(r, 33, "views");
  s.views.resize(n);
  for (auto& v : s.views) {
    v.view = get_view(r);
    auto& a = v.audit;
    a.as_of = r.get<double>();
    a.compared = r.get<std::uint64_t>();
    a.outside_bound = r.get<std::uint64_t>();
    for (double* d : {&a.max_error, &a.max_relative_error, &a.error_bound}) *d = r.get<double>();
    a.top_compared = r.get<std::uint64_t>();
    a.top_max_error_share = r.get<double>();
    a.suggested_growth = r.get<std::uint32_t>();
    for (auto& c : a.histogram.counts) c = r.get<std::uint64_t>();
    a.histogram.count = r.get<std::uint64_t>();
    a.histogram.sum = r.get<double>();
  }
  return s;
}

}  // namespace

std::string encode_commit(const CommitRecord& c) {
  BinaryWriter w;
  w.put<std::uint8_t>(kCommitRecord);
  w.put_string(c.batch_id);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(c.parts.size()));
  for (const auto& p : c.parts) {
    w.put<std::uint32_t>(p.partition);
    w.put<std::uint64_t>(p.sequence);
  }
  w.put<std::uint32_t>(static_cast<std::uint32_t>(c.configs.size()));
  for (const auto& [ns, revision] : c.configs) {
    w.put_string(ns);
    w.put<std::uint64_t>(revision);
  }
  if (!c.clocks.empty() || c.key) {
    w.buffer()[0] = static_cast<char>(c.key ? kKeyedCommitRecord : kClockedCommitRecord);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(c.clocks.size()));
    for (const auto& clock : c.clocks) {
      w.put_string(clock.ns);
      w.put<double>(clock.before);
      w.put<double>(clock.after);
    }
  }
  if (c.key) {
    w.put_string(c.key->key);
    w.put<std::uint64_t>(c.key->body_hash);
  }
  return std::move(w.buffer());
}

bool is_commit(std::string_view payload) noexcept {
  if (payload.empty()) return false;
  const auto type = static_cast<std::uint8_t>(payload[0]);
  return type == kCommitRecord || type == kClockedCommitRecord || type == kKeyedCommitRecord;
}

CommitRecord decode_commit(std::string_view payload) {
  BinaryReader r(payload, "commit record");
  const auto type = r.get<std::uint8_t>();
  if (type != kCommitRecord && type != kClockedCommitRecord && type != kKeyedCommitRecord) r.fail("not a commit record");
  CommitRecord c;
  c.batch_id = r.get_string(256);
  const auto n = count_of(r, 12, "parts");
  c.parts.resize(n);
  for (auto& p : c.parts) {
    p.partition = r.get<std::uint32_t>();
    p.sequence = r.get<std::uint64_t>();
  }
  const auto m = count_of(r, 4, "namespaces");
  c.configs.reserve(m);
  for (std::uint32_t i = 0; i < m; ++i) {
    auto ns = r.get_string(kMaxString);
    c.configs.emplace_back(std::move(ns), r.get<std::uint64_t>());
  }
  if (type != kCommitRecord) {
    const auto k = count_of(r, 20, "clocks");
    c.clocks.resize(k);
    for (auto& clock : c.clocks) {
      clock.ns = r.get_string(kMaxString);
      clock.before = r.get<double>();
      clock.after = r.get<double>();
      // Times as events have them (a forged clock must not reach a state
      // that no checkpoint could restore). An `after` of -inf is what
      // c9355fe wrote for a first batch whose events were all excluded
      // (no event time): it moves nothing, and the commit stays readable.
      const bool no_event_time = clock.after == -std::numeric_limits<double>::infinity();
      if (no_event_time) clock.after = std::numeric_limits<double>::quiet_NaN();
      const bool after_ok = no_event_time || (std::isfinite(clock.after) && clock.after >= 0);
      if (!(std::isnan(clock.before) || (std::isfinite(clock.before) && clock.before >= 0)) || !after_ok) {
        r.fail("clock of '" + clock.ns + "': not a time in Unix seconds >= 0");
      }
    }
    if (c.clocks.empty() && type == kClockedCommitRecord) r.fail("a clocked commit without clocks");  // (the plain type says that)
  }
  if (type == kKeyedCommitRecord) {
    CommitRecord::Key key;
    key.key = r.get_string(kMaxString);
    key.body_hash = r.get<std::uint64_t>();
    if (key.key.empty()) r.fail("an empty idempotency key");
    c.key = std::move(key);
  }
  r.expect_end();
  return c;
}

std::string encode_merge(const MergeRecord& m) {
  BinaryWriter w;
  w.put<std::uint8_t>(kMergeRecord);
  w.put_string(m.destination);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(m.sources.size()));
  for (const auto& [source, weight] : m.sources) {
    w.put_string(source);
    w.put<double>(weight);
  }
  w.put<std::uint32_t>(static_cast<std::uint32_t>(m.configs.size()));
  for (const auto& [ns, revision] : m.configs) {
    w.put_string(ns);
    w.put<std::uint64_t>(revision);
  }
  return std::move(w.buffer());
}

bool is_merge(std::string_view payload) noexcept { return !payload.empty() && static_cast<std::uint8_t>(payload[0]) == kMergeRecord; }

MergeRecord decode_merge(std::string_view payload) {
  BinaryReader r(payload, "merge record");
  if (r.get<std::uint8_t>() != kMergeRecord) r.fail("not a merge record");
  MergeRecord m;
  m.destination = r.get_string(kMaxString);
  const auto n = count_of(r, 12, "sources");
  if (n == 0) r.fail("a merge without sources");
  m.sources.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    auto source = r.get_string(kMaxString);
    m.sources.emplace_back(std::move(source), r.get<double>());
  }
  const auto k = count_of(r, 12, "namespaces");
  m.configs.reserve(k);
  for (std::uint32_t i = 0; i < k; ++i) {
    auto ns = r.get_string(kMaxString);
    m.configs.emplace_back(std::move(ns), r.get<std::uint64_t>());
  }
  r.expect_end();
  return m;
}

std::string encode_query(const QueryRequest& q) {
  BinaryWriter w;
  w.put<std::uint8_t>(static_cast<std::uint8_t>(q.kind));
  w.put_string(q.ns);
  w.put<std::uint8_t>(q.view.has_value());
  if (q.view) put_view(w, *q.view);
  w.put<std::uint8_t>(q.k.has_value());
  if (q.k) w.put<std::uint64_t>(*q.k);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(q.items.size()));
  for (const auto& i : q.items) w.put_string(i);
  w.put<std::uint64_t>(q.min_position);
  w.put<std::uint32_t>(q.wait_ms);
  if (q.kind == QueryRequest::Kind::top || q.kind == QueryRequest::Kind::counts) w.put<double>(q.as_of);
  if (q.kind == QueryRequest::Kind::trending) {
    for (double d : {q.short_half_life, q.long_half_life, q.min_count, q.since}) w.put<double>(d);
  }
  if (q.kind == QueryRequest::Kind::distribution) {
    w.put<double>(q.now);
    w.put<std::uint8_t>(q.rate.has_value());
    if (q.rate) w.put<double>(*q.rate);
  }
  if (q.kind == QueryRequest::Kind::check_incr) {
    w.put<double>(q.now);
    w.put<double>(q.n);
  }
  if (q.kind == QueryRequest::Kind::history) {
    w.put<double>(q.from);
    w.put<double>(q.to);
  }
  return std::move(w.buffer());
}

QueryRequest decode_query(std::string_view payload) {
  BinaryReader r(payload, "query");
  QueryRequest q;
  const auto kind = r.get<std::uint8_t>();
  if (kind < 1 || kind > 10) r.fail("unknown query kind " + std::to_string(kind));
  q.kind = static_cast<QueryRequest::Kind>(kind);
  q.ns = r.get_string(kMaxString);
  if (r.get<std::uint8_t>()) q.view = get_view(r);
  if (r.get<std::uint8_t>()) q.k = r.get<std::uint64_t>();
  const auto n = count_of(r, 4, "items");
  q.items.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) q.items.push_back(r.get_string(kMaxString));
  q.min_position = r.get<std::uint64_t>();
  q.wait_ms = r.get<std::uint32_t>();
  if (q.kind == QueryRequest::Kind::top || q.kind == QueryRequest::Kind::counts) q.as_of = r.get<double>();
  if (q.kind == QueryRequest::Kind::trending) {
    for (double* d : {&q.short_half_life, &q.long_half_life, &q.min_count, &q.since}) *d = r.get<double>();
  }
  if (q.kind == QueryRequest::Kind::distribution) {
    q.now = r.get<double>();
    if (r.get<std::uint8_t>()) q.rate = r.get<double>();
  }
  if (q.kind == QueryRequest::Kind::check_incr) {
    q.now = r.get<double>();
    q.n = r.get<double>();
  }
  if (q.kind == QueryRequest::Kind::history) {
    q.from = r.get<double>();
    q.to = r.get<double>();
  }
  r.expect_end();
  return q;
}

std::string encode_reply(const QueryReply& reply, QueryRequest::Kind kind) {
  BinaryWriter w;
  w.put<std::uint32_t>(reply.partition);
  w.put<std::uint8_t>(!reply.error);
  if (reply.error) {
    w.put<std::uint8_t>(static_cast<std::uint8_t>(reply.error->kind()));
    w.put_string(reply.error->code());
    w.put_string(reply.error->what());
    return std::move(w.buffer());
  }
  switch (kind) {
    case QueryRequest::Kind::trending:
      put_trending(w, reply.trending);
      break;
    case QueryRequest::Kind::hot_keys:
      put_hot_keys(w, reply.hot);
      break;
    case QueryRequest::Kind::distribution:
      w.put<std::uint8_t>(reply.distribution.has_value());
      if (reply.distribution) put_distribution(w, *reply.distribution);
      break;
    case QueryRequest::Kind::distributions:
      w.put<std::uint64_t>(reply.count);
      break;
    case QueryRequest::Kind::check_incr:
      break;
    case QueryRequest::Kind::history:
      put_view(w, reply.history.view);
      w.put<std::uint8_t>(reply.history.truncated);
      w.put<std::uint32_t>(static_cast<std::uint32_t>(reply.history.points.size()));
      for (const auto& p : reply.history.points) {
        w.put<double>(p.t);
        w.put<std::uint8_t>(p.rank.has_value());
        if (p.rank) w.put<std::uint32_t>(*p.rank);
        for (double d : {p.estimate, p.lower, p.upper}) w.put<double>(d);
      }
      break;
    case QueryRequest::Kind::stats:
    case QueryRequest::Kind::audit:
      w.put<std::uint32_t>(static_cast<std::uint32_t>(reply.stats.size()));
      for (const auto& [name, stats] : reply.stats) {
        w.put_string(name);
        if (kind == QueryRequest::Kind::audit) {
          put_audit(w, stats);
        } else {
          put_stats(w, stats);
        }
      }
      break;
    case QueryRequest::Kind::counts:
      w.put<std::uint32_t>(static_cast<std::uint32_t>(reply.points.size()));
      for (const auto& p : reply.points) put_point(w, p);
      put_top(w, reply.top);
      break;
    case QueryRequest::Kind::top:
      put_top(w, reply.top);
      break;
  }
  return std::move(w.buffer());
}

QueryReply decode_reply(std::string_view payload, QueryRequest::Kind kind) {
  BinaryReader r(payload, "query reply");
  QueryReply reply;
  reply.partition = r.get<std::uint32_t>();
  if (r.get<std::uint8_t>() == 0) {
    const auto error_kind = r.get<std::uint8_t>();
    if (error_kind > static_cast<std::uint8_t>(service::ErrorKind::not_implemented)) r.fail("unknown error kind");
    auto code = r.get_string(256);
    auto message = r.get_string(kMaxString);
    reply.error.emplace(static_cast<service::ErrorKind>(error_kind), std::move(code), message);
    r.expect_end();
    return reply;
  }
  switch (kind) {
    case QueryRequest::Kind::trending:
      reply.trending = get_trending(r);
      break;
    case QueryRequest::Kind::hot_keys:
      reply.hot = get_hot_keys(r);
      break;
    case QueryRequest::Kind::distribution:
      if (r.get<std::uint8_t>()) reply.distribution = get_distribution(r);
      break;
    case QueryRequest::Kind::distributions:
      reply.count = r.get<std::uint64_t>();
      break;
    case QueryRequest::Kind::check_incr:
      break;
    case QueryRequest::Kind::history: {
      reply.history.view = get_view(r);
      reply.history.truncated = r.get<std::uint8_t>() != 0;
      const auto n = count_of(r, 33, "points");
      reply.history.points.resize(n);
      for (auto& p : reply.history.points) {
        p.t = r.get<double>();
        if (r.get<std::uint8_t>()) p.rank = r.get<std::uint32_t>();
        for (double* d : {&p.estimate, &p.lower, &p.upper}) *d = r.get<double>();
      }
      break;
    }
    case QueryRequest::Kind::stats:
    case QueryRequest::Kind::audit: {
      const auto n = count_of(r, 4, "namespaces");
      reply.stats.reserve(n);
      for (std::uint32_t i = 0; i < n; ++i) {
        auto name = r.get_string(kMaxString);
        reply.stats.emplace_back(std::move(name), kind == QueryRequest::Kind::audit ? get_audit(r) : get_stats(r));
      }
      break;
    }
    case QueryRequest::Kind::counts: {
      const auto n = count_of(r, 4, "items");
      reply.points.reserve(n);
      for (std::uint32_t i = 0; i < n; ++i) reply.points.push_back(get_point(r));
      reply.top = get_top(r);
      break;
    }
    case QueryRequest::Kind::top:
      reply.top = get_top(r);
      break;
  }
  r.expect_end();
  return reply;
}

}  // namespace ebb::cluster
