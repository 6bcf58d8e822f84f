// A stored incident (incident_view.hpp): its summary, the whole revision read back from its JSON, and an estimate of
// the memory it holds.
#include "faultline/incident_view.hpp"

namespace faultline {
IncidentSummary IncidentSummary::of(const Incident& incident) {
  return {incident.id,       incident.revision,  incident.status,    incident.rule,
          incident.severity, incident.last_seen, incident.caused_by, incident.stream_labels};
}

std::optional<Incident> StoredIncident::incident() const { return incident_from_json(json); }

std::size_t StoredIncident::bytes() const {
  std::size_t n = sizeof(StoredIncident) + heap_bytes(json) + heap_bytes(summary.id) + heap_bytes(summary.rule);
  if (summary.caused_by) n += heap_bytes(*summary.caused_by);
  n += heap_bytes(summary.stream_labels);
  n += history.entries().capacity() * sizeof(RevisionEntry);
  return n;
}

}  // namespace faultline
