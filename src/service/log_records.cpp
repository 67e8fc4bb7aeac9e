#include "ebb/service/log_records.hpp"

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
  std::string_view str() {
    const auto n = get<std::uint32_t>();
    need(n);
    const auto s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::size_t remaining() const { return in_.size() - pos_; }
  void end() const {
    if (pos_ != in_.size()) throw FormatError("log record: " + std::to_string(in_.size() - pos_) + " trailing bytes");
  }

 private:
  void need(std::size_t n) const {
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
  // Sized once and written through a pointer: appending field by field
  // (four appends an event, each checking capacity) cost more than the
  // copying itself.
  out.resize(size);
  char* p = out.data();
  auto raw = [&p](const void* v, std::size_t n) {
    std::memcpy(p, v, n);
    p += n;
  };
  auto fixed = [&raw](auto v) { raw(&v, sizeof v); };
  auto str = [&](std::string_view v) {
    fixed(static_cast<std::uint32_t>(v.size()));
    raw(v.data(), v.size());
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
  assert(p == out.data() + out.size());  // the size above is the format's
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
  if (t < 1 || t > 6) throw FormatError("log record: unknown type " + std::to_string(t));
  return static_cast<RecordType>(t);
}

BatchRecord decode_batch(std::string_view payload) {
  Cursor c(payload);
  if (c.get<std::uint8_t>() != static_cast<std::uint8_t>(RecordType::batch)) throw FormatError("log record: not a batch");
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
