// engine/view_factory.hpp: the one place a view's class is chosen from its
// spec, for building a namespace's views and for restoring them.
#include "ebb/engine/view_factory.hpp"

#include <gtest/gtest.h>

#include "ebb/core/error.hpp"
#include "ebb/core/hash.hpp"

namespace ebb::engine {
namespace {

NamespaceConfig config() {
  NamespaceConfig c;
  c.name = "views";
  c.k = 5;
  c.all_time = true;
  c.half_lives = {3600, 60};  // as configured, not sorted
  c.sketch = CountMinShape::with_dimensions(256, 3);
  c.candidates = 16;
  c.clock = ClockMode::event;
  return c;
}

TEST(ViewFactory, ConfiguredViewsComeInTheCheckpointOrder) {
  EXPECT_EQ(configured_views(config()), (std::vector<ViewSpec>{ViewSpec::all_time(), ViewSpec::decayed(3600), ViewSpec::decayed(60)}));
  NamespaceConfig no_all_time = config();
  no_all_time.all_time = false;
  EXPECT_EQ(configured_views(no_all_time), (std::vector<ViewSpec>{ViewSpec::decayed(3600), ViewSpec::decayed(60)}));
}

TEST(ViewFactory, AViewMadeFromASpecCountsAsThatSpecAndRestoresItsOwnState) {
  const NamespaceConfig c = config();
  for (const ViewSpec& spec : configured_views(c)) {
    auto view = make_view(spec, c);
    EXPECT_EQ(view->spec(), spec);
    PreparedBatch batch;
    batch.reserve(3);
    const std::string_view items[] = {"a", "b", "a"};
    for (std::size_t i = 0; i < 3; ++i) {
      batch.items[i] = items[i];
      batch.hashes[i] = hash_key(items[i]);
      batch.times[i] = 1000;
      batch.weights[i] = 1;
    }
    batch.count = 3;
    batch.min_time = batch.max_time = 1000;
    view->apply(batch);
    // All three events at one instant: every view reads 2 and 1 then.
    const TopKAnswer top = view->top(2, 1000);
    ASSERT_EQ(top.items.size(), 2u) << spec.label();
    EXPECT_EQ(top.items[0].key, "a");
    EXPECT_DOUBLE_EQ(top.items[0].estimate, 2) << spec.label();
    auto again = make_view(spec, c);
    again->restore_state(view->serialize_state());
    EXPECT_EQ(again->serialize_state(), view->serialize_state()) << spec.label();
  }
  // A view's state does not restore into a view of another spec.
  auto all_time = make_view(ViewSpec::all_time(), c);
  auto hourly = make_view(ViewSpec::decayed(3600), c);
  EXPECT_THROW(hourly->restore_state(all_time->serialize_state()), FormatError);
}

}  // namespace
}  // namespace ebb::engine
