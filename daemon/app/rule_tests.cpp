// The rule-test engine: replays and comparisons. `faultline test` itself is cmd_test.cpp.
#include "rule_tests.hpp"

#include <algorithm>
#include <fstream>
#include <ostream>
#include <sstream>

#include "faultline/replay.hpp"

namespace faultline::app {

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

}  // namespace

std::optional<std::string> read_test_file(const RuleTest& test) {
  std::ifstream in(test.file, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Incident> replay_test(const std::shared_ptr<const CompiledRules>& compiled, const RuleTest& test,
                                  const std::string& file_bytes) {
  ReplayOptions options;
  options.start = test.start.value_or(kDefaultStart);
  Replay replay(compiled, std::move(options));
  DecodeOptions decode;
  decode.format = parse_container_format(test.format).value_or(ContainerFormat::auto_detect);
  StreamIdentity id;
  id.name = "test";
  id.logical = "test";
  id.instance = "test";
  const std::uint32_t stream = replay.add_stream(id, decode);
  if (!file_bytes.empty()) replay.feed(stream, file_bytes);
  for (const auto& line : test.lines) {
    // Virtual time runs on from the latest time seen, whether the clock's or a line's own.
    if (line.after.count() > 0) replay.after(line.after);
    replay.line(stream, line.text);
  }
  replay.end_stream(stream);
  replay.after(test.advance);
  replay.finish();
  return replay.incidents();
}

std::string closest_rule_id(const RuleSet& rules, std::string_view id) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(3, id.size() / 3) + 1;
  for (const auto& r : rules.rules) {
    // Levenshtein distance, two rows.
    std::vector<std::size_t> prev(r.id.size() + 1), cur(r.id.size() + 1);
    for (std::size_t j = 0; j <= r.id.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= id.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= r.id.size(); ++j) {
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (id[i - 1] == r.id[j - 1] ? 0 : 1)});
      }
      std::swap(prev, cur);
    }
    std::size_t d = prev[r.id.size()];
    // An id that starts with what was typed is close too ("cuda-oom" for "cuda-out-of-memory" is not, by distance).
    if (r.id.rfind(id, 0) == 0 && !id.empty()) d = std::min<std::size_t>(d, 1);
    if (d < best_distance) {
      best_distance = d;
      best = r.id;
    }
  }
  return best;
}

TestSummary run_rule_tests(const std::shared_ptr<const CompiledRules>& compiled, std::ostream& out, bool verbose,
                           const std::vector<std::string>& only) {
  TestSummary summary;
  for (const auto& rule : compiled->rule_set().rules) {
    if (!only.empty() && std::find(only.begin(), only.end(), rule.id) == only.end()) continue;
    for (const auto& test : rule.tests) {
      std::optional<std::string> file_bytes = test.file.empty() ? std::string() : read_test_file(test);
      if (!file_bytes) {
        ++summary.failed;
        out << "FAIL " << rule.id << ": " << test.name << " (" << test.pos.str() << ")\n  test file '" << test.file
            << "' cannot be read\n";
        continue;
      }
      std::vector<Incident> incidents = replay_test(compiled, test, *file_bytes);
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
        if (!compiled->rule_set().find(rid)) {
          problems.push_back("rule " + rid + " is not loaded: give its file or directory too, or test with the "
                             "catalog loaded (faultline test --rule " + rule.id + " PATH)");
          continue;
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

}  // namespace faultline::app
