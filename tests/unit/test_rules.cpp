// The rule loader: typed model, every error at once with 1-based positions, cross-file checks.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>

#include "faultline/match.hpp"
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

TEST_CASE("a repeated key is an error at the repetition naming the first, in any mapping", "[rules]") {
  auto r = load_rules_from_string(R"(id: dup
title: t
severity: info
events:
  e:
    regex: 'x'
    caseless: true
    caseless: false
title: again
)", "dup.yaml");
  INFO(dump(r));
  CHECK_FALSE(r.ok());
  CHECK(has_error(r, "dup.yaml:8:5", "duplicate key 'caseless' (first at dup.yaml:7:5)"));
  CHECK(has_error(r, "dup.yaml:9:1", "duplicate key 'title' (first at dup.yaml:2:1)"));
  // A repeated event name is a repeated key too, and so is one inside a test's expectations.
  auto events = load_rules_from_string("id: e\ntitle: t\nseverity: info\nevents:\n  a: 'x'\n  a: 'y'\nsequence: [a]\n",
                                       "ev.yaml");
  CHECK(has_error(events, "ev.yaml:6:3", "duplicate key 'a' (first at ev.yaml:5:3)"));
  auto expect = load_rules_from_string(
      "id: t\ntitle: t\nseverity: info\nevents: {e: 'x'}\ntests:\n  - lines: 'x'\n"
      "    expect: [{fields: {k: a, k: b}}]\n",
      "t.yaml");
  CHECK(has_error(expect, "t.yaml:7:30", "duplicate key 'k' (first at t.yaml:7:24)"));
}

TEST_CASE("booleans are true or false; YAML 1.1's yes/no/on/off are rejected by name", "[rules]") {
  auto rule = [](const std::string& value) {
    return load_rules_from_string("id: b\ntitle: t\nseverity: info\nevents:\n  e: {regex: 'x', caseless: " + value +
                                      "}\n",
                                  "b.yaml");
  };
  REQUIRE(rule("true").ok());
  CHECK(rule("true").rules.rules[0].events[0].caseless);
  CHECK_FALSE(rule("false").rules.rules[0].events[0].caseless);
  for (const char* word : {"yes", "no", "on", "off", "True"}) {
    auto r = rule(word);
    INFO(word << "\n" << dump(r));
    CHECK(has_error(r, "b.yaml:5:29", std::string("caseless: expected true or false, got '") + word + "'"));
    CHECK(has_error(r, "b.yaml:5:29", "yes/no/on/off"));
  }
  CHECK(has_error(rule("maybe"), "b.yaml:5:29", "expected true or false, got 'maybe'"));
}

TEST_CASE("integers: one parser, one range message", "[rules]") {
  auto rule = [](const std::string& priority) {
    return load_rules_from_string("id: p\ntitle: t\nseverity: info\npriority: " + priority + "\nevents: {e: 'x'}\n",
                                  "p.yaml");
  };
  CHECK(rule("-1000").ok());
  CHECK(rule("-1000").rules.rules[0].priority == -1000);
  CHECK(has_error(rule("1001"), "p.yaml:4:11", "priority: must be at most 1000"));
  CHECK(has_error(rule("-1001"), "p.yaml:4:11", "priority: must be at least -1000"));
  CHECK(has_error(rule("high"), "p.yaml:4:11", "priority: expected a whole number, got 'high'"));
  CHECK(has_error(rule("1.5"), "p.yaml:4:11", "expected a whole number"));
}

TEST_CASE("every shipped rule file loads on its own, and the catalog as a whole", "[rules]") {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(FAULTLINE_SOURCE_RULES_DIR)) {
    auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".yaml" && ext != ".yml")) continue;
    if (entry.path().string().find("/tests/") != std::string::npos) continue;  // fixtures, not rules
    auto r = load_rules({entry.path().string()});
    INFO(entry.path().string() << "\n" << dump(r));
    CHECK(r.ok());
    CHECK(r.diagnostics.empty());
    ++files;
  }
  CHECK(files > 10);
  auto all = load_rules({FAULTLINE_SOURCE_RULES_DIR});
  INFO(dump(all));
  CHECK(all.ok());
}

TEST_CASE("lookups by id and event name use the index and stay right when the set changes", "[rules]") {
  auto r = load_rules_from_string(R"(
- {id: a, title: t, severity: info, events: {x: 'x', y: 'y'}, sequence: [x, y]}
- {id: b, title: t, severity: info, events: {z: 'z'}}
)", "ix.yaml");
  REQUIRE(r.ok());
  RuleSet set = r.rules;
  REQUIRE(set.find("b") == &set.rules[1]);
  CHECK(set.find("a")->event_index("y") == 1);
  CHECK(set.find("a")->find_event("x") == &set.rules[0].events[0]);
  CHECK(set.find("a")->event_index("z") == -1);
  CHECK(set.find("c") == nullptr);
  // Changed after indexing: the stale index is checked, never trusted.
  set.rules.erase(set.rules.begin());
  CHECK(set.find("a") == nullptr);
  REQUIRE(set.find("b") == &set.rules[0]);
  Rule added;
  added.id = "c";
  EventPattern e;
  e.name = "w";
  added.events.push_back(e);
  set.rules.push_back(added);
  CHECK(set.find("c") == &set.rules[1]);
  CHECK(set.find("c")->event_index("w") == 0);
  set.build_index();
  CHECK(set.find("c") == &set.rules[1]);
  CHECK(set.find("b")->event_index("z") == 0);
}

// ---- input limits and bounded echoes -----------------------------------------------------------------------------

namespace {

std::string one_rule(const std::string& title, const std::string& regex) {
  return "id: t-1\ntitle: \"" + title + "\"\nseverity: warning\nevents:\n  e:\n    regex: '" + regex + "'\n";
}

std::size_t longest_message(const std::vector<Diagnostic>& diagnostics) {
  std::size_t n = 0;
  for (const auto& d : diagnostics) n = std::max(n, d.str().size());
  return n;
}

struct ScratchDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("faultline-limits-" + std::to_string(::getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("excerpt keeps short text and cuts long text at a UTF-8 boundary, saying how long it was", "[rules]") {
  CHECK(excerpt("abc") == "abc");
  std::string long_text(1000, 'x');
  auto cut = excerpt(long_text);
  CHECK(cut.size() < 150);
  CHECK(cut.find("(1000 bytes)") != std::string::npos);
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";  // é, two bytes each
  auto cut_accents = excerpt(accents, 5);
  CHECK(cut_accents.substr(0, 4) == "\xc3\xa9\xc3\xa9");  // never half a character
  CHECK(cut_accents[4] != '\xc3');
}

TEST_CASE("a value longer than 64 KiB is an error at its position, and the message stays short", "[rules]") {
  auto r = load_rules_from_string(one_rule(std::string(100 * 1024, 'A'), "abc"), "big.yaml");
  INFO(dump(r).substr(0, 2000));
  CHECK(has_error(r, "big.yaml:2:8", "a value of 102400 bytes"));
  CHECK(has_error(r, "big.yaml:2:8", "at most 64 KiB"));
  CHECK(longest_message(r.diagnostics) < 400);
  // Just under the bound loads.
  auto ok = load_rules_from_string(one_rule(std::string(60 * 1024, 'A'), "abc"), "fine.yaml");
  CHECK(ok.ok());
}

TEST_CASE("a rule file over 4 MiB is refused at file:1:1 before it is read", "[rules]") {
  ScratchDir dir;
  auto file = dir.path / "huge.yaml";
  {
    std::ofstream out(file);
    out << one_rule("t", "abc");
  }
  // 200 MB, sparse: reading it would cost the memory and time the bound exists to avoid.
  std::filesystem::resize_file(file, 200'000'000);
  auto started = std::chrono::steady_clock::now();
  auto r = load_rules({file.string()});
  auto took = std::chrono::steady_clock::now() - started;
  INFO(dump(r));
  CHECK(has_error(r, "huge.yaml:1:1", "the file is 200000000 bytes; a rule or config file may have at most 4 MiB"));
  CHECK(r.rules.rules.empty());
  CHECK_FALSE(any_unreadable(r.diagnostics));  // an error in what it says: exit 1, not 2
  CHECK(took < std::chrono::seconds(2));
  auto from_string = load_rules_from_string(std::string(5 << 20, '#'), "s.yaml");
  CHECK(has_error(from_string, "s.yaml:1:1", "at most 4 MiB"));
}

TEST_CASE("inputs that cannot be read are marked so; paths with no rules are named", "[rules]") {
  ScratchDir dir;
  auto missing = load_rules({(dir.path / "nope.yaml").string()});
  CHECK(any_unreadable(missing.diagnostics));
  auto empty_dir = load_rules({dir.path.string()});
  INFO(dump(empty_dir));
  REQUIRE(empty_dir.diagnostics.size() == 1);
  CHECK(any_unreadable(empty_dir.diagnostics));
  CHECK(empty_dir.diagnostics[0].str().rfind(dir.path.string() + ": error: no rules found in '", 0) == 0);
  std::ofstream(dir.path / "empty.yaml") << "";
  auto empty_file = load_rules({dir.path.string()});
  REQUIRE(empty_file.diagnostics.size() == 1);
  CHECK(empty_file.diagnostics[0].message.find("no rules found") != std::string::npos);
  std::ofstream(dir.path / "bad.yaml") << "id: [";
  auto bad = load_rules({dir.path.string()});
  CHECK_FALSE(bad.ok());
  CHECK_FALSE(any_unreadable(bad.diagnostics));  // a syntax error is what the file says
  // A diagnostic without a file never starts with ": ".
  CHECK(Diagnostic{Diagnostic::Kind::error, Position{}, "no rules to compile"}.str() == "error: no rules to compile");
}

TEST_CASE("patterns the engines reject are echoed as a bounded excerpt", "[rules]") {
  // RE2 repeats an unbalanced pattern in its message; Hyperscan's message names the pattern too.
  std::string unbalanced = "(" + std::string(50'000, 'a');
  std::string lookahead = "(?=x)" + std::string(50'000, 'a');
  for (const auto& regex : {unbalanced, lookahead}) {
    auto loaded = load_rules_from_string(one_rule("t", regex), "p.yaml");
    REQUIRE(loaded.ok());
    auto compiled = compile_rules(std::move(loaded.rules));
    INFO(longest_message(compiled.diagnostics));
    REQUIRE_FALSE(compiled.diagnostics.empty());
    CHECK(longest_message(compiled.diagnostics) < 600);
    CHECK(std::any_of(compiled.diagnostics.begin(), compiled.diagnostics.end(),
                      [](const Diagnostic& d) { return d.message.find("50001 bytes)") != std::string::npos ||
                                                       d.message.find("50005 bytes)") != std::string::npos; }));
  }
}

TEST_CASE("sm_arch names a capability written any way a stack prints it", "[rules][transform]") {
  CHECK(normalise_sm_arch("(12, 0)") == "sm_120");
  CHECK(normalise_sm_arch("(9,0)") == "sm_90");
  CHECK(normalise_sm_arch("12.0") == "sm_120");
  CHECK(normalise_sm_arch("8.9") == "sm_89");
  CHECK(normalise_sm_arch("120") == "sm_120");
  CHECK(normalise_sm_arch("90") == "sm_90");
  CHECK(normalise_sm_arch("100") == "sm_100");
  CHECK(normalise_sm_arch("sm_120a") == "sm_120");
  CHECK(normalise_sm_arch("sm_90a") == "sm_90");
  CHECK(normalise_sm_arch("sm_100f") == "sm_100");
  CHECK(normalise_sm_arch("SM121") == "sm_121");
  CHECK(normalise_sm_arch("compute_90a") == "sm_90");
  CHECK(normalise_sm_arch("capability: 90") == "sm_90");
  CHECK(normalise_sm_arch("compute capability is 89") == "sm_89");
  CHECK(normalise_sm_arch("sm_75") == "sm_75");
  // Not a capability: kept as captured by the caller.
  CHECK_FALSE(normalise_sm_arch("gfx942"));  // 942: three digits, but a major of 94 is no CUDA architecture
  CHECK_FALSE(normalise_sm_arch("this GPU"));
  CHECK_FALSE(normalise_sm_arch("5090"));
  CHECK_FALSE(normalise_sm_arch("12.01"));
  CHECK_FALSE(normalise_sm_arch("7"));
  CHECK_FALSE(normalise_sm_arch("-90"));
}

TEST_CASE("the GPU family of an architecture is named where it is known", "[rules][transform]") {
  CHECK(gpu_family("sm_90") == "Hopper");
  CHECK(gpu_family("sm_100") == "Blackwell datacenter");
  CHECK(gpu_family("sm_103") == "Blackwell datacenter");
  CHECK(gpu_family("sm_120") == "Blackwell consumer");
  CHECK(gpu_family("sm_121") == "Blackwell DGX Spark");
  CHECK(gpu_family("sm_89") == "Ada");
  CHECK(gpu_family("sm_80") == "Ampere datacenter");
  CHECK(gpu_family("sm_86") == "Ampere");
  CHECK(gpu_family("sm_99") == "");

  Fields f{{"arch", "(12, 0)"}, {"other", "12.0"}};
  apply_field_transforms({{"arch", FieldTransform::sm_arch}}, f);
  CHECK(*find_field(f, "arch") == "sm_120");
  CHECK(*find_field(f, "arch_gpu") == "sm_120 (Blackwell consumer)");
  CHECK(*find_field(f, "other") == "12.0");  // only the fields the rule names
  Fields unknown{{"arch", "sm_99"}, {"odd", "gfx942"}};
  apply_field_transforms({{"arch", FieldTransform::sm_arch}, {"odd", FieldTransform::sm_arch}, {"absent", FieldTransform::sm_arch}}, unknown);
  CHECK(*find_field(unknown, "arch_gpu") == "sm_99");
  CHECK(*find_field(unknown, "odd") == "gfx942");
  CHECK(*find_field(unknown, "odd_gpu") == "gfx942");
  CHECK(find_field(unknown, "absent") == nullptr);
  CHECK(find_field(unknown, "absent_gpu") == nullptr);
}

TEST_CASE("normalise names a known transform of a field the event captures", "[rules][transform]") {
  auto ok = load_rules_from_string(
      "id: one\ntitle: t\nseverity: info\nevents:\n  e:\n    regex: 'capability (?P<arch>\\d+)'\n    normalise: {arch: sm_arch}\n",
      "one.yaml");
  INFO(dump(ok));
  REQUIRE(ok.ok());
  REQUIRE(ok.rules.rules[0].events[0].normalise.size() == 1);
  CHECK(ok.rules.rules[0].events[0].normalise[0].first == "arch");
  auto bad = load_rules_from_string(R"(id: two
title: t
severity: info
events:
  e:
    regex: 'capability (?P<arch>\d+)'
    normalise: {arch: gpu_name, cc: sm_arch}
)", "two.yaml");
  INFO(dump(bad));
  CHECK_FALSE(bad.ok());
  CHECK(has_error(bad, "two.yaml:7", "unknown transform 'gpu_name'"));
  CHECK(has_error(bad, "two.yaml:7", "neither captures nor sets"));
  auto set = load_rules_from_string(
      "id: three\ntitle: t\nseverity: info\nevents:\n  e:\n    regex: 'RTX 5090'\n    set: {arch: sm_120}\n    normalise: {arch: sm_arch}\n",
      "three.yaml");
  INFO(dump(set));
  CHECK(set.ok());
}

TEST_CASE("optional template segments are left out when a field inside is absent", "[rules]") {
  Fields f{{"gpu", "0"}, {"free", "1 GiB"}};
  CHECK(expand_template("failed[[ on GPU {gpu}]][[, requested {requested}]].", f) == "failed on GPU 0.");
  CHECK(expand_template("failed[[ on GPU {gpu}]][[, requested {requested}]].", {}) == "failed.");
  // A placeholder with a default never drops its segment.
  CHECK(expand_template("x[[ ({requested|size not printed})]]", {}) == "x (size not printed)");
  // Nested: the outer segment stays when only the inner one loses its field.
  CHECK(expand_template("a[[ b {gpu}[[ c {pid}]]]] d", f) == "a b 0 d");
  CHECK(expand_template("a[[ b {pid}[[ c {gpu}]]]] d", f) == "a d");
  // A lone ]] is text; a field value is never read as template text.
  CHECK(expand_template("caps: ]] {v}", Fields{{"v", "[[gpu]] {free}"}}) == "caps: ]] [[gpu]] {free}");
}

TEST_CASE("parse_template lists placeholders and reports an unclosed segment", "[rules]") {
  auto s = parse_template("a {x} [[b {y|words}]] [[c {z}");
  REQUIRE(s.placeholders.size() == 3);
  CHECK(s.placeholders[0].name == "x");
  CHECK_FALSE(s.placeholders[0].fallback);
  CHECK(s.placeholders[1].fallback == std::optional<std::string>("words"));
  CHECK(s.placeholders[2].offset == 26);
  REQUIRE(s.problems.size() == 1);
  CHECK(s.problems[0].offset == 22);

  // Nesting is bounded (a hostile rule file cannot recurse deeply): past 8 levels `[[` is text and a problem.
  std::string deep(64 * 1024, '[');
  auto problems = parse_template(deep).problems;
  CHECK(problems.size() == 9);  // too deep once, and the 8 segments never closed
  CHECK(expand_template(deep, {}).size() < deep.size());
}

TEST_CASE("a placeholder naming no field of the rule is an error at its position", "[rules]") {
  auto r = load_rules_from_string(R"(id: p
title: "Thing on {gpuu|this GPU}"
severity: info
summary: >
  The kernel failed on
  GPU {gpu|?} at [[ {where}.
events:
  e: {regex: 'GPU (?P<gpu>\d+) failed', set: {phase: serving}}
remediation: "Phase {phase}."
)", "p.yaml");
  INFO(dump(r));
  CHECK(has_error(r, "p.yaml:2:18", "placeholder {gpuu|this GPU} names no field of rule 'p' (its fields: gpu, phase)"));
  CHECK(has_error(r, "p.yaml:6:7", "would print '?' when gpu is absent"));
  CHECK(has_error(r, "p.yaml:6:18", "segment '[[' is never closed"));
  CHECK(has_error(r, "p.yaml:6:21", "placeholder {where} names no field"));
  CHECK(r.diagnostics.size() == 4);  // {phase} comes from `set`: known
}

namespace {

// What a rendered text must never show: a bare "?", an empty "()", punctuation left dangling by a missing value.
// A match is tolerated only where the template itself writes it (code such as `get_arch_list()` in a remediation).
std::vector<std::string> text_problems(const std::string& rendered, const std::string& tmpl) {
  static const std::vector<std::pair<std::regex, std::string>> bad = {
      {std::regex(R"(\?)"), "'?'"},
      {std::regex(R"(\(\s*\))"), "'()'"},
      {std::regex(R"([,:;]\s*[.,;:)])"), "dangling punctuation"},
      {std::regex(R"(\(\s*[;,:])"), "dangling punctuation"},
      {std::regex("  "), "double space"},
      {std::regex(R"(\s[,.;:)])"), "space before punctuation"},
      {std::regex(R"(\(\s)"), "space after '('"},
      {std::regex(R"([,:;]\s*$)"), "trailing punctuation"},
      {std::regex(R"(^\s|\s$)"), "leading or trailing space"},
  };
  std::vector<std::string> found;
  for (const auto& [re, what] : bad) {
    for (auto it = std::sregex_iterator(rendered.begin(), rendered.end(), re); it != std::sregex_iterator(); ++it) {
      auto from = static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, it->position() - 4));
      std::string context = rendered.substr(from, static_cast<std::size_t>(it->position()) - from + it->length() + 4);
      if (tmpl.find(context) != std::string::npos) continue;
      from = static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, it->position() - 40));
      found.push_back(what + " in: ..." + rendered.substr(from, 90) + "...");
    }
  }
  return found;
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

}  // namespace

TEST_CASE("every shipped rule's texts read well with any field absent", "[rules]") {
  auto loaded = load_rules({std::string(FAULTLINE_CORPUS_DIR) + "/../../../rules"});
  INFO(dump(loaded));
  REQUIRE(loaded.ok());
  REQUIRE(loaded.rules.rules.size() >= 20);
  std::size_t renders = 0;
  for (const auto& rule : loaded.rules.rules) {
    const auto names = rule.field_names();
    // None, all, and each one alone present or alone absent.
    std::vector<Fields> cases(2);
    for (const auto& n : names) cases[1].emplace_back(n, "V" + n);
    for (const auto& n : names) {
      cases.push_back(Fields{{n, "V" + n}});
      Fields but;
      for (const auto& m : names) {
        if (m != n) but.emplace_back(m, "V" + m);
      }
      cases.push_back(std::move(but));
    }
    for (const auto* text : {&rule.title, &rule.summary, &rule.remediation}) {
      const std::string tmpl = trimmed(*text);
      for (const auto& fields : cases) {
        std::string rendered = trimmed(expand_template(tmpl, fields));
        ++renders;
        auto problems = text_problems(rendered, tmpl);
        INFO(rule.id << " with " << fields.size() << " of " << names.size() << " fields: " << rendered);
        for (const auto& p : problems) FAIL_CHECK(p);
      }
    }
  }
  CHECK(renders > 500);
}

TEST_CASE("the rendered-text check catches what it is meant to", "[rules]") {
  const std::string tmpl = "GPU {gpu|?} failed ({error}; {detail}) at {where},";
  CHECK(text_problems(trimmed(expand_template(tmpl, {})), tmpl).size() >= 4);
  CHECK(text_problems("print(torch.version())", "print(torch.version())").empty());
}

TEST_CASE("loading without tests: the same rules, positions and content hashes, and no tests", "[rules]") {
  const auto with = load_rules({FAULTLINE_SOURCE_RULES_DIR});
  const auto without = load_rules({FAULTLINE_SOURCE_RULES_DIR}, LoadOptions{false});
  REQUIRE(with.ok());
  REQUIRE(without.ok());
  REQUIRE(with.rules.rules.size() == without.rules.rules.size());
  std::size_t tests = 0;
  for (std::size_t i = 0; i < with.rules.rules.size(); ++i) {
    const Rule& a = with.rules.rules[i];
    const Rule& b = without.rules.rules[i];
    INFO(a.id);
    CHECK(a.id == b.id);
    CHECK(a.content_hash == b.content_hash);
    CHECK(a.pos.str() == b.pos.str());
    REQUIRE(a.events.size() == b.events.size());
    for (std::size_t e = 0; e < a.events.size(); ++e) {
      CHECK(a.events[e].regex == b.events[e].regex);
      CHECK(a.events[e].pos.str() == b.events[e].pos.str());
    }
    CHECK(b.tests.empty());
    tests += a.tests.size();
  }
  CHECK(tests > 100);
}

TEST_CASE("loading many files (read on several threads): the order of rules and diagnostics is the files' order",
          "[rules]") {
  const std::string dir = std::filesystem::temp_directory_path() / ("faultline-many-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (int i = 0; i < 24; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/r%02d.yaml", i);
    // Every third file repeats the id of the file before it; the opening comments are blanked, not dropped.
    const int id = i % 3 == 2 ? i - 1 : i;
    std::ofstream(dir + name) << "# rule " << i << "\n#\n\nid: rule-" << id << "\ntitle: t\nseverity: "
                              << (i == 13 ? "bogus" : "warning") << "\nevents: {e: 'x" << i << "'}\n";
  }
  const auto loaded = load_rules({dir}, LoadOptions{false, false});
  std::filesystem::remove_all(dir);
  for (const auto& d : loaded.diagnostics) UNSCOPED_INFO(d.str());
  REQUIRE(loaded.rules.rules.size() == 16);  // r14 repeats the id of r13, which did not load
  CHECK(loaded.rules.rules.front().id == "rule-0");
  CHECK(loaded.rules.rules.back().id == "rule-22");
  CHECK(loaded.rules.rules[1].pos.line == 4);
  std::vector<std::string> shown;
  for (const auto& d : loaded.diagnostics) shown.push_back(d.str());
  REQUIRE(shown.size() == 8);
  CHECK(shown[0].find("r02.yaml:4:1") != std::string::npos);
  CHECK(shown[0].find("duplicate rule id 'rule-1' (first defined at " + dir + "/r01.yaml:4:1)") != std::string::npos);
  CHECK(shown[4].find("r13.yaml:6:11") != std::string::npos);
  CHECK(shown[7].find("r23.yaml") != std::string::npos);
}

TEST_CASE("loading without content hashes: the same rules, every hash empty", "[rules]") {
  const auto with = load_rules({FAULTLINE_SOURCE_RULES_DIR}, LoadOptions{false});
  const auto without = load_rules({FAULTLINE_SOURCE_RULES_DIR}, LoadOptions{false, false});
  REQUIRE(with.ok());
  REQUIRE(without.ok());
  REQUIRE(with.rules.rules.size() == without.rules.rules.size());
  for (std::size_t i = 0; i < with.rules.rules.size(); ++i) {
    INFO(with.rules.rules[i].id);
    CHECK(with.rules.rules[i].id == without.rules.rules[i].id);
    CHECK(with.rules.rules[i].content_hash.size() == 16);
    CHECK(without.rules.rules[i].content_hash.empty());
    CHECK(with.rules.rules[i].events.size() == without.rules.rules[i].events.size());
  }
}

TEST_CASE("loading without tests: a list at the key's indentation, keys after the block, errors still placed",
          "[rules]") {
  const std::string dir = std::filesystem::temp_directory_path() / ("faultline-notests-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir + "/a.yaml") << "id: a-1\ntitle: a\nseverity: warning\nevents: {e: 'x'}\ntests:\n"
                                      "- name: t\n  lines: |\n    x\n# a comment\n  expect: []\n"
                                      "sequence:\n  - event: e\n";
    std::ofstream(dir + "/b.yaml") << "id: b-1\ntitle: b\nseverity: warning\ntests:\n  - {name: t, lines: \"y\", expect: []}\n"
                                      "events: {e: 'y'}\nsequence:\n  - event: nope\n";
  }
  const auto without = load_rules({dir}, LoadOptions{false});
  const auto with = load_rules({dir});
  std::filesystem::remove_all(dir);
  REQUIRE(without.rules.rules.size() == 1);  // b-1 names an event it lacks: an error in both
  CHECK(without.rules.rules[0].sequence.size() == 1);
  REQUIRE(with.diagnostics.size() == without.diagnostics.size());
  for (std::size_t i = 0; i < with.diagnostics.size(); ++i) CHECK(with.diagnostics[i].str() == without.diagnostics[i].str());
}
