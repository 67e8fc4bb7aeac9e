#include "ebb/engine/hot_key_detector.hpp"

#include <algorithm>
#include <cmath>

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
      view_(ViewSpec::decayed(options.half_life), config) {}

void HotKeyDetector::set_threshold(double threshold) {
  HotKeyOptions next = options_;
  next.threshold = threshold;
  validate(next);
  options_ = next;
}

std::vector<HotKeyEvent> HotKeyDetector::evaluate(double now) {
  now = std::max(now, evaluated_at_);  // a judgement never goes back in time
  const auto top = view_.top(candidates_, now);
  // Every key outside the candidates has at most the guarantee threshold:
  // below the rate threshold, none of them can be hot.
  complete_ = lambda_ * top.accuracy.guarantee_threshold < options_.threshold;
  std::vector<HotKeyEvent> turned_hot;
  std::map<std::string_view, bool> judged;
  for (const auto& item : top.items) {
    const double rate = lambda_ * item.upper;
    judged.emplace(item.key, true);
    if (auto it = hot_.find(item.key); it != hot_.end()) {
      it->second.rate = rate;
    } else if (rate >= options_.threshold) {
      HotKey k{item.key, rate, now};
      hot_.emplace(item.key, k);
      turned_hot.push_back({true, std::move(k)});
    }
  }
  std::vector<HotKeyEvent> cooled;
  for (auto it = hot_.begin(); it != hot_.end();) {
    HotKey& k = it->second;
    // A hot key that left the candidates: its sketch estimate.
    if (!judged.contains(k.key)) k.rate = lambda_ * view_.point(k.key, hash_key(k.key), now).item.upper;
    if (k.rate < options_.threshold * options_.cool_fraction) {
      cooled.push_back({false, k});
      it = hot_.erase(it);
    } else {
      ++it;
    }
  }
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

}  // namespace ebb::engine
