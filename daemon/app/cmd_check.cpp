// `faultline check`: rule files validated and every pattern compiled; every problem as file:line:column. With
// --config, the daemon's pre-flight as well (the same as `run --check-config`).
#include <iostream>

#include "cli.hpp"
#include "commands.hpp"
#include "faultline/catalog.hpp"
#include "faultline/config.hpp"
#include "faultline/service.hpp"

namespace faultline::app {

namespace {

// The config file and the rules it names (PATHs replace them), checked as `run` would start: nothing is created.
int check_config(const std::string& file, const std::vector<std::string>& paths) {
  ConfigResult loaded = load_config(file);
  for (const auto& d : loaded.diagnostics) std::cerr << d.str() << "\n";
  if (!loaded.ok()) {
    std::cerr << error_count(loaded.diagnostics) << " error(s) in the config\n";
    return 2;
  }
  Config config = std::move(loaded.config);
  if (!paths.empty()) config.rules.paths = paths;
  Preflight checked = preflight(config);
  for (const auto& d : checked.diagnostics) std::cerr << d.str() << "\n";
  if (!checked.ok()) {
    std::cerr << error_count(checked.diagnostics) << " error(s); faultline run would not start\n";
    return 1;
  }
  std::cout << "ok: " << file << " and " << checked.rules << (checked.rules == 1 ? " rule\n" : " rules\n");
  return 0;
}

}  // namespace

int cmd_check(const Args& args) {
  std::vector<std::string> paths;
  std::string config;
  cli::Parser cli("check", "Validates rule files and compiles their patterns; reports every problem as "
                           "file:line:column: error: ...");
  cli.option("--config", "FILE", config,
             "also check the daemon's config as `run --check-config` does: the listen address, the state dir "
             "(never created), rule ids in overrides and sink filters; PATHs replace its rules.paths");
  cli.alias("-c");
  cli.positionals("PATH", paths);
  cli.footer("PATH: rule files or directories (default: the shipped catalog). Exit status: 0 valid, 1 a rule or "
             "pattern error (or a config that run would refuse), 2 a usage error, a config file with errors, or a "
             "PATH that cannot be read (missing, not permitted, holding no rules).");
  if (auto status = cli.handle(args, std::cout, std::cerr)) return *status;
  if (!config.empty()) return check_config(config, paths);

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
