// attribution: which incident explains another. A cascade incident (a symptom that only ever follows some failure)
// is caused by a root-cause incident raised on a related stream close in time; an ordinary incident by a
// higher-priority one. Related: the same stream, the same pod, or the same node when the cause correlates a whole
// node (an Xid in the kernel log). A cause on the incident's own stream or pod is preferred to one found node-wide,
// then the higher priority, then the earlier. A rule's `attribution:` limits what it explains: the rules or
// categories it may explain, the field values under which it explains anything (hardware Xids only), and the GPU it
// names (a pod that names another GPU is not explained). Root causes raised outside the rules (the detector's
// `unclassified-failure` incidents) explain cascades only, as a typed cause would (whatever their severity, above
// info; the pipeline then raises such a cause to the cascade's severity). Remembers the last few hundred
// incidents. Pipeline thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

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
  // A root cause that no rule raised (an unclassified failure) on `stream`: it may explain cascades. False when it
  // cannot be a root cause (a failure the server survived, at info) or is known already; a known one's severity is
  // updated (a story that ended the process escalates). Its time is bounded by `wall_now` as lines' times are.
  bool remember_external(const Incident& incident, std::uint32_t stream, Time wall_now);
  // Sets incident.caused_by to the remembered incident that explains it, if any (and it has none yet).
  void attribute(Incident& incident, std::uint32_t rule, std::uint32_t stream);

 private:
  // What attribution needs to know of an incident: who, when, where (stream, pod, node, GPU), and what it explains.
  struct Recent {
    std::string id;
    std::string rule;
    std::string category;  // labels.category
    int priority = 0;
    bool cascade = false;
    bool external = false;  // raised outside the rules: explains cascades only
    Severity severity = Severity::info;  // of an external one, as last seen
    Time first_seen{};
    std::string logical;
    std::string pod;  // namespace/pod when known
    std::string node;
    bool node_keyed = false;  // the rule correlates a whole node (kernel log)
    // As a cause: the rules or categories it may explain (empty: any), and whether its fields allow it to explain
    // anything at all (attribution.when).
    std::vector<std::string> explains;
    bool explains_anything = true;
    // As a cause: the GPU it names (attribution.gpu), field → normalised value.
    std::vector<std::pair<std::string, std::string>> gpu;
  };

  Recent describe(const Incident& incident, std::uint32_t rule, std::uint32_t stream);
  void locate(Recent& ri, std::uint32_t stream);
  // 0: unrelated; 2: the same stream or pod; 1: the same node only (the cause correlates the node).
  static int closeness(const Recent& self, const Recent& cause);
  // Whether `cause`'s attribution allows it to explain `self`, the description of `incident` on `stream`: what
  // it explains, its fields, the GPU (the incident's own field of that name, else its stream's label).
  bool may_explain(const Recent& cause, const Recent& self, const Incident& incident, std::uint32_t stream);

  const ActiveRules& rules_;
  Streams& streams_;
  const Trace& trace_;
  std::deque<Recent> recent_;
};

}  // namespace faultline::correlate
