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

// The rule set in force; replace_rules swaps it under every part at once.
class ActiveRules {
 public:
  explicit ActiveRules(std::shared_ptr<const CompiledRules> rules) : rules_(std::move(rules)) {}
  const Rule& operator[](std::uint32_t index) const { return rules_->rule(index); }
  const RuleSet& rule_set() const { return rules_->rule_set(); }
  const CompiledRules& compiled() const { return *rules_; }
  void replace(std::shared_ptr<const CompiledRules> rules) { rules_ = std::move(rules); }

 private:
  std::shared_ptr<const CompiledRules> rules_;
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
