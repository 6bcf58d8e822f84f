// attribution: which incident explains another. A cascade incident (a symptom that only ever follows some failure)
// is caused by a non-cascade one raised on a related stream close in time; an ordinary incident by a higher-priority
// one (the root cause). Related: the same stream, the same pod, or the same node when either side correlates a
// whole node (an Xid in the kernel log). Remembers the last few hundred incidents. Pipeline thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "evidence.hpp"
#include "faultline/incident.hpp"
#include "parts.hpp"

namespace faultline::correlate {

class Attribution {
 public:
  Attribution(const ActiveRules& rules, Streams& streams, const Trace& trace)
      : rules_(rules), streams_(streams), trace_(trace) {}

  // A new incident of rule `rule` raised on `stream`: a candidate root cause from now on.
  void remember(const Incident& incident, std::uint32_t rule, std::uint32_t stream);
  // Sets incident.caused_by to the remembered incident that explains it, if any (and it has none yet).
  void attribute(Incident& incident, std::uint32_t rule, std::uint32_t stream);

 private:
  // What attribution needs to know of an incident: who, when, and where (stream, pod, node).
  struct Recent {
    std::string id;
    std::string rule;
    int priority = 0;
    bool cascade = false;
    Time first_seen{};
    std::string logical;
    std::string pod;  // namespace/pod when known
    std::string node;
    bool node_keyed = false;  // the rule correlates a whole node (kernel log)
  };

  Recent describe(const Incident& incident, std::uint32_t rule, std::uint32_t stream);
  static bool related(const Recent& a, const Recent& b);

  const ActiveRules& rules_;
  Streams& streams_;
  const Trace& trace_;
  std::deque<Recent> recent_;
};

}  // namespace faultline::correlate
