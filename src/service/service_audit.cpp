// The accuracy self-audit's passes (engine/accuracy_audit.hpp): each
// audited namespace compares its tracked items' exact counts with its
// views' estimates, under its lock (a pass changes no answer, so cached
// answers stay valid); the views whose top items pass the namespace's SLA,
// or come back under it, are logged.
#include <cmath>

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
};

}  // namespace

std::size_t Service::audit_namespaces() {
  State& s = *s_;
  if (!s.recovered || s.options.cluster) return 0;  // a cluster's partitions audit their own counts
  std::vector<Verdict> verdicts;
  std::size_t audited = 0;
  for (const auto& e : s.all_entries()) {
    std::unique_lock lock(e->mu);
    if (e->deleted || !e->ns.audit()) continue;
    ++audited;
    const auto changes = e->ns.audit_pass();
    for (const auto& c : changes) {
      const auto& report = e->ns.audit()->report()[c.view];
      const auto& spec = e->ns.views()[c.view]->spec();
      const bool window = spec.kind == engine::ViewSpec::Kind::window;
      const auto& config = e->spec.config;  // as asked: a partition counts with a share of its width
      Verdict v{e->name, spec.label(), c.breached, report.top_max_error_share, config.audit_sla.value_or(0), 0, 0, window};
      v.width = engine::audited_width(config, spec);
      v.suggested = engine::suggested_width(config, spec, report);
      verdicts.push_back(std::move(v));
    }
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
      advice = "a sketch " + std::to_string(v.suggested) + " wide (now " + std::to_string(v.width) + ") would meet it: create a namespace with " +
               (v.window ? "window_sketch_width " : "sketch_width ") + std::to_string(v.suggested);
    }
    s.log->warn("namespace '{}' {}: the accuracy audit found a top item off by {:.3g}% of its count, past the SLA of {:g}%; {}", v.ns, v.view,
                v.share * 100, v.sla * 100, advice);
  }
  return audited;
}

void Service::start_audit() {
  State& s = *s_;
  if (s.options.audit_interval <= 0 || s.auditor.joinable()) return;
  s.auditor = s.every(s.options.audit_interval, "accuracy audit", [this] { audit_namespaces(); });
}

}  // namespace ebb::service
