// catalog: the rule catalog as a command or the daemon takes it up — rule files loaded, overrides applied, every
// pattern compiled — in one call with one report of every problem. Part of the match room (daemon/match/).
// Free functions over plain values; thread-safe (a reload runs it on its own thread).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "faultline/match.hpp"
#include "faultline/rules.hpp"

namespace faultline {

// Changes to a loaded rule, applied before compiling (the config's `rules.overrides`).
struct RuleOverride {
  std::string rule;                 // rule id
  std::optional<bool> enabled;      // false: the rule is removed
  std::optional<Severity> severity;
  Fields labels;                    // added to (or replacing) the rule's static labels
  Position pos;
};

// Applies overrides to a loaded rule set. An override naming no loaded rule is a warning in `diagnostics`.
void apply_rule_overrides(RuleSet& rules, const std::vector<RuleOverride>& overrides,
                          std::vector<Diagnostic>& diagnostics);

// What to do when a rule file has an error.
enum class OnLoadError : std::uint8_t {
  stop,             // compile nothing (the daemon: a broken set never replaces a running one)
  compile_the_rest  // compile the rules that did load as well, so one run reports every problem (check, scan)
};

struct CatalogPolicy {
  OnLoadError on_load_error = OnLoadError::stop;
  bool compile = true;  // false: load and apply overrides only (listing the catalog)
  bool tests = true;    // false: the rules' tests are not read (LoadOptions::tests)
  bool story_anchors = true;  // false: compiled without the story anchors (CompileOptions::story_anchors)
  bool content_hash = true;  // false: the rules carry no content hash (LoadOptions::content_hash)
};

struct Catalog {
  std::shared_ptr<const CompiledRules> compiled;  // null when there is any error, or when not compiled
  RuleSet loaded;                                 // the rules as loaded and overridden, when not compiled
  std::vector<Diagnostic> diagnostics;            // loading's, the overrides', then compiling's, in that order
  double seconds = 0;                             // loading and compiling

  std::size_t errors() const;
  bool ok() const { return errors() == 0; }
  // The rules: the compiled set's, else the loaded ones.
  const RuleSet& rules() const { return compiled ? compiled->rule_set() : loaded; }
};

// Loads `paths` (files or directories; empty: the shipped catalog), applies `overrides`, compiles with the database
// cache in `cache_dir` (empty: none).
Catalog load_and_compile(const std::vector<std::string>& paths, const std::vector<RuleOverride>& overrides,
                         const std::string& cache_dir, CatalogPolicy policy = {});

}  // namespace faultline
