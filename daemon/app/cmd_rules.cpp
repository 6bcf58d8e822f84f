// `faultline rules list`: the catalog as a table (plain, or Markdown for the docs).
#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "commands.hpp"
#include "faultline/catalog.hpp"

namespace faultline::app {

namespace {

// The catalog table (Markdown or plain text).
std::string catalog_table(const RuleSet& rules, bool markdown) {
  std::vector<const Rule*> sorted;
  for (const auto& r : rules.rules) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](const Rule* a, const Rule* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return a->id < b->id;
  });
  std::ostringstream out;
  if (markdown) {
    out << "| id | severity | priority | role | title | tests |\n|---|---|---|---|---|---|\n";
    for (const Rule* r : sorted) {
      std::string title = r->title;
      std::string escaped;
      for (char c : title) {
        if (c == '|') escaped += "\\|";
        else escaped += c;
      }
      out << "| `" << r->id << "` | " << to_string(r->severity) << " | " << r->priority << " | "
          << (r->cascade.enabled ? "cascade" : "root cause") << " | " << escaped << " | " << r->tests.size() << " |\n";
    }
  } else {
    std::size_t w = 2;
    for (const Rule* r : sorted) w = std::max(w, r->id.size());
    for (const Rule* r : sorted) {
      std::string id = r->id;
      id.resize(w, ' ');
      std::string sev(to_string(r->severity));
      sev.resize(9, ' ');
      out << id << "  " << sev << "  " << r->title << "\n";
    }
  }
  return out.str();
}

}  // namespace

int cmd_rules(const Args& args) {
  if (!args.empty() && args[0] == "draft") return cmd_rules_draft(Args(args.begin() + 1, args.end()));
  bool markdown = false;
  std::vector<std::string> paths;
  cli::Parser cli("rules list", "Lists the loaded rules: id, severity and title, highest priority first.");
  cli.flag("--markdown", markdown, "a Markdown table with priority, role and the number of tests");
  cli.option("--rules", "PATH", paths, "rule file or directory (repeatable; default: the shipped catalog)");
  cli.positionals("PATH", paths);
  if (args.empty() || args[0] != "list") {
    const bool help = !args.empty() && (args[0] == "-h" || args[0] == "--help");
    (help ? std::cout : std::cerr) << cli.usage();
    return help ? 0 : 2;
  }
  if (auto status = cli.handle(Args(args.begin() + 1, args.end()), std::cout, std::cerr)) return *status;

  Catalog catalog = load_and_compile(paths, {}, "", CatalogPolicy{OnLoadError::stop, /*compile=*/false});
  for (const auto& d : catalog.diagnostics) std::cerr << d.str() << "\n";
  if (!catalog.ok()) return 2;
  std::cout << catalog_table(catalog.rules(), markdown);
  return 0;
}

}  // namespace faultline::app
