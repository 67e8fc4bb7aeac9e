// Chunked questions and answers (cluster/message_chunks.hpp).
#include "ebb/cluster/message_chunks.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <random>

#include "ebb/cluster/nats_client.hpp"

namespace ebb::cluster {
namespace {

// A sender that stopped halfway leaves its chunks here this long at most.
constexpr auto kStale = std::chrono::seconds(60);

// "<group>/<i>/<n>"; false when the header is not of that form.
bool parse_chunk(std::string_view text, std::uint64_t& group, std::uint32_t& i, std::uint32_t& n) {
  const auto a = text.find('/');
  const auto b = a == std::string_view::npos ? a : text.find('/', a + 1);
  if (b == std::string_view::npos) return false;
  auto number = [](std::string_view s, auto& out, int base) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
    return ec == std::errc() && end == s.data() + s.size();
  };
  return number(text.substr(0, a), group, 16) && number(text.substr(a + 1, b - a - 1), i, 10) && number(text.substr(b + 1), n, 10) && n > 0 &&
         i < n;
}

}  // namespace

std::size_t chunk_bytes(natsConnection* nc) noexcept {
  const std::int64_t max = nc ? natsConnection_GetMaxPayload(nc) : 0;
  constexpr std::int64_t kRoom = 4096;  // subjects, headers, and a margin
  if (max > 2 * kRoom) return static_cast<std::size_t>(max - kRoom);
  return static_cast<std::size_t>(std::max<std::int64_t>(max / 2, 64));  // a server with a tiny max_payload: half of it
}

natsStatus publish_chunked(natsConnection* nc, const std::string& subject, const std::string& reply_to, std::string_view payload,
                           std::size_t chunk) {
  const char* reply = reply_to.empty() ? nullptr : reply_to.c_str();
  if (payload.size() <= chunk) {
    if (reply) return natsConnection_PublishRequest(nc, subject.c_str(), reply, payload.data(), static_cast<int>(payload.size()));
    return natsConnection_Publish(nc, subject.c_str(), payload.data(), static_cast<int>(payload.size()));
  }
  thread_local std::mt19937_64 random{std::random_device{}()};
  const std::uint64_t group = random();
  const std::size_t n = (payload.size() + chunk - 1) / chunk;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view piece = payload.substr(i * chunk, chunk);
    natsMsg* raw = nullptr;
    natsStatus s = natsMsg_Create(&raw, subject.c_str(), reply, piece.data(), static_cast<int>(piece.size()));
    if (s != NATS_OK) return s;
    MsgPtr m(raw);
    char header[64];
    std::snprintf(header, sizeof header, "%llx/%zu/%zu", static_cast<unsigned long long>(group), i, n);
    s = natsMsgHeader_Set(m.get(), kChunkHeader, header);
    if (s == NATS_OK) s = natsConnection_PublishMsg(nc, m.get());
    if (s != NATS_OK) return s;
  }
  return NATS_OK;
}

std::optional<std::string> ChunkAssembler::add(std::string_view key, natsMsg* m) noexcept {
  try {
    return add_chunk(key, m);
  } catch (const std::exception&) {  // out of memory: this payload is lost, the subscription goes on
    return std::nullopt;
  }
}

ChunkAssembler::~ChunkAssembler() {
  budget_->bytes -= held_;
  budget_->partials -= partial_.size();
}

std::optional<std::string> ChunkAssembler::add_chunk(std::string_view key, natsMsg* m) {
  const char* header = nullptr;
  if (natsMsgHeader_Get(m, kChunkHeader, &header) != NATS_OK || !header) return std::string(msg_data(m));
  const auto now = std::chrono::steady_clock::now();
  forget_stale(now);
  std::uint64_t group = 0;
  std::uint32_t i = 0, n = 0;
  if (!parse_chunk(header, group, i, n)) return std::nullopt;
  const std::string_view data = msg_data(m);
  std::string id(key);
  id.append(1, '/').append(std::to_string(group));
  auto it = partial_.find(id);
  if (it == partial_.end()) {
    if (i != 0) return std::nullopt;  // the start is gone: nothing to put together
    // Every chunk but the last is as long as the first, and not empty: a
    // claim past the limits is refused before anything is held.
    if (data.empty() && n > 1) return std::nullopt;
    const bool too_large = !data.empty() && std::uint64_t{n - 1} > limits_.max_whole / data.size();
    if (too_large) return std::nullopt;
    if (budget_->partials.fetch_add(1) >= limits_.max_partials) {
      --budget_->partials;
      return std::nullopt;
    }
    it = partial_.emplace(std::move(id), Partial{0, n, {}, now}).first;
  }
  Partial& p = it->second;
  const bool last = i + 1 == n;
  if (i != p.next || n != p.total || (data.empty() && !last) || p.data.size() + data.size() > limits_.max_whole) {
    drop(it);  // out of order, another payload's, or past the limits: the whole is lost
    return std::nullopt;
  }
  if (budget_->bytes.fetch_add(data.size()) + data.size() > limits_.max_held) {
    budget_->bytes -= data.size();
    drop(it);
    return std::nullopt;
  }
  p.data.append(data);
  held_ += data.size();
  if (++p.next < p.total) return std::nullopt;
  std::string whole = std::move(p.data);
  held_ -= whole.size();
  budget_->bytes -= whole.size();
  --budget_->partials;
  partial_.erase(it);
  return whole;
}

void ChunkAssembler::drop(Map::iterator it) noexcept {
  held_ -= it->second.data.size();
  budget_->bytes -= it->second.data.size();
  --budget_->partials;
  partial_.erase(it);
}

void ChunkAssembler::forget_stale(std::chrono::steady_clock::time_point now) {
  // At most once a second: a flood of chunks does not walk every partial each.
  if (now - last_sweep_ < std::chrono::seconds(1)) return;
  last_sweep_ = now;
  for (auto it = partial_.begin(); it != partial_.end();) {
    if (now - it->second.started > kStale) {
      auto stale = it++;
      drop(stale);
    } else {
      ++it;
    }
  }
}

}  // namespace ebb::cluster
