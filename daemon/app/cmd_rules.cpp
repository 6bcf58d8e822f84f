// `faultline rules list`: the catalog as a table (plain, or Markdown for the docs); `faultline rules show ID`: one rule
// as its author needs it (where it is defined, its events, the fields it captures, its texts, its tests).
#include <algorithm>
#include <cctype>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "commands.hpp"
#include "rule_tests.hpp"
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

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(sep)) + i;
  return out;
}

// A text as written (placeholders and segments kept), indented under its label; long texts wrapped at spaces.
void print_text(std::ostream& out, std::string_view label, std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.empty()) return;
  out << label << ":\n";
  std::size_t col = 0;
  out << "  ";
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (col > 0 && col + 1 + w.size() > 100) {
      out << "\n  ";
      col = 0;
    } else if (col > 0) {
      out << ' ';
      ++col;
    }
    out << w;
    col += w.size();
  }
  out << "\n";
}

std::string describe_rule(const Rule& r) {
  std::ostringstream out;
  out << r.id << "  (" << r.pos.str() << ")\n";
  out << "severity: " << to_string(r.severity) << ", priority " << r.priority << ", "
      << (r.cascade.enabled ? "cascade (reports a consequence; points at its root cause)" : "root cause") << "\n";
  print_text(out, "title", r.title);
  print_text(out, "summary", r.summary);
  print_text(out, "remediation", r.remediation);
  if (!r.references.empty()) {
    out << "references:\n";
    for (const auto& ref : r.references) out << "  " << ref << "\n";
  }
  if (!r.labels.empty()) {
    std::vector<std::string> labels;
    for (const auto& [k, v] : r.labels) labels.push_back(k + "=" + v);
    out << "labels: " << join(labels) << "\n";
  }
  out << "events:\n";
  for (const auto& e : r.events) {
    out << "  " << e.name << "  (" << e.pos.str() << ")\n    regex: " << e.regex << "\n";
    if (e.caseless) out << "    caseless\n";
    if (!e.levels.empty()) {
      std::vector<std::string> levels;
      for (Level l : e.levels) levels.emplace_back(to_string(l));
      out << "    level: " << join(levels) << " (lines at other levels are dropped)\n";
    }
    if (!e.captures.empty()) out << "    captures: " << join(e.captures) << "\n";
    if (!e.set.empty()) {
      std::vector<std::string> set;
      for (const auto& [k, v] : e.set) set.push_back(k + ": " + v);
      out << "    sets: " << join(set) << "\n";
    }
  }
  out << "sequence:\n";
  for (std::size_t i = 0; i < r.sequence.size(); ++i) {
    const Step& st = r.sequence[i];
    out << "  " << i + 1 << ". " << (st.absent_for ? "absent " : "") << join(st.events, " | ");
    if (st.count > 1) out << " x" << st.count;
    if (st.within) out << " within " << format_duration(*st.within);
    if (st.absent_for) out << " for " << format_duration(*st.absent_for);
    if (st.optional) out << " (optional)";
    if (st.severity) out << " raises " << to_string(*st.severity);
    if (!st.after.empty()) out << " after " << join(st.after);
    out << "\n";
  }
  if (!r.reset_on.empty()) out << "reset_on: " << join(r.reset_on) << "\n";
  if (r.tolerance.lines > 0 || r.tolerance.time.count() > 0) {
    out << "tolerance: " << r.tolerance.lines << " lines, " << format_duration(r.tolerance.time) << "\n";
  }
  out << "lifetime: quiet " << format_duration(r.lifetime.quiet);
  if (!r.lifetime.resolve_on.empty()) out << ", resolve_on " << join(r.lifetime.resolve_on);
  out << "\n";
  std::vector<std::string> fields = r.field_names();
  out << "fields: " << (fields.empty() ? std::string("(none)") : join(fields)) << "\n";
  out << "tests: " << r.tests.size() << "\n";
  return out.str();
}

}  // namespace

int cmd_rules_show(const Args& args) {
  std::vector<std::string> paths;
  std::vector<std::string> ids;
  cli::Parser cli("rules show", "Shows one rule: the file and line it is defined at, severity and role, its texts as "
                                "written, each event's pattern, level filter, captures and static fields, the "
                                "sequence, the fields its texts may use, and how many tests it has.");
  cli.option("--rules", "PATH", paths, "rule file or directory (repeatable; default: the shipped catalog)");
  cli.positionals("ID", ids);
  cli.footer("Exit status: 0 shown, 2 a usage error, an unknown ID or rules that do not load.");
  if (auto status = cli.handle(args, std::cout, std::cerr)) return *status;
  if (ids.size() != 1) {
    std::cerr << "faultline rules show: expected one rule ID\n" << cli.usage();
    return 2;
  }
  Catalog catalog = load_and_compile(paths, {}, "", CatalogPolicy{OnLoadError::stop, /*compile=*/false});
  for (const auto& d : catalog.diagnostics) std::cerr << d.str() << "\n";
  if (!catalog.ok()) return 2;
  const RuleSet& rules = catalog.rules();
  const Rule* r = rules.find(ids[0]);
  if (!r) {
    std::string near = closest_rule_id(rules, ids[0]);
    std::cerr << "faultline rules show: no rule '" << ids[0] << "' among the " << rules.rules.size() << " loaded"
              << (near.empty() ? std::string() : " (did you mean '" + near + "'?)") << "\n";
    return 2;
  }
  std::cout << describe_rule(*r);
  return 0;
}

int cmd_rules(const Args& args) {
  if (!args.empty() && args[0] == "show") return cmd_rules_show(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "draft") return cmd_rules_draft(Args(args.begin() + 1, args.end()));
  bool markdown = false;
  std::vector<std::string> paths;
  cli::Parser cli("rules list", "Lists the loaded rules: id, severity and title, highest priority first. "
                                "`faultline rules show ID` shows one rule whole.");
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
