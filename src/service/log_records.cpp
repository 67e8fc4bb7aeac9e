#include "ebb/service/log_records.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>

#include "ebb/core/binary_io.hpp"
#include "ebb/core/error.hpp"

namespace ebb::service {
namespace {

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof v);
}

void put_str(std::string& out, std::string_view s) {
  put<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

// Writes through a pointer into a buffer with room made beforehand: appending field
// by field (four appends an event, each checking capacity) cost more than
// the copying itself.
struct SizedWriter {
  char* p;
  void raw(const void* v, std::size_t n) {
    std::memcpy(p, v, n);
    p += n;
  }
  template <typename T>
  void fixed(T v) {
    raw(&v, sizeof v);
  }
  // raw() for the usual short item: two overlapping copies of 16, 8 or 4
  // bytes instead of a call to memcpy for a length it must dispatch on
  // (within the n bytes at each end: nothing past either is read or written).
  void short_raw(const char* v, std::size_t n) {
    if (n > 32) return raw(v, n);
    if (n > 16) {
      std::memcpy(p, v, 16);
      std::memcpy(p + n - 16, v + n - 16, 16);
    } else if (n >= 8) {
      std::memcpy(p, v, 8);
      std::memcpy(p + n - 8, v + n - 8, 8);
    } else if (n >= 4) {
      std::memcpy(p, v, 4);
      std::memcpy(p + n - 4, v + n - 4, 4);
    } else if (n > 0) {
      p[0] = v[0];
      p[n / 2] = v[n / 2];
      p[n - 1] = v[n - 1];
    }
    p += n;
  }
  void varint(std::uint64_t v) {  // LEB128: 7 bits a byte, low first
    while (v >= 0x80) {
      *p++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<char>(v);
  }
};

// A compact event's head: item length << 2, then a bit for each number
// stored (a timestamp other than the receive time, a weight other than 1;
// compared bit for bit, so the replay gets exactly the values counted).
constexpr std::uint64_t kOwnTime = 2, kOwnWeight = 1;

std::uint64_t compact_head(const engine::Event& e, std::uint64_t received_bits) {
  return (static_cast<std::uint64_t>(e.item.size()) << 2) | (std::bit_cast<std::uint64_t>(e.time) != received_bits ? kOwnTime : 0) |
         (std::bit_cast<std::uint64_t>(e.weight) != std::bit_cast<std::uint64_t>(1.0) ? kOwnWeight : 0);
}

// A bounds-checked cursor whose strings are views into the payload.
class Cursor {
 public:
  explicit Cursor(std::string_view in) : in_(in) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string_view str() { return bytes(get<std::uint32_t>()); }
  std::string_view bytes(std::uint64_t n) {
    need(n);
    const auto s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  // LEB128, canonical only (no redundant high bytes): a compact record
  // re-encodes to exactly the bytes it was read from.
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto b = get<std::uint8_t>();
      if (shift == 63 && b > 1) throw FormatError("log record: a varint overflows 64 bits");
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        if (b == 0 && shift > 0) throw FormatError("log record: an overlong varint");
        return v;
      }
    }
    throw FormatError("log record: a varint overflows 64 bits");
  }
  std::size_t remaining() const { return in_.size() - pos_; }
  void end() const {
    if (pos_ != in_.size()) throw FormatError("log record: " + std::to_string(in_.size() - pos_) + " trailing bytes");
  }

 private:
  void need(std::uint64_t n) const {
    if (in_.size() - pos_ < n) throw FormatError("log record: truncated");
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace

void encode_batch(std::string& out, const BatchRecord& r) {
  std::size_t size = 1 + 8 + 1 + 4 + (r.key ? 4 + r.key->key.size() + 8 : 0);
  for (const auto& g : r.groups) {
    size += 8 + g.ns.size();
    for (const auto& e : g.events) size += 4 + e.item.size() + 16;
  }
  out.resize(size);
  SizedWriter w{out.data()};
  auto fixed = [&w](auto v) { w.fixed(v); };
  auto str = [&](std::string_view v) {
    fixed(static_cast<std::uint32_t>(v.size()));
    w.raw(v.data(), v.size());
  };
  fixed(static_cast<std::uint8_t>(RecordType::batch));
  fixed(r.received_at);
  fixed(static_cast<std::uint8_t>(r.key ? 1 : 0));
  if (r.key) {
    str(r.key->key);
    fixed(r.key->body_hash);
  }
  fixed(static_cast<std::uint32_t>(r.groups.size()));
  for (const auto& g : r.groups) {
    str(g.ns);
    fixed(static_cast<std::uint32_t>(g.events.size()));
    for (const auto& e : g.events) {
      str(e.item);
      fixed(e.time);
      fixed(e.weight);
    }
  }
  assert(w.p == out.data() + out.size());  // the size above is the format's
}

void encode_batch_compact(std::string& out, const BatchRecord& r) {
  std::vector<BatchGroupView> groups;
  groups.reserve(r.groups.size());
  for (const auto& g : r.groups) groups.push_back({g.ns, g.events});
  encode_batch_compact(out, r.received_at, r.key, groups);
}

void encode_batch_compact(std::string& out, double received_at, const std::optional<IdempotencyStamp>& key, std::span<const BatchGroupView> groups) {
  out.resize(encode_batch_compact_at_front(out, received_at, key, groups).size());
}

std::string_view encode_batch_compact_at_front(std::string& buffer, double received_at, const std::optional<IdempotencyStamp>& key,
                                               std::span<const BatchGroupView> groups) {
  // One pass, into room made as it goes (at most a varint of 10 bytes per
  // length or count, and both numbers per event): sizing the record first
  // took a second pass over every event, a fifth of the encoding's time.
  const auto received_bits = std::bit_cast<std::uint64_t>(received_at);
  constexpr std::size_t kMaxVarint = 10;
  SizedWriter w{buffer.data()};
  char* end = buffer.data() + buffer.size();
  auto room = [&](std::size_t need) {
    if (static_cast<std::size_t>(end - w.p) >= need) [[likely]]
      return;
    const auto used = static_cast<std::size_t>(w.p - buffer.data());
    buffer.resize(std::max(buffer.size() * 2, used + need));
    w.p = buffer.data() + used;
    end = buffer.data() + buffer.size();
  };
  auto fixed = [&w](auto v) { w.fixed(v); };
  auto str = [&](std::string_view v) {
    w.varint(v.size());
    w.raw(v.data(), v.size());
  };
  room(1 + 8 + 1 + (key ? kMaxVarint + key->key.size() + 8 : 0) + kMaxVarint);
  fixed(static_cast<std::uint8_t>(kCompactBatchByte));
  fixed(received_at);
  fixed(static_cast<std::uint8_t>(key ? 1 : 0));
  if (key) {
    str(key->key);
    fixed(key->body_hash);
  }
  w.varint(groups.size());
  for (const auto& g : groups) {
    room(2 * kMaxVarint + g.ns.size());
    str(g.ns);
    w.varint(g.events.size());
    for (const auto& e : g.events) {
      room(kMaxVarint + e.item.size() + 16);
      const auto head = compact_head(e, received_bits);
      w.varint(head);
      w.short_raw(e.item.data(), e.item.size());
      if (head & kOwnTime) fixed(e.time);
      if (head & kOwnWeight) fixed(e.weight);
    }
  }
  return {buffer.data(), static_cast<std::size_t>(w.p - buffer.data())};
}

void encode_distribution_incr(std::string& out, const DistributionIncrRecord& r) {
  out.clear();
  put<std::uint8_t>(out, static_cast<std::uint8_t>(RecordType::distribution_incr));
  put<double>(out, r.received_at);
  put_str(out, r.distribution);
  put<double>(out, r.n);
  put<double>(out, r.rate);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(r.fields.size()));
  for (auto f : r.fields) put_str(out, f);
  // Only Poisson is marked: an exact increment is the same bytes as before.
  if (r.decay == engine::DistributionDecay::poisson) put<std::uint8_t>(out, 1);
}

std::string encode_admin(const AdminRecord& r) {
  std::string out;
  put<std::uint8_t>(out, static_cast<std::uint8_t>(r.type));
  if (r.type == RecordType::patch || r.type == RecordType::remove || r.type == RecordType::state) put_str(out, r.name);
  if (r.type == RecordType::create || r.type == RecordType::patch) put_str(out, r.config_json);
  if (r.type == RecordType::state) put_str(out, r.state);
  return out;
}

RecordType record_type(std::string_view payload) {
  if (payload.empty()) throw FormatError("log record: empty");
  const auto t = static_cast<std::uint8_t>(payload[0]);
  if (t == kCompactBatchByte) return RecordType::batch;
  if (t < 1 || t > 6) throw FormatError("log record: unknown type " + std::to_string(t));
  return static_cast<RecordType>(t);
}

namespace {

BatchRecord decode_compact_batch(Cursor& c) {
  BatchRecord r;
  r.received_at = c.get<double>();
  const auto received_bits = std::bit_cast<std::uint64_t>(r.received_at);
  const auto has_key = c.get<std::uint8_t>();
  if (has_key > 1) throw FormatError("log record: bad key flag");
  if (has_key) {
    IdempotencyStamp k;
    k.key = c.bytes(c.varint());
    k.body_hash = c.get<std::uint64_t>();
    r.key = k;
  }
  // Counts are checked against the bytes left (a group takes at least 2, an
  // event 1), and the vectors grow as events are read: a count the bytes do
  // not hold fails before it costs memory.
  const auto groups = c.varint();
  if (groups > c.remaining() / 2) throw FormatError("log record: claims " + std::to_string(groups) + " groups");
  r.groups.reserve(std::min<std::uint64_t>(groups, 64));
  for (std::uint64_t gi = 0; gi < groups; ++gi) {
    auto& g = r.groups.emplace_back();
    g.ns = c.bytes(c.varint());
    const auto n = c.varint();
    if (n > c.remaining()) throw FormatError("log record: claims " + std::to_string(n) + " events");
    g.events.reserve(std::min<std::uint64_t>(n, 4096));
    for (std::uint64_t i = 0; i < n; ++i) {
      auto& e = g.events.emplace_back();
      const auto head = c.varint();
      e.item = c.bytes(head >> 2);
      e.time = r.received_at;
      if (head & kOwnTime) {
        e.time = c.get<double>();
        if (std::bit_cast<std::uint64_t>(e.time) == received_bits) throw FormatError("log record: a timestamp stored that is the receive time");
      }
      if (head & kOwnWeight) {
        e.weight = c.get<double>();
        if (std::bit_cast<std::uint64_t>(e.weight) == std::bit_cast<std::uint64_t>(1.0)) throw FormatError("log record: a weight of 1 stored");
      }
    }
  }
  c.end();
  return r;
}

}  // namespace

BatchRecord decode_batch(std::string_view payload) {
  Cursor c(payload);
  const auto type = c.get<std::uint8_t>();
  if (type == kCompactBatchByte) return decode_compact_batch(c);
  if (type != static_cast<std::uint8_t>(RecordType::batch)) throw FormatError("log record: not a batch");
  BatchRecord r;
  r.received_at = c.get<double>();
  const auto has_key = c.get<std::uint8_t>();
  if (has_key > 1) throw FormatError("log record: bad key flag");
  if (has_key) {
    IdempotencyStamp k;
    k.key = c.str();
    k.body_hash = c.get<std::uint64_t>();
    r.key = k;
  }
  const auto groups = c.get<std::uint32_t>();
  if (groups > c.remaining() / 8) throw FormatError("log record: claims " + std::to_string(groups) + " groups");
  r.groups.resize(groups);
  for (auto& g : r.groups) {
    g.ns = c.str();
    const auto n = c.get<std::uint32_t>();
    if (n > c.remaining() / 20) throw FormatError("log record: claims " + std::to_string(n) + " events");
    g.events.resize(n);
    for (auto& e : g.events) {
      e.item = c.str();
      e.time = c.get<double>();
      e.weight = c.get<double>();
    }
  }
  c.end();
  return r;
}

AdminRecord decode_admin(std::string_view payload) {
  Cursor c(payload);
  AdminRecord r;
  const auto t = c.get<std::uint8_t>();
  if ((t < 2 || t > 4) && t != 6) throw FormatError("log record: not an admin record");
  r.type = static_cast<RecordType>(t);
  if (r.type == RecordType::patch || r.type == RecordType::remove || r.type == RecordType::state) r.name = c.str();
  if (r.type == RecordType::create || r.type == RecordType::patch) r.config_json = c.str();
  if (r.type == RecordType::state) r.state = c.str();
  c.end();
  return r;
}

DistributionIncrRecord decode_distribution_incr(std::string_view payload) {
  Cursor c(payload);
  if (c.get<std::uint8_t>() != static_cast<std::uint8_t>(RecordType::distribution_incr)) throw FormatError("log record: not a distribution increment");
  DistributionIncrRecord r;
  r.received_at = c.get<double>();
  r.distribution = c.str();
  r.n = c.get<double>();
  r.rate = c.get<double>();
  const auto n = c.get<std::uint32_t>();
  if (n > c.remaining() / 4) throw FormatError("log record: claims " + std::to_string(n) + " fields");
  r.fields.resize(n);
  for (auto& f : r.fields) f = c.str();
  if (c.remaining() > 0) {
    if (c.get<std::uint8_t>() != 1) throw FormatError("log record: bad distribution decay");
    r.decay = engine::DistributionDecay::poisson;
  }
  c.end();
  return r;
}


}  // namespace ebb::service
