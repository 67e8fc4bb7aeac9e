// Personalised top-K: the blend (engine/personalised.hpp).
#include "ebb/engine/personalised.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace ebb::engine {

double user_decay(const ViewSpec& view, double as_of, double window_start, const std::optional<double>& timestamp) noexcept {
  if (!timestamp) return 1.0;  // now
  switch (view.kind) {
    case ViewSpec::Kind::decayed:
      return std::exp2(-std::max(0.0, as_of - *timestamp) / view.half_life);  // (a timestamp after as_of: now)
    case ViewSpec::Kind::window:
      return *timestamp >= window_start ? 1.0 : 0.0;  // the window the answer counts
    case ViewSpec::Kind::all_time:
      break;
  }
  return 1.0;
}

std::vector<std::string> distinct_items(std::span<const UserItem> user_items) {
  std::vector<std::string> out;
  std::unordered_map<std::string_view, bool> seen;
  seen.reserve(user_items.size());
  for (const auto& u : user_items) {
    if (seen.emplace(u.item, true).second) out.push_back(u.item);
  }
  return out;
}

PersonalisedAnswer blend_personalised(TopKAnswer global, std::span<const UserItem> user_items, std::span<const std::string> distinct,
                                      std::span<const PointAnswer> points, double alpha, std::size_t k) {
  PersonalisedAnswer out;
  out.alpha = alpha;
  std::vector<PersonalisedItem> candidates;
  std::unordered_map<std::string, std::size_t> index;  // item -> candidates' position
  candidates.reserve(global.items.size() + distinct.size());
  for (std::size_t i = 0; i < global.items.size(); ++i) {
    index.emplace(global.items[i].key, candidates.size());
    candidates.push_back({std::move(global.items[i]), 0, 0, 0, i + 1});
  }
  global.items.clear();
  const std::size_t listed = candidates.size();
  for (std::size_t i = 0; i < distinct.size() && i < points.size(); ++i) {
    if (index.contains(distinct[i])) continue;  // the global list's reading of it stands
    index.emplace(distinct[i], candidates.size());
    CountedItem item = points[i].item;
    item.key = distinct[i];
    candidates.push_back({std::move(item), 0, 0, 0, std::nullopt});
  }
  // The user's weight of each item, then both terms over their largest.
  std::vector<double> weight(candidates.size(), 0.0);
  for (const auto& u : user_items) {
    const auto it = index.find(u.item);
    if (it != index.end()) weight[it->second] += u.weight * user_decay(global.view, global.as_of, global.window_start, u.timestamp);
  }
  // What counts for popularity: the estimate, and for an item outside the
  // list read at most the list's last (an unlisted item ranks below it).
  const double last_listed = listed > 0 ? candidates[listed - 1].item.estimate : 0.0;
  auto popular = [&](std::size_t i) { return i < listed || listed == 0 ? candidates[i].item.estimate : std::min(candidates[i].item.estimate, last_listed); };
  double top_count = 0, top_weight = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    top_count = std::max(top_count, popular(i));
    top_weight = std::max(top_weight, weight[i]);
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    auto& c = candidates[i];
    c.popularity = top_count > 0 ? popular(i) / top_count : 0.0;
    c.relevance = top_weight > 0 ? weight[i] / top_weight : 0.0;
    c.score = alpha * c.popularity + (1 - alpha) * c.relevance;
  }
  out.candidates = candidates.size();
  const std::size_t n = std::min(k, candidates.size());
  constexpr std::size_t kUnlisted = static_cast<std::size_t>(-1);
  auto better = [&](const PersonalisedItem& a, const PersonalisedItem& b) {
    if (a.score != b.score) return a.score > b.score;
    const std::size_t ra = a.global_rank.value_or(kUnlisted), rb = b.global_rank.value_or(kUnlisted);
    if (ra != rb) return ra < rb;
    if (a.item.estimate != b.item.estimate) return a.item.estimate > b.item.estimate;
    return a.item.key < b.item.key;
  };
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(n), candidates.end(), better);
  candidates.resize(n);
  out.items = std::move(candidates);
  out.global = std::move(global);
  return out;
}

}  // namespace ebb::engine
