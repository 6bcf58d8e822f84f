// app: the rule-test engine behind `faultline test`. Each test of a rule is a replay of its lines (or its file) on a
// virtual clock through the whole compiled set, and the incidents it raises are compared with what it expects, rule
// by rule. Plain functions; thread-safe over distinct outputs.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "faultline/incident.hpp"
#include "faultline/match.hpp"
#include "faultline/rules.hpp"

namespace faultline::app {

struct TestSummary {
  int passed = 0;
  int failed = 0;
};

// Runs every test of every rule of `compiled` (of the rules named in `only`, when it is not empty) against the whole
// set; reports failures (and, when `verbose`, passes) to `out`.
TestSummary run_rule_tests(const std::shared_ptr<const CompiledRules>& compiled, std::ostream& out, bool verbose = false,
                           const std::vector<std::string>& only = {});

// The loaded rule id closest to `id` by edit distance, for "did you mean"; empty when none is close.
std::string closest_rule_id(const RuleSet& rules, std::string_view id);

// The bytes of a test's `file:` (already resolved by the loader, `corpus:NAME` included); nullopt when it cannot be
// read.
std::optional<std::string> read_test_file(const RuleTest& test);

// One test's replay: the latest revision of every incident, in order of first emission.
std::vector<Incident> replay_test(const std::shared_ptr<const CompiledRules>& compiled, const RuleTest& test,
                                  const std::string& file_bytes);

}  // namespace faultline::app
