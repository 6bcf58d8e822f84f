// Root-cause attribution over the recently raised incidents.
#include "attribution.hpp"

namespace faultline::correlate {

namespace {
constexpr Duration kRootCauseWindow = std::chrono::minutes(2);
constexpr std::size_t kRecentIncidents = 512;
}  // namespace

Attribution::Recent Attribution::describe(const Incident& incident, std::uint32_t rule, std::uint32_t stream) {
  const Rule& r = rules_[rule];
  Recent ri;
  ri.id = incident.id;
  ri.rule = r.id;
  ri.priority = r.priority;
  ri.cascade = r.cascade.enabled;
  ri.first_seen = incident.first_seen;
  ri.logical = streams_.logical_of(stream);
  const StreamState& s = streams_[stream];
  std::string ns(s.id.label(LabelKey::namespace_)), pod(s.id.label(LabelKey::pod));
  if (!pod.empty()) ri.pod = ns + "/" + pod;
  ri.node = s.id.label(LabelKey::node);
  ri.node_keyed = r.key.node;
  return ri;
}

void Attribution::remember(const Incident& incident, std::uint32_t rule, std::uint32_t stream) {
  recent_.push_back(describe(incident, rule, stream));
  while (recent_.size() > kRecentIncidents) recent_.pop_front();
}

// Two unrelated pods on one node never explain each other.
bool Attribution::related(const Recent& a, const Recent& b) {
  if (!a.logical.empty() && a.logical == b.logical) return true;
  if (!a.pod.empty() && a.pod == b.pod) return true;
  if ((a.node_keyed || b.node_keyed) && !a.node.empty() && a.node == b.node) return true;
  return false;
}

void Attribution::attribute(Incident& incident, std::uint32_t rule, std::uint32_t stream) {
  if (incident.caused_by) return;
  const Rule& r = rules_[rule];
  const Recent self = describe(incident, rule, stream);
  const Recent* best = nullptr;
  Time first = incident.first_seen;
  for (const auto& c : recent_) {
    if (c.id == incident.id || c.cascade) continue;
    if (!related(self, c)) continue;
    if (r.cascade.enabled) {
      if (c.first_seen < first - r.cascade.window || c.first_seen > first + r.cascade.hold) continue;
    } else {
      if (c.priority <= r.priority) continue;
      // A symptom is often printed just before the root cause it belongs to: accept one up to the rule's
      // tolerance after it (the incident was held that long).
      if (c.first_seen < first - kRootCauseWindow || c.first_seen > first + r.tolerance.time) continue;
    }
    if (!best || c.priority > best->priority || (c.priority == best->priority && c.first_seen < best->first_seen)) {
      best = &c;
    }
  }
  if (best) {
    incident.caused_by = best->id;
    incident.caused_by_rule = best->rule;
    if (trace_) trace_("  " + r.id + ": caused by " + best->rule + " (" + best->id + ")");
  }
}

}  // namespace faultline::correlate
