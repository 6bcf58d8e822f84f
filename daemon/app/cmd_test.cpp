// `faultline test`: every rule's tests (rule_tests.hpp), then "N passed, N failed".
#include <iostream>

#include "cli.hpp"
#include "commands.hpp"
#include "rule_tests.hpp"
#include "faultline/catalog.hpp"

namespace faultline::app {

int cmd_test(const Args& args) {
  bool verbose = false;
  std::vector<std::string> paths;
  cli::Parser cli("test", "Runs every rule's tests; prints failing cases with expected and actual incidents, then 'N passed, N failed'.");
  cli.flag("--verbose", verbose, "also name every test that passes").alias("-v");
  cli.positionals("PATH", paths);
  cli.footer("PATH: rule files or directories (default: the shipped catalog). Exit status: 0 all passed, 1 a test "
             "failed or a rule error, 2 a usage error or a PATH that cannot be read (missing, not permitted, holding "
             "no rules).");
  if (auto status = cli.handle(args, std::cout, std::cerr)) return *status;

  Catalog catalog = load_and_compile(paths, {}, "", CatalogPolicy{OnLoadError::stop});
  for (const auto& d : catalog.diagnostics) std::cerr << d.str() << "\n";
  if (!catalog.compiled) {
    std::cout << "0 passed, 1 failed\n";
    return any_unreadable(catalog.diagnostics) ? 2 : 1;
  }
  TestSummary s = run_rule_tests(catalog.compiled, std::cout, verbose);
  std::cout << s.passed << " passed, " << s.failed << " failed\n";
  return s.failed == 0 ? 0 : 1;
}

}  // namespace faultline::app
