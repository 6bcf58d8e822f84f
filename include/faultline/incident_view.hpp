// incident_view: what readers of recent incidents see — the HTTP API and page, and the Alertmanager sink's re-sends —
// without knowing who keeps them (the incident store in sinks.hpp implements it). Pointers returned stay valid until
// the view changes; a view is used on the thread that changes it (the io thread), so readers need no locks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/incident.hpp"

namespace faultline {

struct StoredIncident {
  Incident incident;
  std::string json;     // to_json(incident)
  std::uint64_t order;  // grows with every update; newest first in queries
};

struct IncidentQuery {
  std::vector<std::string> rules;        // any of these; empty: all
  std::vector<Severity> severities;      // any of these; empty: all
  std::optional<Time> since;             // last_seen at or after
  std::optional<IncidentStatus> status;  // firing | resolved
  std::size_t limit = 100;
};

class IncidentView {
 public:
  virtual ~IncidentView() = default;
  virtual const StoredIncident* find(std::string_view id) const = 0;
  virtual std::vector<const StoredIncident*> query(const IncidentQuery& query) const = 0;  // newest update first
  virtual std::vector<const StoredIncident*> firing() const = 0;                         // oldest update first
};

}  // namespace faultline
