// parts: what the pieces of the correlator (story machine, incident book, attribution, evidence) are all handed —
// the rule set in force, the --explain trace, and the context of one call into the correlator. Owned by the
// correlator on the pipeline thread; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "faultline/decode.hpp"
#include "faultline/incident.hpp"
#include "faultline/match.hpp"

namespace faultline::correlate {

// What one event of a rule does in it, worked out once per rule set (a hit would otherwise compare its event's name
// with every step's and every list's).
struct EventRole {
  std::vector<std::uint32_t> optional_steps;  // indexes of the optional steps that list it, ascending
  bool later_required = false;  // a required step (not an absence) lists it: an early hit of it may count later
  bool resolves = false;        // lifetime.resolve_on names it
  bool resets = false;          // reset_on names it
};

// The rule set in force; replace_rules swaps it under every part at once.
class ActiveRules {
 public:
  explicit ActiveRules(std::shared_ptr<const CompiledRules> rules) : rules_(std::move(rules)) { index_roles(); }
  const Rule& operator[](std::uint32_t index) const { return rules_->rule(index); }
  const RuleSet& rule_set() const { return rules_->rule_set(); }
  const CompiledRules& compiled() const { return *rules_; }
  const EventRole& role(EventRef e) const { return roles_[e.rule][e.event]; }
  void replace(std::shared_ptr<const CompiledRules> rules) {
    rules_ = std::move(rules);
    index_roles();
  }

 private:
  void index_roles();  // (story.cpp, beside the step tests it uses)

  std::shared_ptr<const CompiledRules> rules_;
  std::vector<std::vector<EventRole>> roles_;  // per rule, per event
};

// A rule keyed by node and not by stream: its stories and incidents span the node's streams and run on the node's
// clock.
inline bool node_keyed(const Rule& r) { return r.key.node && !r.key.stream; }

// `scan --explain`: a line of text for every state change. Test `if (trace)` before building an expensive line.
class Trace {
 public:
  void set(std::function<void(const std::string&)> sink) { sink_ = std::move(sink); }
  explicit operator bool() const { return static_cast<bool>(sink_); }
  void operator()(const std::string& text) const {
    if (sink_) sink_(text);
  }

 private:
  std::function<void(const std::string&)> sink_;
};

// One call into the correlator (process, advance or finish): where the revisions it emits go, and what the
// operation at hand is reading.
struct Call {
  std::vector<Incident>& out;
  std::chrono::steady_clock::time_point read_at{};  // stamped on incidents raised now (latency metric)
  const RecordBatch* batch = nullptr;              // process() only: the batch being read
  std::uint64_t line = 0;                          // line of the hit being applied (line tolerance counts from it)
  Time wall{};                                     // process() only: the wall clock when the batch came (read once)
};

}  // namespace faultline::correlate
