// `faultline test`: each rule test is a scan of its lines with a virtual clock, compared with what it expects.
// `faultline rules list`: the catalog table. `faultline version`.
#include <hs/hs.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "commands.hpp"
#include "faultline/match.hpp"
#include "faultline/pipeline.hpp"

namespace faultline::app {

std::shared_ptr<const CompiledRules> load_and_compile(const std::vector<std::string>& paths, const std::string& cache,
                                                      std::size_t* errors);

namespace {

const Time kDefaultStart = Time(std::chrono::seconds(1767225600));  // 2026-01-01T00:00:00Z

std::string describe(const Incident& inc) {
  std::string s = inc.rule + " " + std::string(to_string(inc.severity)) + " " + std::string(to_string(inc.status)) +
                  " count=" + std::to_string(inc.count) + " evidence=" + std::to_string(inc.evidence.size());
  if (inc.caused_by) s += " caused_by=" + inc.caused_by_rule;
  if (!inc.fields.empty()) {
    s += " fields={";
    bool first = true;
    for (const auto& [k, v] : inc.fields) {
      s += (first ? "" : ", ") + k + ": " + v;
      first = false;
    }
    s += "}";
  }
  return s;
}

std::string describe(const ExpectedIncident& ex) {
  std::string s = ex.rule;
  if (ex.severity) s += " " + std::string(to_string(*ex.severity));
  if (ex.status) s += " " + *ex.status;
  if (ex.count) s += " count=" + std::to_string(*ex.count);
  if (ex.min_evidence) s += " evidence>=" + std::to_string(*ex.min_evidence);
  if (ex.caused_by) s += " caused_by=" + (ex.caused_by->empty() ? std::string("(none)") : *ex.caused_by);
  if (!ex.fields.empty()) {
    s += " fields={";
    bool first = true;
    for (const auto& [k, v] : ex.fields) {
      s += (first ? "" : ", ") + k + ": " + v;
      first = false;
    }
    s += "}";
  }
  return s;
}

// Why `actual` does not satisfy `ex`; empty when it does.
std::string mismatch(const ExpectedIncident& ex, const Incident& actual) {
  if (ex.severity && *ex.severity != actual.severity) return "severity";
  if (ex.status && *ex.status != to_string(actual.status)) return "status";
  if (ex.count && *ex.count != actual.count) return "count";
  if (ex.min_evidence && actual.evidence.size() < *ex.min_evidence) return "evidence";
  if (ex.caused_by) {
    std::string cause = actual.caused_by ? actual.caused_by_rule : std::string();
    if (cause != *ex.caused_by) return "caused_by";
  }
  for (const auto& [k, v] : ex.fields) {
    const auto* got = find_field(actual.fields, k);
    if (!got || *got != v) return "field " + k;
  }
  return {};
}

// Runs one test: returns the final revision of every incident, in order of first emission.
std::vector<Incident> run_one(const std::shared_ptr<const CompiledRules>& compiled, const RuleTest& test) {
  std::map<std::string, Incident> latest;
  std::vector<std::string> order;
  Pipeline pipeline(compiled, [&](const Incident& inc) {
    if (!latest.count(inc.id)) order.push_back(inc.id);
    latest[inc.id] = inc;
  });
  Time clock = test.start.value_or(kDefaultStart);
  DecodeOptions options;
  options.format = parse_container_format(test.format).value_or(ContainerFormat::auto_detect);
  options.time.reference = clock;
  StreamIdentity id;
  id.name = "test";
  id.logical = "test";
  id.instance = "test";
  std::uint32_t stream = pipeline.add_stream(id, options);
  if (!test.file.empty()) {
    std::ifstream in(test.file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    pipeline.feed(stream, ss.str(), clock);
  }
  for (const auto& line : test.lines) {
    if (line.after.count() > 0) {
      // Virtual time runs on from the latest time seen, whether the clock's or a line's own.
      pipeline.drain();
      if (pipeline.stats().lines > 0) clock = pipeline.now();
      clock += line.after;
      pipeline.advance(clock);
    }
    std::string text = line.text;
    text += '\n';
    pipeline.feed(stream, text, clock);
    pipeline.drain();
  }
  pipeline.flush_partial(stream, clock);
  pipeline.drain();
  Time end = (pipeline.stats().lines > 0 ? pipeline.now() : clock) + test.advance;
  pipeline.advance(end);
  pipeline.finish(end);
  std::vector<Incident> out;
  for (const auto& k : order) out.push_back(latest[k]);
  return out;
}

}  // namespace

TestSummary run_rule_tests(const RuleSet& rules, std::ostream& out, bool verbose) {
  TestSummary summary;
  auto compiled_result = compile_rules(rules);
  if (!compiled_result.rules) {
    for (const auto& d : compiled_result.diagnostics) out << d.str() << "\n";
    summary.failed = 1;
    return summary;
  }
  auto compiled = compiled_result.rules;
  for (const auto& rule : rules.rules) {
    for (const auto& test : rule.tests) {
      if (!test.file.empty() && !std::ifstream(test.file)) {
        ++summary.failed;
        out << "FAIL " << rule.id << ": " << test.name << " (" << test.pos.str() << ")\n  test file '" << test.file
            << "' cannot be read\n";
        continue;
      }
      std::vector<Incident> incidents = run_one(compiled, test);
      // The rules this test speaks about: the owner, and every rule it names.
      std::vector<std::string> watched{rule.id};
      std::vector<ExpectedIncident> expected = test.expect;
      for (auto& ex : expected) {
        if (ex.rule.empty()) ex.rule = rule.id;
        if (std::find(watched.begin(), watched.end(), ex.rule) == watched.end()) watched.push_back(ex.rule);
      }
      std::vector<std::string> problems;
      for (const auto& rid : watched) {
        std::vector<const Incident*> actual;
        for (const auto& inc : incidents) {
          if (inc.rule == rid) actual.push_back(&inc);
        }
        std::vector<const ExpectedIncident*> wanted;
        for (const auto& ex : expected) {
          if (ex.rule == rid) wanted.push_back(&ex);
        }
        if (actual.size() != wanted.size()) {
          problems.push_back("rule " + rid + ": expected " + std::to_string(wanted.size()) + " incident(s), got " +
                             std::to_string(actual.size()));
        }
        for (std::size_t i = 0; i < std::min(actual.size(), wanted.size()); ++i) {
          std::string why = mismatch(*wanted[i], *actual[i]);
          if (!why.empty()) problems.push_back("rule " + rid + " incident " + std::to_string(i + 1) + ": " + why + " differs");
        }
      }
      if (problems.empty()) {
        ++summary.passed;
        if (verbose) out << "ok   " << rule.id << ": " << test.name << "\n";
        continue;
      }
      ++summary.failed;
      out << "FAIL " << rule.id << ": " << test.name << " (" << test.pos.str() << ")\n";
      for (const auto& p : problems) out << "  " << p << "\n";
      out << "  expected:\n";
      if (expected.empty()) out << "    (no incident of " << rule.id << ")\n";
      for (const auto& ex : expected) out << "    " << describe(ex) << "\n";
      out << "  actual:\n";
      bool any = false;
      for (const auto& inc : incidents) {
        if (std::find(watched.begin(), watched.end(), inc.rule) == watched.end()) continue;
        out << "    " << describe(inc) << "\n";
        any = true;
      }
      if (!any) out << "    (none)\n";
      std::vector<std::string> others;
      for (const auto& inc : incidents) {
        if (std::find(watched.begin(), watched.end(), inc.rule) == watched.end()) others.push_back(describe(inc));
      }
      if (!others.empty()) {
        out << "  other incidents (not compared):\n";
        for (const auto& o : others) out << "    " << o << "\n";
      }
    }
  }
  return summary;
}

int cmd_test(const Args& args) {
  std::vector<std::string> paths;
  bool verbose = false;
  for (const auto& a : args) {
    if (a == "-v" || a == "--verbose") {
      verbose = true;
    } else if (a == "-h" || a == "--help") {
      std::cout << "usage: faultline test [-v] [PATH]...\nRuns every rule's tests; prints failing cases with expected "
                   "and actual incidents, then 'N passed, N failed'.\n";
      return 0;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) paths.push_back(default_rules_dir());
  LoadResult loaded = load_rules(paths);
  for (const auto& d : loaded.diagnostics) std::cerr << d.str() << "\n";
  if (!loaded.ok()) {
    std::cout << "0 passed, 1 failed\n";
    return 1;
  }
  TestSummary s = run_rule_tests(loaded.rules, std::cout, verbose);
  std::cout << s.passed << " passed, " << s.failed << " failed\n";
  return s.failed == 0 ? 0 : 1;
}

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

int cmd_rules(const Args& args) {
  if (args.empty() || args[0] != "list") {
    std::cerr << "usage: faultline rules list [--markdown] [--rules PATH]...\n";
    return 2;
  }
  bool markdown = false;
  std::vector<std::string> paths;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--markdown") {
      markdown = true;
    } else if (args[i] == "--rules" && i + 1 < args.size()) {
      paths.push_back(args[++i]);
    } else {
      paths.push_back(args[i]);
    }
  }
  if (paths.empty()) paths.push_back(default_rules_dir());
  LoadResult loaded = load_rules(paths);
  for (const auto& d : loaded.diagnostics) std::cerr << d.str() << "\n";
  if (!loaded.ok()) return 2;
  std::cout << catalog_table(loaded.rules, markdown);
  return 0;
}

int cmd_version(const Args&) {
  std::cout << "faultline " << faultline_version() << " (Hyperscan API: " << hs_version() << ")\n";
  return 0;
}

}  // namespace faultline::app
