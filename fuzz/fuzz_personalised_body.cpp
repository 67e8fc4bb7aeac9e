// POST /top-k/personalised bodies (server/personalised_body.hpp), then the
// blend (engine/personalised.hpp) on what they ask, as the service would
// run it once its checks pass. Input: the body.
// Checks: a refused body is an ApiError (400 invalid_json, invalid_field or
// bad_parameter, 413 batch_too_large) with a message, never anything else;
// an accepted one has a namespace, at most max_user_items items, a k in
// [1, 1000] when given. Where the service's checks would pass (alpha in
// [0, 1], weights in (0, 1e15], timestamps >= 0), the blend's answer has
// at most k items, every score finite and in [0, 1] and equal to alpha x
// popularity + (1 - alpha) x relevance, sorted by score.
#include <cmath>
#include <cstring>

#include "ebb/engine/namespace_config.hpp"
#include "ebb/engine/personalised.hpp"
#include "ebb/server/http_types.hpp"
#include "ebb/server/personalised_body.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace ebb;

constexpr std::size_t kMaxUserItems = 64;

bool service_would_take(const server::PersonalisedBody& b) {
  if (!(b.alpha >= 0 && b.alpha <= 1)) return false;
  for (const auto& u : b.user_items) {
    if (!(u.weight > 0 && u.weight <= engine::NamespaceConfig::kMaxWeight)) return false;
    if (u.timestamp && !(std::isfinite(*u.timestamp) && *u.timestamp >= 0)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  server::PersonalisedBody b;
  try {
    b = server::parse_personalised_body(body, kMaxUserItems);
  } catch (const server::ApiError& e) {
    const std::string code = e.code();
    FUZZ_CHECK_MSG((e.status() == 400 && (code == "invalid_json" || code == "invalid_field" || code == "bad_parameter")) ||
                       (e.status() == 413 && code == "batch_too_large"),
                   code);
    FUZZ_CHECK(std::strlen(e.what()) > 0);
    return 0;
  }
  FUZZ_CHECK(!b.name.empty());
  FUZZ_CHECK(b.user_items.size() <= kMaxUserItems);
  FUZZ_CHECK(!b.k || (*b.k >= 1 && *b.k <= engine::NamespaceConfig::kMaxK));
  if (!service_would_take(b)) return 0;

  // A global list of three (one a user's item when there is one), the
  // user's other items counted by their position.
  engine::TopKAnswer global;
  global.view = engine::ViewSpec::decayed(60);
  global.as_of = 1.7e9;
  for (double c : {300.0, 200.0, 100.0}) global.items.push_back({"g" + std::to_string(int(c)), c, c, c});
  if (!b.user_items.empty()) global.items[1].key = b.user_items.front().item;
  const auto distinct = engine::distinct_items(b.user_items);
  std::vector<engine::PointAnswer> points(distinct.size());
  for (std::size_t i = 0; i < distinct.size(); ++i) points[i].item = {distinct[i], double(i * 97 % 500), 0, double(i * 97 % 500) * 2};
  const std::size_t k = b.k.value_or(5);
  const auto answer = engine::blend_personalised(global, b.user_items, distinct, points, b.alpha, k);
  FUZZ_CHECK(answer.items.size() <= k);
  for (std::size_t i = 0; i < answer.items.size(); ++i) {
    const auto& p = answer.items[i];
    FUZZ_CHECK(std::isfinite(p.score) && p.score >= 0 && p.score <= 1 + 1e-12);
    FUZZ_CHECK(p.popularity >= 0 && p.popularity <= 1 && p.relevance >= 0 && p.relevance <= 1);
    FUZZ_CHECK(std::fabs(p.score - (b.alpha * p.popularity + (1 - b.alpha) * p.relevance)) <= 1e-12);
    if (i > 0) FUZZ_CHECK(answer.items[i - 1].score >= p.score);
  }
  return 0;
}
