#include "ebb/engine/hot_key_detector.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"

namespace ebb::engine {

void HotKeyDetector::validate(const HotKeyOptions& o) {
  if (!(std::isfinite(o.threshold) && o.threshold > 0)) throw InvalidArgument("hot_key_threshold: must be a finite number of events/s > 0");
  if (!(std::isfinite(o.half_life) && o.half_life > 0)) throw InvalidArgument("hot_key_half_life: must be a duration > 0");
  if (!(o.cool_fraction > 0 && o.cool_fraction <= 1)) throw InvalidArgument("cool_fraction: must be in (0, 1]");
}

HotKeyDetector::HotKeyDetector(const NamespaceConfig& config, HotKeyOptions options)
    : options_((validate(options), options)),
      lambda_(std::log(2.0) / options.half_life),
      candidates_(config.candidates),
      config_(config),
      view_(ViewSpec::decayed(options.half_life), config) {}

void HotKeyDetector::set_threshold(double threshold) {
  HotKeyOptions next = options_;
  next.threshold = threshold;
  validate(next);
  options_ = next;
}

double HotKeyDetector::rate_of(std::string_view key) const {
  if (auto it = hot_.find(key); it != hot_.end()) return it->second.rate;
  return lambda_ * view_.point(key, hash_key(key), evaluated_at_).item.upper;
}

std::vector<HotKeyEvent> HotKeyDetector::evaluate(double now) {
  now = std::max(now, evaluated_at_);  // a judgement never goes back in time
  const auto top = view_.top(candidates_, now);
  std::unordered_map<std::string_view, double> candidate_rate;
  candidate_rate.reserve(top.items.size());
  for (const auto& item : top.items) candidate_rate.emplace(item.key, lambda_ * item.upper);
  // The hot keys first: their rates now (a key that left the candidates:
  // its sketch estimate), and those that cooled.
  std::vector<HotKeyEvent> cooled;
  for (auto it = hot_.begin(); it != hot_.end();) {
    HotKey& k = it->second;
    const auto c = candidate_rate.find(k.key);
    k.rate = c != candidate_rate.end() ? c->second : lambda_ * view_.point(k.key, hash_key(k.key), now).item.upper;
    if (k.rate < options_.threshold * options_.cool_fraction) {
      cooled.push_back({false, k});
      it = hot_.erase(it);
    } else {
      ++it;
    }
  }
  // Then the candidates that turned hot, hottest first. The hot set holds
  // at most `candidates` keys (its memory is bounded like the heap's): when
  // full, a hotter key pushes out the coolest (reported cooled), a cooler
  // one is left out; either way the answer is incomplete.
  bool full = false;
  std::vector<HotKeyEvent> turned_hot;
  // By upper bound (the rate judged), not the list's estimate order: when
  // the hot set is full, the hotter key must come first.
  std::vector<const CountedItem*> by_upper;
  by_upper.reserve(top.items.size());
  for (const auto& item : top.items) by_upper.push_back(&item);
  std::stable_sort(by_upper.begin(), by_upper.end(), [](const CountedItem* a, const CountedItem* b) { return a->upper > b->upper; });
  for (const CountedItem* p : by_upper) {
    const CountedItem& item = *p;
    const double rate = lambda_ * item.upper;
    if (rate < options_.threshold || hot_.contains(item.key)) continue;
    if (hot_.size() >= candidates_) {
      full = true;
      auto coolest = std::min_element(hot_.begin(), hot_.end(), [](const auto& a, const auto& b) {
        return a.second.rate != b.second.rate ? a.second.rate < b.second.rate : a.first > b.first;
      });
      if (coolest == hot_.end() || coolest->second.rate >= rate) continue;
      cooled.push_back({false, coolest->second});
      hot_.erase(coolest);
    }
    HotKey k{item.key, rate, now};
    hot_.emplace(item.key, k);
    turned_hot.push_back({true, std::move(k)});
  }
  // Every key outside the candidates has at most the guarantee threshold:
  // below the rate threshold, none of them can be hot.
  complete_ = !full && lambda_ * top.accuracy.guarantee_threshold < options_.threshold;
  std::sort(turned_hot.begin(), turned_hot.end(),
            [](const HotKeyEvent& a, const HotKeyEvent& b) { return a.key.rate != b.key.rate ? a.key.rate > b.key.rate : a.key.key < b.key.key; });
  turned_hot.insert(turned_hot.end(), cooled.begin(), cooled.end());  // cooled come out of the map by key
  evaluated_at_ = now;
  return turned_hot;
}

std::vector<HotKey> HotKeyDetector::hot() const {
  std::vector<HotKey> out;
  out.reserve(hot_.size());
  for (const auto& [_, k] : hot_) out.push_back(k);
  std::sort(out.begin(), out.end(), [](const HotKey& a, const HotKey& b) { return a.rate != b.rate ? a.rate > b.rate : a.key < b.key; });
  return out;
}

std::size_t HotKeyDetector::memory_bytes() const noexcept {
  std::size_t bytes = sizeof(*this) - sizeof(view_) + view_.memory_bytes();
  for (const auto& [key, k] : hot_) bytes += 2 * sizeof(HotKey) + 2 * key.capacity();  // map node (key and value) and both strings
  return bytes;
}

void HotKeyDetector::serialize_state_into(BinaryWriter& w) const {
  const auto blob = w.begin_blob(BlobKind::hot_key_detector, 1);
  w.put<double>(options_.half_life);
  w.put<double>(evaluated_at_);
  w.put<std::uint8_t>(complete_ ? 1 : 0);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(hot_.size()));
  for (const auto& [key, k] : hot_) {
    w.put_string(key);
    w.put<double>(k.rate);
    w.put<double>(k.since);
  }
  w.put_part([&](BinaryWriter& part) { view_.serialize_state_into(part); });
  w.end_blob(blob);
}

void HotKeyDetector::restore_state(std::string_view blob) {
  auto opened = open_blob(blob, BlobKind::hot_key_detector, 1);
  BinaryReader r(opened.payload, "hot-key detector");
  const double half_life = r.get<double>();
  if (half_life != options_.half_life) r.fail("state of a detector with another half-life");
  const double evaluated_at = r.get<double>();
  if (!(std::isfinite(evaluated_at) && evaluated_at >= 0)) r.fail("bad evaluation time");
  const auto complete = r.get<std::uint8_t>();
  if (complete > 1) r.fail("bad completeness flag");
  const auto n = r.get<std::uint32_t>();
  std::map<std::string, HotKey, std::less<>> hot;
  for (std::uint32_t i = 0; i < n; ++i) {
    HotKey k;
    k.key = r.get_string(std::size_t{1} << 20);
    k.rate = r.get<double>();
    k.since = r.get<double>();
    if (k.key.empty() || !(std::isfinite(k.rate) && k.rate >= 0) || !(std::isfinite(k.since) && k.since >= 0)) r.fail("bad hot key");
    if (!hot.emplace(k.key, k).second) r.fail("a hot key listed twice");
  }
  const std::string view_blob = r.get_string(std::size_t{1} << 36);
  r.expect_end();
  DecayedView view(view_.spec(), config_);
  view.restore_state(view_blob);  // throws FormatError: this detector is unchanged
  view_ = std::move(view);
  hot_ = std::move(hot);
  complete_ = complete == 1;
  evaluated_at_ = evaluated_at;
}

}  // namespace ebb::engine
