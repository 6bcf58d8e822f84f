// `faultline check`: rule files validated and every pattern compiled; every problem as file:line:column.
#include <iostream>

#include "cli.hpp"
#include "commands.hpp"
#include "faultline/catalog.hpp"

namespace faultline::app {

int cmd_check(const Args& args) {
  std::vector<std::string> paths;
  cli::Parser cli("check", "Validates rule files and compiles their patterns; reports every problem as "
                           "file:line:column: error: ...");
  cli.positionals("PATH", paths);
  cli.footer("PATH: rule files or directories (default: the shipped catalog). Exit status: 0 valid, 1 a rule or "
             "pattern error, 2 a usage error or a PATH that cannot be read (missing, not permitted, holding no rules).");
  if (auto status = cli.handle(args, std::cout, std::cerr)) return *status;

  // The rules that load are compiled even when others do not, so one run reports every problem.
  Catalog catalog = load_and_compile(paths, {}, "", CatalogPolicy{OnLoadError::compile_the_rest});
  for (const auto& d : catalog.diagnostics) std::cerr << d.str() << "\n";
  if (!catalog.compiled) {
    std::cerr << catalog.errors() << " error(s)\n";
    return any_unreadable(catalog.diagnostics) ? 2 : 1;
  }
  std::cout << "ok: " << catalog.compiled->rule_set().rules.size() << " rules, " << catalog.compiled->pattern_count()
            << " patterns\n";
  return 0;
}

}  // namespace faultline::app
