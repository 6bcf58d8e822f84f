// The rule loader: typed model, every error at once with 1-based positions, cross-file checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "faultline/rules.hpp"

using namespace faultline;

namespace {

bool has_error(const LoadResult& r, const std::string& where, const std::string& text) {
  return std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [&](const Diagnostic& d) {
    return d.str().find(where) != std::string::npos && d.message.find(text) != std::string::npos;
  });
}

std::string dump(const LoadResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += d.str() + "\n";
  return s;
}

}  // namespace

TEST_CASE("a complete rule loads into the typed model", "[rules]") {
  auto r = load_rules_from_string(R"(
id: gpu-thing
title: "Thing on {gpu|a GPU}"
severity: critical
priority: 42
summary: s
remediation: r
references: [https://example.com/1]
labels: {component: x}
events:
  start: 'Starting'
  boom:
    regex: 'boom on (?P<gpu>sm_\d+)'
    level: [error, critical]
    caseless: true
    set: {phase: runtime}
sequence:
  - event: start
    optional: true
  - any: [boom]
    count: 2
    within: 30s
    severity: critical
reset_on: [start]
tolerance: {lines: 5, time: 2s}
key: [stream, field:gpu]
lifetime: {quiet: 1h, resolve_on: [start]}
cascade: {window: 1m, hold: 5s}
context_lines: 6
tests:
  - name: t
    lines: |
      boom on sm_120
      boom on sm_120
    start: 2026-11-29T10:00:00Z
    advance: 1m
    expect:
      - severity: critical
        fields: {gpu: sm_120}
        count: 1
)", "x.yaml");
  INFO(dump(r));
  REQUIRE(r.ok());
  REQUIRE(r.rules.rules.size() == 1);
  const Rule& rule = r.rules.rules[0];
  CHECK(rule.id == "gpu-thing");
  CHECK(rule.priority == 42);
  CHECK(rule.severity == Severity::critical);
  REQUIRE(rule.events.size() == 2);
  CHECK(rule.events[1].captures == std::vector<std::string>{"gpu"});
  CHECK(rule.events[1].caseless);
  CHECK(rule.events[1].levels.size() == 2);
  CHECK(*find_field(rule.events[1].set, "phase") == "runtime");
  REQUIRE(rule.sequence.size() == 2);
  CHECK(rule.sequence[0].optional);
  CHECK(rule.sequence[1].count == 2);
  CHECK(*rule.sequence[1].within == std::chrono::seconds(30));
  CHECK(rule.tolerance.lines == 5);
  CHECK(rule.tolerance.time == std::chrono::seconds(2));
  CHECK(rule.key.fields == std::vector<std::string>{"gpu"});
  CHECK(rule.lifetime.quiet == std::chrono::hours(1));
  CHECK(rule.cascade.enabled);
  CHECK(rule.cascade.hold == std::chrono::seconds(5));
  CHECK(rule.context_lines == 6);
  REQUIRE(rule.tests.size() == 1);
  CHECK(rule.tests[0].lines.size() == 2);
  CHECK(rule.tests[0].advance == std::chrono::minutes(1));
  CHECK(rule.events[1].pos.line == 13);
  CHECK(rule.events[1].pos.column == 12);
  CHECK(rule.content_hash.size() == 16);
}

TEST_CASE("a single event needs no sequence", "[rules]") {
  auto r = load_rules_from_string("id: one\ntitle: t\nseverity: info\nevents: {e: 'x'}\n", "one.yaml");
  REQUIRE(r.ok());
  REQUIRE(r.rules.rules[0].sequence.size() == 1);
  CHECK(r.rules.rules[0].sequence[0].events[0] == "e");
}

TEST_CASE("every error is reported at once, with 1-based positions", "[rules]") {
  auto r = load_rules_from_string(R"(id: Bad_Id
title: t
severity: fatal
colour: blue
events:
  a: 'x'
  b:
    regex: 'y'
    level: [loud]
sequence:
  - event: a
    within: soon
  - event: nope
tolerance: {lines: -1}
)", "bad.yaml");
  INFO(dump(r));
  CHECK_FALSE(r.ok());
  CHECK(has_error(r, "bad.yaml:1:5", "kebab-case"));
  CHECK(has_error(r, "bad.yaml:3:11", "severity must be"));
  CHECK(has_error(r, "bad.yaml:4:1", "unknown key 'colour'"));
  CHECK(has_error(r, "bad.yaml:9:12", "unknown level 'loud'"));
  CHECK(has_error(r, "bad.yaml:12:13", "duration"));
  CHECK(has_error(r, "bad.yaml:13:5", "unknown event 'nope'"));
  CHECK(has_error(r, "bad.yaml:14:20", "tolerance.lines"));
  CHECK(r.diagnostics.size() >= 7);
}

TEST_CASE("YAML syntax errors carry their position", "[rules]") {
  auto r = load_rules_from_string("id: x\ntitle: [unclosed\nseverity: info\n", "syntax.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.diagnostics[0].pos.file == "syntax.yaml");
  CHECK(r.diagnostics[0].pos.line >= 2);
}

TEST_CASE("duplicate ids across files are errors; the good file still loads", "[rules]") {
  auto dir = std::filesystem::temp_directory_path() / ("faultline-rules-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "sub");
  std::ofstream(dir / "a.yaml") << "id: same\ntitle: a\nseverity: info\nevents: {e: 'a'}\n";
  std::ofstream(dir / "sub" / "b.yml") << "id: same\ntitle: b\nseverity: info\nevents: {e: 'b'}\n";
  std::ofstream(dir / "c.yaml") << "- id: other\n  title: c\n  severity: info\n  events: {e: 'c'}\n";
  std::ofstream(dir / "notes.txt") << "not a rule";
  auto r = load_rules({dir.string()});
  INFO(dump(r));
  CHECK(has_error(r, "b.yml:1:1", "duplicate rule id 'same'"));
  CHECK(r.rules.rules.size() == 2);
  CHECK(r.rules.find("other") != nullptr);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a missing path is an error", "[rules]") {
  auto r = load_rules({"/nonexistent/rules"});
  CHECK_FALSE(r.ok());
}

TEST_CASE("templates expand fields with defaults", "[rules]") {
  Fields f{{"arch", "sm_120"}, {"empty", ""}};
  CHECK(expand_template("no kernel for {arch|this GPU}", f) == "no kernel for sm_120");
  CHECK(expand_template("on {gpu|this GPU}.", f) == "on this GPU.");
  CHECK(expand_template("{empty|fallback}", f) == "fallback");
  CHECK(expand_template("{missing}", f).empty());
  CHECK(expand_template("json {\"a\": 1}", f) == "json {\"a\": 1}");
}

TEST_CASE("the content hash ignores tests but not behaviour", "[rules]") {
  auto a = load_rules_from_string("id: h\ntitle: t\nseverity: info\nevents: {e: 'x'}\n", "h.yaml");
  auto b = load_rules_from_string(
      "id: h\ntitle: t\nseverity: info\nevents: {e: 'x'}\ntests: [{lines: 'x', expect: []}]\n", "h.yaml");
  auto c = load_rules_from_string("id: h\ntitle: t\nseverity: info\nevents: {e: 'y'}\n", "h.yaml");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.rules.rules[0].content_hash == b.rules.rules[0].content_hash);
  CHECK(a.rules.rules[0].content_hash != c.rules.rules[0].content_hash);
}
