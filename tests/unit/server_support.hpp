// Helpers shared by the server's unit tests: an incident whose texts a page must escape.
#pragma once

#include <string>

#include "faultline/incident.hpp"

namespace servertest {

using namespace faultline;

// An incident of `rule` at `sev`, last seen at `last_seen`, with markup in its title, summary and evidence.
inline Incident incident(std::string id, std::string rule, Severity sev, std::string last_seen = "2026-03-01T10:00:05Z") {
  Incident inc;
  inc.id = std::move(id);
  inc.rule = std::move(rule);
  inc.title = "Title <" + inc.rule + ">";
  inc.severity = sev;
  inc.stream = "ns/pod/c";
  inc.first_seen = *parse_rfc3339("2026-03-01T10:00:00Z");
  inc.last_seen = *parse_rfc3339(last_seen);
  inc.summary = "summary & <b>more</b>";
  EvidenceLine e;
  e.text = "<script>alert(1)</script>";
  inc.evidence.push_back(e);
  return inc;
}

}  // namespace servertest
