// Personalised top-K (Service::personalised): the checks, then the view's
// global top and the user's items read together, then the blend.
#include <algorithm>
#include <cmath>

#include "ebb/core/hash.hpp"
#include "service_cluster.hpp"
#include "service_state.hpp"

namespace ebb::service {
namespace {

// Every field of the request, before anything is read.
void check_request(const Service::State& s, std::uint32_t max_item_bytes, double alpha, std::span<const engine::UserItem> user_items) {
  if (!std::isfinite(alpha) || alpha < 0 || alpha > 1) throw invalid("invalid_field", "alpha: must be a number in [0, 1]");
  if (user_items.size() > s.options.limits.max_user_items) {
    throw ServiceError(ErrorKind::too_large, "batch_too_large",
                       "user_items: more than " + std::to_string(s.options.limits.max_user_items) + " items (--max-user-items)");
  }
  for (std::size_t i = 0; i < user_items.size(); ++i) {
    const auto& u = user_items[i];
    const std::string at = "user_items[" + std::to_string(i) + "].";
    if (u.item.empty() || u.item.size() > max_item_bytes) {
      throw invalid("invalid_field", at + "item_id: must be 1 to " + std::to_string(max_item_bytes) + " bytes");
    }
    // As an event's weight: the user's sums stay finite, whatever repeats.
    if (!std::isfinite(u.weight) || u.weight <= 0 || u.weight > engine::NamespaceConfig::kMaxWeight) {
      throw invalid("invalid_field", at + "weight: must be a number in (0, 1e15]");
    }
    if (u.timestamp && (!std::isfinite(*u.timestamp) || *u.timestamp < 0)) {
      throw invalid("invalid_field", at + "timestamp: must be a number of seconds since the epoch");
    }
  }
}

// Deep enough into the global list that the user's lift can reach it.
std::size_t depth_for(std::size_t k) { return std::min<std::size_t>(k * engine::kPersonalisedDepth, engine::NamespaceConfig::kMaxK); }

// Cluster mode: the list from every partition and the user's items from
// theirs, asked at once. An item whose partition did not answer counts 0
// and the answer says the partition is missing (partial), as GET /top-k's.
void read_cluster(const Service::State& s, const std::string& name, const std::optional<engine::ViewSpec>& view, std::size_t depth,
                  const std::vector<std::string>& distinct, engine::TopKAnswer& global, std::vector<engine::PointAnswer>& points) {
  engine::Coverage user_coverage;
  points = cluster_mode::top_and_counts(s, name, view, depth, distinct, std::nullopt, global, user_coverage);
  cluster_mode::add_missing(global.coverage, user_coverage);
}

}  // namespace

engine::PersonalisedAnswer Service::personalised(const std::string& name, const std::optional<engine::ViewSpec>& view,
                                                 std::optional<std::size_t> k, double alpha, std::span<const engine::UserItem> user_items) const {
  if (!s_->recovered) throw ServiceError(ErrorKind::unavailable, "not_ready", not_ready_reason());
  auto e = s_->require_known(name, "namespace");
  const std::vector<std::string> distinct = engine::distinct_items(user_items);
  std::size_t want = 0;
  engine::TopKAnswer global;
  std::vector<engine::PointAnswer> points;
  if (s_->options.cluster) {
    {
      std::shared_lock lock(e->mu);
      check_request(*s_, e->ns.config().max_item_bytes, alpha, user_items);
      want = on_query([&] { return e->ns.checked_k(k); });
      on_query([&] { return e->ns.top(view, 1); });  // the view's checks, as a single node makes them
    }
    read_cluster(*s_, name, view, depth_for(want), distinct, global, points);
  } else {
    // One lock: the checks, the list and the user's items see one state.
    std::shared_lock lock(e->mu);
    if (e->deleted) throw deleted_namespace(name);
    check_request(*s_, e->ns.config().max_item_bytes, alpha, user_items);
    want = on_query([&] { return e->ns.checked_k(k); });
    global = on_query([&] { return e->ns.top(view, depth_for(want)); });
    if (!distinct.empty()) points = on_query([&] { return e->ns.counts(distinct, view); });
  }
  // Undersized says whether k (not the depth read) exceeds the candidates.
  global.accuracy.undersized = global.accuracy.undersized && want > global.accuracy.candidates;
  return engine::blend_personalised(std::move(global), user_items, distinct, points, alpha, want);
}

}  // namespace ebb::service
