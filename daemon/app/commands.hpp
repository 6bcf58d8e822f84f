// app: the command line. Each command is a function over its own arguments (after the command name).
// Internal to the binary and the tests; the rooms below know nothing of it.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "faultline/rules.hpp"

namespace faultline::app {

using Args = std::vector<std::string>;

int cmd_scan(const Args& args);
int cmd_check(const Args& args);
int cmd_test(const Args& args);
int cmd_rules(const Args& args);
int cmd_version(const Args& args);

struct TestSummary {
  int passed = 0;
  int failed = 0;
};

// Runs every test of every rule in `rules` against the whole set; reports failures to `out`.
TestSummary run_rule_tests(const RuleSet& rules, std::ostream& out, bool verbose = false);

// The catalog table (Markdown or plain text).
std::string catalog_table(const RuleSet& rules, bool markdown);

}  // namespace faultline::app
