#include "ebb/engine/trending.hpp"

#include <algorithm>
#include <cmath>

#include "ebb/core/hash.hpp"

namespace ebb::engine {

TrendingAnswer find_trending(const View& short_view, const View& long_view, std::size_t candidates, std::size_t k, double min_count,
                             double now) {
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
  const double age = std::max(0.0, now - recent.window_start);
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
  std::sort(answer.items.begin(), answer.items.end(),
            [](const TrendingItem& a, const TrendingItem& b) { return a.score != b.score ? a.score > b.score : a.key < b.key; });
  if (answer.items.size() > k) answer.items.resize(k);
  return answer;
}

}  // namespace ebb::engine
