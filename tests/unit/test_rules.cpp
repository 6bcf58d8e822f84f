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
#include "support.hpp"

using namespace faultline;

using faultline::testing::dump;
using faultline::testing::has_error;

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

TEST_CASE("a sequence whose first required step is an absence is an error at that step", "[rules]") {
  // An absence is timed from the step before it: with none, it was due at once, for ever (a scan never ended).
  auto r = load_rules_from_string(R"(id: opens-with-absence
title: t
severity: info
events: {ready: 'READY', note: 'NOTE'}
sequence:
  - {event: note, optional: true}
  - {absent: ready, for: 10s}
)", "absence.yaml");
  INFO(dump(r));
  CHECK_FALSE(r.ok());
  CHECK(has_error(r, "absence.yaml:7:5", "first required step cannot be an 'absent' step"));
  CHECK(r.diagnostics.size() == 1);

  auto fine = load_rules_from_string(R"(id: absence-after
title: t
severity: info
events: {ready: 'READY', start: 'START'}
sequence:
  - start
  - {absent: ready, for: 10s}
)", "after.yaml");
  INFO(dump(fine));
  CHECK(fine.ok());
}

TEST_CASE("YAML syntax errors carry their position", "[rules]") {
  auto r = load_rules_from_string("id: x\ntitle: [unclosed\nseverity: info\n", "syntax.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.diagnostics[0].pos.file == "syntax.yaml");
  CHECK(r.diagnostics[0].pos.line >= 2);
}

TEST_CASE("a document yaml-cpp cannot start is an error at its place, not an endless parse", "[rules]") {
  // YAML::LoadAll of yaml-cpp 0.7 loops for ever, allocating, on a ',' at the top of a document.
  const std::string good = "id: a-1\ntitle: a\nseverity: warning\nevents: {e: 'x'}\n";
  auto r = load_rules_from_string(good + "---\n  , stray\n", "comma.yaml");
  INFO(dump(r));
  REQUIRE_FALSE(r.ok());
  CHECK(has_error(r, "comma.yaml:6:3", "a YAML document cannot start with ','"));
  CHECK_FALSE(load_rules_from_string(",\n", "bare.yaml").ok());
}

TEST_CASE("documents of one file keep their lines and columns; an empty one is skipped", "[rules]") {
  const std::string doc = "id: %-1\ntitle: t\nseverity: warning\nevents: {e: 'x'}\n";
  auto rule = [&](char c) { std::string d = doc; d[4] = c; return d; };
  auto r = load_rules_from_string("---\n" + rule('a') + "--- # two\n" + rule('b') + "---\n...\n--- \n" +
                                      "id: c-1\ntitle: t\nseverity: sometimes\nevents: {e: 'x'}\n",
                                  "multi.yaml");
  INFO(dump(r));
  CHECK(r.rules.rules.size() == 2);
  CHECK(has_error(r, "multi.yaml:16:11", "severity"));
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

// ---- the parsed-rules cache (LoadOptions::cache_dir) ------------------------------------------------------------

namespace {

std::vector<std::filesystem::path> cache_entries(const std::string& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind("parsed-", 0) == 0) out.push_back(e.path());
  }
  return out;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("parsed rule files from the cache are the rules parsing gives, field for field", "[rules][cache]") {
  const std::string cache = std::filesystem::temp_directory_path() / ("faultline-parsed-" + std::to_string(::getpid()));
  std::filesystem::remove_all(cache);
  for (const bool hash : {true, false}) {
    INFO("content hash " << hash);
    const auto parsed = load_rules({FAULTLINE_SOURCE_RULES_DIR}, LoadOptions{false, hash});
    REQUIRE(parsed.ok());
    const auto first = load_rules({FAULTLINE_SOURCE_RULES_DIR}, LoadOptions{false, hash, cache});
    const auto second = load_rules({FAULTLINE_SOURCE_RULES_DIR}, LoadOptions{false, hash, cache});
    REQUIRE(second.ok());
    REQUIRE(second.rules.rules.size() == parsed.rules.rules.size());
    for (std::size_t i = 0; i < parsed.rules.rules.size(); ++i) {
      INFO(parsed.rules.rules[i].id);
      CHECK(first.rules.rules[i] == parsed.rules.rules[i]);
      CHECK(second.rules.rules[i] == parsed.rules.rules[i]);
    }
    CHECK(second.diagnostics == parsed.diagnostics);
    CHECK(second.rules.find(parsed.rules.rules.back().id) != nullptr);  // indexed
  }
  // One entry per set of options; with tests nothing is kept.
  CHECK(cache_entries(cache).size() == 2);
  (void)load_rules({FAULTLINE_SOURCE_RULES_DIR}, LoadOptions{true, true, cache});
  CHECK(cache_entries(cache).size() == 2);
  std::filesystem::remove_all(cache);
}

TEST_CASE("the parsed-rules cache: what it holds is used, a changed file is parsed again, a damaged entry is a miss",
          "[rules][cache]") {
  const std::string base = std::filesystem::temp_directory_path() / ("faultline-parsed-b-" + std::to_string(::getpid()));
  const std::string dir = base + "/rules", cache = base + "/cache";
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(dir);
  const auto write_rule = [&](const std::string& title) {
    std::ofstream(dir + "/r.yaml") << "id: cached-rule\ntitle: " << title << "\nseverity: critical\npriority: 7\n"
                                   << "events:\n  boom: {regex: 'Boom (?P<code>[0-9]+)', level: [error, critical], "
                                   << "caseless: true, set: {kind: boom}, normalise: {code: sm_arch}}\n"
                                   << "  calm: 'all calm'\n"
                                   << "sequence:\n  - {event: boom, count: 2, within: 5s, severity: warning}\n"
                                   << "  - {absent: [calm], for: 1m, after: [boom]}\n"
                                   << "key: [node, 'field:code']\nreset_on: [calm]\n"
                                   << "tolerance: {lines: 9, time: 3s}\nlifetime: {quiet: 2h, resolve_on: [calm]}\n"
                                   << "cascade: {window: 1m, hold: 4s}\n"
                                   << "attribution: {explains: [x], when: {code: ['1', '2']}, gpu: [code]}\n"
                                   << "labels: {team: gpu}\nreferences: ['https://example.com']\ncontext_lines: 3\n"
                                   << "summary: >\n  s {code}\nremediation: >\n  r\n";
  };
  write_rule("first title");
  const LoadOptions cached{false, true, cache};
  const auto parsed = load_rules({dir}, LoadOptions{false, true});
  for (const auto& d : parsed.diagnostics) UNSCOPED_INFO(d.str());
  REQUIRE(parsed.ok());
  REQUIRE(load_rules({dir}, cached).rules.rules.at(0) == parsed.rules.rules.at(0));
  const auto entries = cache_entries(cache);
  REQUIRE(entries.size() == 1);
  const auto again = load_rules({dir}, cached);
  REQUIRE(again.rules.rules.size() == 1);
  CHECK(again.rules.rules[0] == parsed.rules.rules[0]);
  CHECK(again.rules.rules[0].sequence.at(1).absent_for == std::chrono::minutes(1));

  // The entry is what is read: a title changed inside it (same length) shows.
  std::string bytes = slurp(entries[0]);
  const std::size_t at = bytes.rfind("first title");
  REQUIRE(at != std::string::npos);
  bytes.replace(at, 11, "other title");
  std::ofstream(entries[0], std::ios::binary | std::ios::trunc) << bytes;
  CHECK(load_rules({dir}, cached).rules.rules.at(0).title == "other title");
  // An entry for other sources (its header's copy of the file differs by a byte, as a hash collision would have it)
  // is a miss: the file is parsed, and the entry's "other title" does not show.
  const std::size_t in_header = bytes.find("first title");
  REQUIRE(in_header < at);
  for (std::size_t k : {in_header, in_header + 10}) {
    std::string collided = bytes;
    collided[k] = 'X';
    std::ofstream(entries[0], std::ios::binary | std::ios::trunc) << collided;
    CHECK(load_rules({dir}, cached).rules.rules.at(0).title == "first title");
  }

  // Every shorter entry (cut anywhere) is a miss: the file is parsed again.
  for (std::size_t cut = 0; cut < bytes.size(); cut += 1 + cut / 8) {
    std::ofstream(entries[0], std::ios::binary | std::ios::trunc) << bytes.substr(0, cut);
    const auto read = load_rules({dir}, cached);
    REQUIRE(read.rules.rules.size() == 1);
    REQUIRE(read.rules.rules[0] == parsed.rules.rules[0]);
  }

  // A changed file is parsed again, not taken from the entry of its old text.
  write_rule("second title");
  CHECK(load_rules({dir}, cached).rules.rules.at(0).title == "second title");
  CHECK(cache_entries(cache).size() == 2);
  // A file with an error is reported as ever, and not kept.
  std::ofstream(dir + "/broken.yaml") << "id: broken\ntitle: t\nseverity: bogus\nevents: {e: x}\n";
  const auto broken = load_rules({dir}, cached);
  CHECK_FALSE(broken.ok());
  CHECK(load_rules({dir}, cached).diagnostics == broken.diagnostics);
  CHECK(cache_entries(cache).size() == 2);
  std::filesystem::remove_all(base);
}
