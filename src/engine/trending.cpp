#include "ebb/engine/trending.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ebb/core/hash.hpp"

namespace ebb::engine {
namespace {

bool ranks_first(const TrendingItem& a, const TrendingItem& b) { return a.score != b.score ? a.score > b.score : a.key < b.key; }

}  // namespace

TrendingAnswer find_trending(const View& short_view, const View& long_view, std::size_t candidates, std::size_t k, double min_count,
                             double now, std::optional<double> since) {
  const double lambda_short = std::log(2.0) / short_view.spec().half_life;
  const double lambda_long = std::log(2.0) / long_view.spec().half_life;

  TrendingAnswer answer;
  answer.short_view = short_view.spec();
  answer.long_view = long_view.spec();
  answer.as_of = now;
  answer.min_count = min_count;
  // Every candidate of the short view: a trending item is, by definition,
  // heavy there (the view's guarantee threshold bounds any other).
  const TopKAnswer recent = short_view.top(candidates, now);
  answer.candidates = recent.items.size();
  // The exposure of a decayed count: what a steady 1 event/s adds up to
  // over the stream's age (1/lambda once the stream is many half-lives
  // old; less before, which would make every steady item of a young
  // stream look like it rises against its long half-life).
  if (recent.total > 0) answer.first_event = recent.window_start;
  answer.since = since ? *since : answer.first_event;
  const double age = answer.since > 0 ? std::max(0.0, now - answer.since) : 0.0;
  auto exposure = [age](double lambda) { return age > 0 ? -std::expm1(-lambda * age) / lambda : 0.0; };
  const double exposure_short = exposure(lambda_short), exposure_long = exposure(lambda_long);
  if (!(exposure_short > 0 && exposure_long > 0)) return answer;  // no time has passed: nothing can rise yet
  for (const auto& item : recent.items) {
    const double observed = item.lower;
    if (!(observed >= min_count) || observed <= 0) continue;
    const PointAnswer usual = long_view.point(item.key, hash_key(item.key), now);
    const double long_rate = usual.item.upper / exposure_long;
    const double expected = long_rate * exposure_short;
    const double score = (observed - expected) / std::sqrt(expected + 1);
    if (!(score > 0)) continue;
    answer.items.push_back({item.key, score, item.estimate / exposure_short, long_rate, item, usual.item});
  }
  std::sort(answer.items.begin(), answer.items.end(), ranks_first);
  if (answer.items.size() > k) answer.items.resize(k);
  return answer;
}

TrendingAnswer merge_trending(std::vector<TrendingAnswer> parts, std::size_t k) {
  if (parts.empty()) throw std::logic_error("merge_trending: no parts");
  TrendingAnswer out;
  out.short_view = parts.front().short_view;
  out.long_view = parts.front().long_view;
  out.min_count = parts.front().min_count;
  out.since = parts.front().since;
  for (auto& p : parts) {
    out.as_of = std::max(out.as_of, p.as_of);
    out.candidates += p.candidates;
    if (p.first_event > 0) out.first_event = out.first_event > 0 ? std::min(out.first_event, p.first_event) : p.first_event;
    for (auto& item : p.items) out.items.push_back(std::move(item));
  }
  std::sort(out.items.begin(), out.items.end(), ranks_first);
  if (out.items.size() > k) out.items.resize(k);
  return out;
}

}  // namespace ebb::engine
