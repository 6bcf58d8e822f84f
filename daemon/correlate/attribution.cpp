// Root-cause attribution over the recently raised incidents.
#include "attribution.hpp"

#include "event_clock.hpp"

#include <algorithm>
#include <cctype>
#include <climits>

namespace faultline::correlate {

namespace {
constexpr Duration kRootCauseWindow = std::chrono::minutes(2);
constexpr std::size_t kRecentIncidents = 512;
// A root cause no rule raised ranks below every rule's: any typed cause found for a cascade is preferred.
constexpr int kExternalPriority = INT_MIN;

std::string category_of(const Fields& labels) {
  const std::string* c = find_field(labels, "category");
  return c ? *c : std::string();
}

// A GPU's name as compared: lower case; a PCI bus id without its "PCI:" prefix, with a 4-digit domain
// ("00000000:70:00.0" as nvidia-smi prints it, "0000:70:00" as the driver does) and without the function.
std::string normalise_gpu(std::string_view v) {
  std::string s;
  for (char c : v) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.rfind("pci:", 0) == 0) s.erase(0, 4);
  const auto first = s.find(':');
  const bool pci = first != std::string::npos && first >= 4 && s.find(':', first + 1) != std::string::npos &&
                   s.rfind("gpu-", 0) != 0;
  if (pci) {
    s.erase(0, first - 4);
    if (auto dot = s.find('.'); dot != std::string::npos) s.erase(dot);
  }
  return s;
}

bool listed(const std::vector<std::string>& list, std::string_view v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}
}  // namespace

void Attribution::locate(Recent& ri, std::uint32_t stream) {
  ri.logical = streams_.logical_of(stream);
  const StreamState& s = streams_[stream];
  std::string ns(s.id.label(LabelKey::namespace_)), pod(s.id.label(LabelKey::pod));
  if (!pod.empty()) ri.pod = ns + "/" + pod;
  ri.node = s.id.label(LabelKey::node);
}

Attribution::Recent Attribution::describe(const Incident& incident, std::uint32_t rule, std::uint32_t stream) {
  const Rule& r = rules_[rule];
  Recent ri;
  ri.id = incident.id;
  ri.rule = r.id;
  ri.category = category_of(r.labels);
  ri.priority = r.priority;
  ri.cascade = r.cascade.enabled;
  ri.first_seen = incident.first_seen;
  locate(ri, stream);
  ri.node_keyed = r.key.node;
  ri.explains = r.attribution.explains;
  for (const auto& [field, values] : r.attribution.when) {
    const std::string* v = find_field(incident.fields, field);
    if (v && !listed(values, *v)) ri.explains_anything = false;
  }
  for (const auto& field : r.attribution.gpu) {
    if (const std::string* v = find_field(incident.fields, field); v && !v->empty()) {
      ri.gpu.emplace_back(field, normalise_gpu(*v));
    }
  }
  return ri;
}

void Attribution::remember(const Incident& incident, std::uint32_t rule, std::uint32_t stream) {
  recent_.push_back(describe(incident, rule, stream));
  while (recent_.size() > kRecentIncidents) recent_.pop_front();
}

bool Attribution::remember_external(const Incident& incident, std::uint32_t stream, Time wall_now) {
  if (incident.severity == Severity::info) return false;
  for (auto& c : recent_) {
    if (c.id == incident.id) {  // a revision of one already known
      const bool escalated = incident.severity > c.severity;
      c.severity = std::max(c.severity, incident.severity);
      return escalated;
    }
  }
  Recent ri;
  ri.id = incident.id;
  ri.rule = incident.rule;
  ri.category = category_of(incident.labels);
  ri.priority = kExternalPriority;
  ri.external = true;
  ri.severity = incident.severity;
  // Bounded as the correlator bounds its lines' times (event_clock.hpp): a time too far ahead of the wall clock is
  // not taken, and the lines of a cascade beside it were taken at about the wall clock's time.
  ri.first_seen = incident.first_seen > wall_now + kFutureBound ? wall_now : incident.first_seen;
  locate(ri, stream);
  recent_.push_back(std::move(ri));
  while (recent_.size() > kRecentIncidents) recent_.pop_front();
  return true;
}

// Two unrelated pods on one node never explain each other; the node relates them only through a cause that
// correlates the whole node.
int Attribution::closeness(const Recent& self, const Recent& cause) {
  if (!self.logical.empty() && self.logical == cause.logical) return 2;
  if (!self.pod.empty() && self.pod == cause.pod) return 2;
  if (cause.node_keyed && !self.node.empty() && self.node == cause.node) return 1;
  return 0;
}

bool Attribution::may_explain(const Recent& cause, const Recent& self, const Incident& incident,
                              std::uint32_t stream) {
  if (!cause.explains_anything) return false;
  if (!cause.explains.empty() && !listed(cause.explains, self.rule) && !listed(cause.explains, self.category)) {
    return false;
  }
  for (const auto& [field, gpu] : cause.gpu) {
    const std::string* mine = find_field(incident.fields, field);
    if (!mine || mine->empty()) mine = find_field(streams_[stream].id.labels, field);
    if (mine && !mine->empty() && normalise_gpu(*mine) != gpu) return false;
  }
  return true;
}

void Attribution::attribute(Incident& incident, std::uint32_t rule, std::uint32_t stream) {
  if (incident.caused_by) return;
  const Rule& r = rules_[rule];
  const Recent self = describe(incident, rule, stream);
  const Recent* best = nullptr;
  int best_closeness = 0;
  Time first = incident.first_seen;
  for (const auto& c : recent_) {
    if (c.id == incident.id || c.cascade) continue;
    const int close = closeness(self, c);
    if (close == 0) continue;
    if (r.cascade.enabled) {
      if (c.first_seen < first - r.cascade.window || c.first_seen > first + r.cascade.hold) continue;
    } else {
      if (c.external || c.priority <= r.priority) continue;
      // A symptom is often printed just before the root cause it belongs to: accept one up to the rule's
      // tolerance after it (the incident was held that long).
      if (c.first_seen < first - kRootCauseWindow || c.first_seen > first + r.tolerance.time) continue;
    }
    if (!may_explain(c, self, incident, stream)) continue;
    const bool better = !best || close > best_closeness ||
                        (close == best_closeness &&
                         (c.priority > best->priority ||
                          (c.priority == best->priority && c.first_seen < best->first_seen)));
    if (better) {
      best = &c;
      best_closeness = close;
    }
  }
  if (best) {
    incident.caused_by = best->id;
    incident.caused_by_rule = best->rule;
    if (trace_) trace_("  " + r.id + ": caused by " + best->rule + " (" + best->id + ")");
  }
}

}  // namespace faultline::correlate
