// The accuracy self-audit's passes (engine/accuracy_audit.hpp): each
// audited namespace compares its tracked items' exact counts with its
// views' estimates, under its lock (a pass changes no answer, so cached
// answers stay valid); the views whose top items pass the namespace's SLA,
// or come back under it, are logged. With audit_resize, a view missing its
// SLA is widened to the width the audit suggests: a PATCH of the width like
// any other (logged, so replays and a cluster's replicas widen at the same
// point; refused past the memory limits).
#include <cmath>
#include <set>

#include "ebb/engine/accuracy_audit.hpp"
#include "service_state.hpp"

namespace ebb::service {

namespace {

struct Verdict {
  std::string ns, view;
  bool breached = false;
  double share = 0, sla = 0;
  std::uint64_t width = 0, suggested = 0;  // suggested 0: no wider sketch helps (exact counting, or already the widest)
  bool window = false;
  bool resizes = false;  // audit_resize is on
};

// What audit_resize asks of a namespace: its views' width and its windows'
// (0: no change), the widest any of its views' audits suggests while their
// top items miss the SLA. A resize restarts the audit's comparisons, so a
// view asks again only if the wider sketch misses too.
struct ResizeTarget {
  std::string ns;
  std::uint64_t views = 0, windows = 0;
  bool any() const noexcept { return views != 0 || windows != 0; }
};

// `parts`: a cluster's partitions, each counting with its share of the
// widths (engine::partition_share), whose audits suggest a growth of that
// share: the namespace's width that gives them the share asked for.
std::uint64_t target_width(const engine::NamespaceConfig& c, std::uint32_t parts, const engine::ViewSpec& view, const engine::ViewAudit& audit) {
  const std::uint64_t share = engine::suggested_width(engine::partition_share(c, parts), view, audit);
  return share == 0 ? 0 : engine::width_for_share(static_cast<std::uint32_t>(share), parts);
}

void ask_width(ResizeTarget& t, const engine::NamespaceConfig& c, std::uint32_t parts, const engine::ViewSpec& view,
               const engine::ViewAudit& audit) {
  if (!c.audit_resize) return;
  const std::uint64_t width = target_width(c, parts, view, audit);
  if (width == 0) return;
  auto& target = view.kind == engine::ViewSpec::Kind::window ? t.windows : t.views;
  target = std::max(target, width);
}

std::string describe_widths(const engine::NamespaceConfig& c, const ResizeTarget& t) {
  std::string out;
  if (t.views) out += "sketch_width " + std::to_string(c.sketch.width) + " -> " + std::to_string(t.views);
  if (t.windows) out += std::string(out.empty() ? "" : ", ") + "window_sketch_width " + std::to_string(c.window_sketch_width) + " -> " +
                        std::to_string(t.windows);
  return out;
}

}  // namespace

void Service::widen_for_audit(const std::string& name, std::uint64_t views, std::uint64_t windows) {
  State& s = *s_;
  const ResizeTarget t{name, views, windows};
  engine::NamespaceConfig now;
  {
    const auto e = s.find(name);
    if (!e) return;
    std::shared_lock lock(e->mu);
    if (e->deleted || !e->spec.config.audit_resize) return;  // (turned off meanwhile)
    now = e->spec.config;
  }
  // Absolute widths, never narrower than now: a second node's (or a
  // concurrent PATCH's) resize to the same width changes nothing.
  auto wider = [&](const NamespaceSpec& current) {
    NamespaceSpec next = current;
    auto& c = next.config;
    if (views > c.sketch.width) c.sketch = CountMinShape::with_dimensions(static_cast<std::uint32_t>(views), c.sketch.depth);
    if (windows > c.window_sketch_width && !c.windows.empty()) c.window_sketch_width = static_cast<std::uint32_t>(windows);
    return next;
  };
  NamespaceSpec current;
  current.config = now;
  const NamespaceSpec goal = wider(current);
  if (goal.config.sketch.width == now.sketch.width && goal.config.window_sketch_width == now.window_sketch_width) return;
  const std::string what = describe_widths(now, t);
  try {
    check_namespace_sketch_bytes(goal.config, s.options.limits, views > now.sketch.width ? "sketch_width" : "window_sketch_width");
    patch(name, wider);
    {
      std::lock_guard lock(s.audit_resize_mu);
      s.audit_resize_at[name] = steady_seconds();
    }
    s.log->warn("namespace '{}': audit_resize widened its sketches ({}) to meet its audit SLA; counts so far are carried, the audit compares afresh",
                name, what);
    std::lock_guard lock(s.audit_resize_mu);
    s.audit_resize_refused.erase(name);
  } catch (const std::exception& e) {
    std::lock_guard lock(s.audit_resize_mu);
    auto [it, fresh] = s.audit_resize_refused.try_emplace(name, views, windows);
    if (!fresh && it->second == std::pair{views, windows}) return;  // (logged already)
    it->second = {views, windows};
    s.log->warn("namespace '{}': audit_resize could not widen its sketches ({}): {}", name, what, e.what());
  }
}

std::size_t Service::audit_namespaces() {
  State& s = *s_;
  if (!s.recovered) return 0;
  std::set<std::string, std::less<>> resizing;  // the namespaces with audit_resize on
  for (const auto& e : s.all_entries()) {
    std::shared_lock lock(e->mu);
    if (!e->deleted && e->spec.config.audit_resize) resizing.insert(e->name);
  }
  {
    std::lock_guard lock(s.audit_resize_mu);
    std::erase_if(s.audit_resize_refused, [&](const auto& r) { return !resizing.contains(r.first); });
    std::erase_if(s.audit_resize_at, [&](const auto& r) { return !resizing.contains(r.first); });
  }
  if (s.options.cluster) {
    // The partitions audit their own counts (and log their verdicts); the
    // catalog adds up their figures for the namespaces that resize. After
    // a resize it waits a few passes: a partition behind the others could
    // still report on the old width.
    for (const auto& name : resizing) {
      {
        std::lock_guard lock(s.audit_resize_mu);
        const auto it = s.audit_resize_at.find(name);
        if (it != s.audit_resize_at.end() && steady_seconds() - it->second < 3 * s.options.audit_interval) continue;
      }
      try {
        const NamespaceInfo info = describe(name);
        ResizeTarget t{name};
        for (const auto& v : info.stats.views) ask_width(t, info.spec.config, s.options.sketch_share, v.view, v.audit);
        if (t.any()) widen_for_audit(name, t.views, t.windows);
      } catch (const std::exception& e) {
        s.log->warn("namespace '{}': audit_resize could not read the partitions' audits: {}", name, e.what());
      }
    }
    return 0;
  }
  std::vector<Verdict> verdicts;
  std::vector<ResizeTarget> resizes;
  std::size_t audited = 0;
  for (const auto& e : s.all_entries()) {
    std::unique_lock lock(e->mu);
    if (e->deleted || !e->ns.audit()) continue;
    ++audited;
    const auto changes = e->ns.audit_pass();
    const auto& config = e->spec.config;  // as asked: a partition counts with a share of its width
    for (const auto& c : changes) {
      const auto& report = e->ns.audit()->report()[c.view];
      const auto& spec = e->ns.views()[c.view]->spec();
      const bool window = spec.kind == engine::ViewSpec::Kind::window;
      Verdict v{e->name, spec.label(), c.breached, report.top_max_error_share, config.audit_sla.value_or(0), 0, 0, window, config.audit_resize};
      v.width = engine::audited_width(config, spec);
      v.suggested = target_width(config, s.options.sketch_share, spec, report);
      verdicts.push_back(std::move(v));
    }
    ResizeTarget t{e->name};
    for (std::size_t i = 0; i < e->ns.views().size(); ++i) {
      ask_width(t, config, s.options.sketch_share, e->ns.views()[i]->spec(), e->ns.audit()->report()[i]);
    }
    if (t.any()) resizes.push_back(std::move(t));
  }
  for (const auto& v : verdicts) {
    if (!v.breached && v.sla == 0) {
      s.log->info("namespace '{}' {}: the accuracy audit has no SLA any more (audit_sla cleared)", v.ns, v.view);
      continue;
    }
    if (!v.breached) {
      s.log->info("namespace '{}' {}: the accuracy audit finds its top items within the SLA of {:g}% again", v.ns, v.view, v.sla * 100);
      continue;
    }
    std::string advice = "no wider sketch would help (exact counting, or the widest sketch already)";
    if (v.suggested > 0) {
      advice = "a sketch " + std::to_string(v.suggested) + " wide (now " + std::to_string(v.width) + ") would meet it: PATCH " +
               (v.window ? "window_sketch_width " : "sketch_width ") + std::to_string(v.suggested) +
               (v.resizes ? " (audit_resize is on: it will)" : " (or set audit_resize to have the audit do so)");
    }
    s.log->warn("namespace '{}' {}: the accuracy audit found a top item off by {:.3g}% of its count, past the SLA of {:g}%; {}", v.ns, v.view,
                v.share * 100, v.sla * 100, advice);
  }
  // A cluster partition's service is fed by its replica and cannot log a
  // change of its own: a partition's views are widened by the catalog's
  // resize, which every partition applies.
  if (!s.options.external_log) {
    for (const auto& t : resizes) widen_for_audit(t.ns, t.views, t.windows);
  }
  return audited;
}

void Service::start_audit() {
  State& s = *s_;
  if (s.options.audit_interval <= 0 || s.auditor.joinable()) return;
  s.auditor = s.every(s.options.audit_interval, "accuracy audit", [this] { audit_namespaces(); });
}

}  // namespace ebb::service
