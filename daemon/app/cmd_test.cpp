// `faultline test`: every rule's tests (rule_tests.hpp), or one rule's with the whole catalog loaded; then
// "N passed, N failed".
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "rule_tests.hpp"
#include "faultline/catalog.hpp"

namespace faultline::app {

namespace {

namespace fs = std::filesystem;

// Whether `path` is the directory `dir` or lies inside it (both as given, made absolute and normal).
bool within(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  if (ec) return false;
  fs::path d = fs::weakly_canonical(dir, ec);
  if (ec) return false;
  auto [end, at] = std::mismatch(d.begin(), d.end(), p.begin(), p.end());
  return end == d.end();
}

// The shipped catalog's rule files that define no rule id the files under `given` define (a file is left out whole
// when any of its rules is redefined there), in the catalog's own order.
std::vector<std::string> shipped_files_not_defined_in(const std::vector<std::string>& given, const std::string& catalog) {
  const LoadOptions ids_only{.tests = false, .content_hash = false};
  const LoadResult mine = load_rules(given, ids_only);
  const LoadResult shipped = load_rules({catalog}, ids_only);
  std::vector<std::string> files, redefined;
  for (const Rule& r : shipped.rules.rules) {
    if (mine.rules.find(r.id) != nullptr) redefined.push_back(r.pos.file);
    if (files.empty() || files.back() != r.pos.file) files.push_back(r.pos.file);
  }
  std::erase_if(files, [&](const std::string& f) {
    return std::find(redefined.begin(), redefined.end(), f) != redefined.end();
  });
  return files;
}

}  // namespace

int cmd_test(const Args& args) {
  bool verbose = false;
  std::vector<std::string> paths;
  std::vector<std::string> only;
  cli::Parser cli("test", "Runs every rule's tests; prints failing cases with expected and actual incidents, then 'N passed, N failed'.");
  cli.flag("--verbose", verbose, "also name every test that passes").alias("-v");
  cli.option("--rule", "ID", only,
             "run only this rule's tests (repeatable), with the shipped catalog loaded beside the PATHs so that "
             "expectations on catalog rules (root causes, cascades) hold; a rule the PATHs define replaces the shipped "
             "rule of that id (an edited copy)");
  cli.positionals("PATH", paths);
  cli.footer("PATH: rule files or directories (default: the shipped catalog). Exit status: 0 all passed, 1 a test "
             "failed, a rule error or a --rule with no tests, 2 a usage error, an unknown --rule ID or a PATH that "
             "cannot be read (missing, not permitted, holding no rules).");
  if (auto status = cli.handle(args, std::cout, std::cerr)) return *status;

  // One rule's tests run against the whole catalog: a rule under test beside the shipped ones, as it will run. A
  // rule the PATHs define replaces the shipped one of that id (an edited copy of a catalog rule, or of the catalog).
  if (!only.empty() && !paths.empty()) {
    const std::string catalog = default_rules_dir();
    bool overlaps = false;
    for (const auto& p : paths) overlaps = overlaps || within(p, catalog) || within(catalog, p);
    if (!overlaps) {
      const std::vector<std::string> given = paths;
      for (auto& file : shipped_files_not_defined_in(given, catalog)) paths.push_back(std::move(file));
    }
  }
  Catalog catalog = load_and_compile(paths, {}, "", CatalogPolicy{OnLoadError::stop});
  for (const auto& d : catalog.diagnostics) std::cerr << d.str() << "\n";
  if (!catalog.compiled) {
    std::cout << "0 passed, 1 failed\n";
    return any_unreadable(catalog.diagnostics) ? 2 : 1;
  }
  const RuleSet& rules = catalog.compiled->rule_set();
  bool untested = false;
  for (const auto& id : only) {
    const Rule* r = rules.find(id);
    if (!r) {
      std::string near = closest_rule_id(rules, id);
      std::cerr << "faultline test: no rule '" << id << "' among the " << rules.rules.size() << " loaded"
                << (near.empty() ? std::string() : " (did you mean '" + near + "'?)") << "\n";
      return 2;
    }
    if (r->tests.empty()) {
      std::cout << "FAIL " << id << ": the rule has no tests (" << r->pos.str() << ")\n";
      untested = true;
    }
  }
  TestSummary s = run_rule_tests(catalog.compiled, std::cout, verbose, only);
  if (untested) ++s.failed;
  std::cout << s.passed << " passed, " << s.failed << " failed\n";
  return s.failed == 0 ? 0 : 1;
}

}  // namespace faultline::app
