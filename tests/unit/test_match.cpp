// The matcher: one database, hits mapped to records, level filters, RE2 captures, no match across lines,
// every bad pattern reported, binary input, the compiled-database cache.
#include <catch2/catch.hpp>
#include <re2/re2.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>

#include "faultline/match.hpp"
#include "support.hpp"

using namespace faultline;
using namespace faultline::testing;

namespace {

RecordBatch batch_of(const std::vector<std::pair<std::string, Level>>& lines) {
  RecordBatch b;
  std::uint64_t n = 0;
  for (const auto& [text, level] : lines) {
    RecordMeta m;
    m.line = ++n;
    m.level = level;
    b.append(m, text);
  }
  return b;
}

const char* kRules = R"(
rules:
  - id: fmha
    title: t
    severity: critical
    events:
      e: "TllmGenFmhaRunner' at [^ ]*fmhaRunner\\.cuh:(?P<line>\\d+): Unsupported architecture"
  - id: capability
    title: t
    severity: info
    events:
      e:
        regex: '[Cc]ompute capability(?: is|:)? (?P<arch>\(\d+, ?\d+\)|\d+(?:\.\d)?)'
        normalise: {arch: sm_arch}
  - id: capability-named
    title: t
    severity: info
    events:
      e:
        regex: 'NVIDIA H200'
        set: {arch: "9.0"}
        normalise: {arch: sm_arch}
  - id: leveled
    title: t
    severity: warning
    events:
      e: {regex: 'disk almost full', level: [warning]}
  - id: spaced
    title: t
    severity: info
    events:
      e: 'first\s+second'
)";

}  // namespace

TEST_CASE("hits map to their records with captures", "[match]") {
  auto rules = compile_yaml(kRules);
  Scanner scanner(rules);
  auto batch = batch_of({{"noise", Level::info},
                         {"RuntimeError: Error in function 'TllmGenFmhaRunner' at /x/y/fmhaRunner.cuh:37: Unsupported architecture", Level::unknown},
                         {"more noise", Level::info}});
  std::vector<Hit> hits;
  scanner.scan(batch, hits);
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].record == 1);
  CHECK(rules->rule(hits[0].event.rule).id == "fmha");
  CHECK(*find_field(hits[0].fields, "line") == "37");
}

TEST_CASE("a level restriction filters hits", "[match]") {
  Scanner scanner(compile_yaml(kRules));
  auto batch = batch_of({{"disk almost full", Level::info}, {"disk almost full", Level::warning}});
  std::vector<Hit> hits;
  scanner.scan(batch, hits);
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].record == 1);
}

TEST_CASE("a batch of referred and copied spans is scanned span by span", "[match]") {
  auto rules = compile_yaml(R"(
rules:
  - id: fmha
    title: t
    severity: critical
    events:
      e: "Unsupported architecture"
  - id: blank
    title: t
    severity: info
    events:
      e: '^ {3,}$'
)");
  Scanner scanner(rules);
  const std::string src = "ok\nUnsupported architecture one\n\n     \nnoise\nUnsupported architecture two\n";
  RecordBatch b;
  RecordMeta m;
  b.append_in_place(m, std::string_view(src).substr(0, 2));                                // ok
  b.append_in_place(m, std::string_view(src).substr(3, 28));                               // ... one
  b.append_in_place(m, std::string_view(src).substr(39, 5));                               // noise (after blank lines)
  b.append(m, "copied: Unsupported architecture");                                          // own span
  b.append_in_place(m, std::string_view(src).substr(45, 28));                              // ... two
  REQUIRE(b.span_count() == 3);
  std::vector<Hit> hits;
  scanner.scan(b, hits);
  // The whitespace-only blank line between records is no record: the pattern that matches it gives no hit.
  REQUIRE(hits.size() == 3);
  CHECK(hits[0].record == 1);
  CHECK(hits[1].record == 3);
  CHECK(hits[2].record == 4);
  for (const auto& h : hits) CHECK(rules->rule(h.event.rule).id == "fmha");
}

TEST_CASE("a match never spans two lines", "[match]") {
  Scanner scanner(compile_yaml(kRules));
  auto batch = batch_of({{"ends with first", Level::info}, {"second begins", Level::info}, {"first   second", Level::info}});
  std::vector<Hit> hits;
  scanner.scan(batch, hits);
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].record == 2);
}

TEST_CASE("one hit per record and event, in record order", "[match]") {
  Scanner scanner(compile_yaml(kRules));
  auto batch = batch_of({{"first second first second", Level::info}, {"x", Level::info}, {"first second", Level::info}});
  std::vector<Hit> hits;
  scanner.scan(batch, hits);
  REQUIRE(hits.size() == 2);
  CHECK(hits[0].record == 0);
  CHECK(hits[1].record == 2);
}

TEST_CASE("binary and invalid UTF-8 do not break matching or captures", "[match]") {
  Scanner scanner(compile_yaml(R"(
id: bin
title: t
severity: info
events:
  e: 'code=(?P<code>[^ ]+) end'
)"));
  std::string garbage = std::string("\x00\xff\xfe\xc3", 4) + "code=\xe9\xff\x80 end";
  RecordBatch b;
  b.append(RecordMeta{}, garbage);
  std::vector<Hit> hits;
  scanner.scan(b, hits);
  REQUIRE(hits.size() == 1);
  CHECK(*find_field(hits[0].fields, "code") == "\xe9\xff\x80");
}

TEST_CASE("every bad pattern is reported with its position", "[match]") {
  auto loaded = load_rules_from_string(R"(
rules:
  - id: ok
    title: t
    severity: info
    events: {e: 'fine'}
  - id: empty-match
    title: t
    severity: info
    events:
      e: 'a*'
  - id: lookahead
    title: t
    severity: info
    events:
      e: 'a(?=b)'
  - id: long-repeat
    title: t
    severity: info
    events:
      e: 'x{1001}y'
)", "bad.yaml");
  REQUIRE(loaded.ok());
  auto result = compile_rules(std::move(loaded.rules));
  CHECK_FALSE(result.rules);
  std::string all;
  for (const auto& d : result.diagnostics) all += d.str() + "\n";
  INFO(all);
  CHECK(all.find("bad.yaml:11:10: error: rule 'empty-match', event 'e': Hyperscan cannot compile pattern 'a*'") != std::string::npos);
  CHECK(all.find("bad.yaml:16:10: error: rule 'lookahead'") != std::string::npos);
  // Hyperscan takes a repetition of 1001; RE2 allows at most 1000.
  CHECK(all.find("bad.yaml:21:10: error: rule 'long-repeat', event 'e': RE2 rejects the pattern: invalid repetition "
                 "size: {1001}") != std::string::npos);
}

TEST_CASE("a compile keeps none of the RE2s it checks the patterns with; a scan builds those it confirms with",
          "[match]") {
  // The compile checked every pattern with RE2; none of those RE2s stays. A scan builds the one it confirms with.
  auto compiled = compile_rules(load_rules_from_string(kRules, "r.yaml").rules);
  REQUIRE(compiled.rules);
  CHECK(compiled.rules->regexes_built() == 0);
  Scanner scanner(compiled.rules);
  std::vector<Hit> hits;
  scanner.scan(batch_of({{"disk almost full", Level::warning}}), hits);  // no captures: RE2 is not asked
  CHECK(hits.size() == 1);
  CHECK(compiled.rules->regexes_built() == 0);
  hits.clear();
  const std::string fmha =
      "RuntimeError: Error in function 'TllmGenFmhaRunner' at /x/fmhaRunner.cuh:37: Unsupported architecture";
  scanner.scan(batch_of({{fmha, Level::error}, {fmha, Level::error}}), hits);
  REQUIRE(hits.size() == 2);
  CHECK(hits[1].fields == Fields{{"line", "37"}});
  CHECK(compiled.rules->regexes_built() == 1);
}

TEST_CASE("a compiled database is cached and reused", "[match]") {
  auto dir = std::filesystem::temp_directory_path() / ("faultline-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto load = [] { return load_rules_from_string(kRules, "r.yaml").rules; };
  auto first = compile_rules(load(), CompileOptions{dir.string()});
  REQUIRE(first.rules);
  CHECK_FALSE(first.info.from_cache);
  auto second = compile_rules(load(), CompileOptions{dir.string()});
  REQUIRE(second.rules);
  CHECK(second.info.from_cache);
  // The cached database scans like the fresh one.
  Scanner scanner(second.rules);
  auto batch = batch_of({{"first second", Level::info}});
  std::vector<Hit> hits;
  scanner.scan(batch, hits);
  CHECK(hits.size() == 1);
  // A corrupt cache file is ignored.
  for (auto& f : std::filesystem::directory_iterator(dir)) std::ofstream(f.path()) << "garbage";
  auto third = compile_rules(load(), CompileOptions{dir.string()});
  REQUIRE(third.rules);
  CHECK_FALSE(third.info.from_cache);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the compiled-database cache is written whole: one file, no temporary left beside it", "[match]") {
  auto dir = std::filesystem::temp_directory_path() / ("faultline-cache-atomic-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto first = compile_rules(load_rules_from_string(kRules, "r.yaml").rules, CompileOptions{(dir / "sub").string()});
  REQUIRE(first.rules);
  std::vector<std::string> names;
  for (auto& f : std::filesystem::directory_iterator(dir / "sub")) names.push_back(f.path().filename().string());
  REQUIRE(names.size() == 1);
  CHECK(names[0].rfind("rules-", 0) == 0);
  CHECK(names[0].size() > 5);
  CHECK(names[0].substr(names[0].size() - 5) == ".hsdb");
  auto again = compile_rules(load_rules_from_string(kRules, "r.yaml").rules, CompileOptions{(dir / "sub").string()});
  CHECK(again.info.from_cache);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a compiled rule set's lookups by id and event name answer from its index", "[match]") {
  auto result = compile_rules(load_rules_from_string(kRules, "r.yaml").rules);
  REQUIRE(result.rules);
  const RuleSet& set = result.rules->rule_set();
  for (std::size_t i = 0; i < set.rules.size(); ++i) {
    CHECK(set.find(set.rules[i].id) == &set.rules[i]);
    for (std::size_t e = 0; e < set.rules[i].events.size(); ++e) {
      CHECK(set.rules[i].event_index(set.rules[i].events[e].name) == static_cast<int>(e));
    }
  }
}

TEST_CASE("a captured capability is normalised where it is captured", "[match][transform]") {
  Scanner scanner(compile_yaml(kRules));
  auto batch = batch_of({{"Compute capability: (12, 0)", Level::info},
                         {"the compute capability is 89", Level::info},
                         {"Compute capability 9.0", Level::info},
                         {"GPU 0: NVIDIA H200", Level::info}});
  std::vector<Hit> hits;
  scanner.scan(batch, hits);
  REQUIRE(hits.size() == 4);
  CHECK(*find_field(hits[0].fields, "arch") == "sm_120");
  CHECK(*find_field(hits[0].fields, "arch_gpu") == "sm_120 (Blackwell consumer)");
  CHECK(*find_field(hits[1].fields, "arch") == "sm_89");
  CHECK(*find_field(hits[2].fields, "arch_gpu") == "sm_90 (Hopper)");
  CHECK(*find_field(hits[3].fields, "arch") == "sm_90");  // a static field is normalised too
  CHECK(*find_field(hits[3].fields, "arch_gpu") == "sm_90 (Hopper)");
}

namespace {

// Every hit of `lines` as "line rule/event field=value...", scanned in batches of up to 4,096 lines by one scanner,
// or by a fresh scanner every `per_scanner` lines (a scanner asks RE2 in one form until it has asked about an
// expression a few hundred times, then in another: see Form in daemon/match/match.cpp).
std::vector<std::string> hits_as_text(const std::shared_ptr<const CompiledRules>& rules,
                                      const std::vector<std::string>& lines, std::size_t per_scanner = 0) {
  const std::size_t batch = per_scanner != 0 ? per_scanner : 4096;
  std::optional<Scanner> scanner;
  std::vector<std::string> out;
  for (std::size_t at = 0; at < lines.size(); at += batch) {
    if (!scanner || per_scanner != 0) scanner.emplace(rules);
    RecordBatch b;
    for (std::size_t i = at; i < std::min(lines.size(), at + batch); ++i) {
      RecordMeta m;
      m.line = i + 1;
      b.append(m, lines[i]);
    }
    std::vector<Hit> hits;
    scanner->scan(b, hits);
    for (const auto& h : hits) {
      std::string t = std::to_string(at + h.record) + " " + rules->rule(h.event.rule).id + "/" +
                      std::to_string(h.event.event);
      for (const auto& [k, v] : h.fields) t += " " + k + "=" + v;
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::shared_ptr<const CompiledRules> compiled(RuleSet rules, bool relax) {
  CompileOptions o;
  o.relax_repetitions = relax;
  auto result = compile_rules(std::move(rules), o);
  for (const auto& d : result.diagnostics) UNSCOPED_INFO(d.str());
  REQUIRE(result.rules);
  return result.rules;
}

}  // namespace

TEST_CASE("captures through relaxed counted repetitions are the expression's own", "[match]") {
  // Long counted repetitions are unbounded in the copy RE2 captures with, and checked against their bounds. Each
  // pattern below has its first relaxed match differ from its own first match on some lines (the run over the bound:
  // the expression itself must be asked then), or a repetition that must not be relaxed (lazy, inside a repeated
  // group, short). Lines of a small alphabet give every run length, and the fields of both compilations must agree.
  const char* yaml = R"(
rules:
  - id: over
    title: t
    severity: info
    events:
      e: '(?P<a>x\d)[^)]{0,20}(?P<b>y\d+)'
  - id: least
    title: t
    severity: info
    events:
      e: '(?P<a>[a-z]{2,30})=(?P<b>\d{1,5})'
  - id: lazy
    title: t
    severity: info
    events:
      e: '(?:(?P<a>x\d)|z).{0,40}?(?P<b>y\d)'
  - id: group
    title: t
    severity: info
    events:
      e: '(?P<p>[a-z])(?:x[^)]{0,30}y\)[a-z]?)+(?P<b>\d)'
  - id: klass
    title: t
    severity: info
    events:
      e: '\[(?P<a>[^\]]{1,40})\] (?P<b>\S{1,64})'
  - id: posix
    title: t
    severity: info
    events:
      e: '(?i)(?P<a>x[[:alpha:]]{0,24})(?P<b>\d)'
  - id: dot
    title: t
    severity: info
    events:
      e: '(?P<a>y\d).{1,30}(?P<b>x\d)|(?P<c>z).{0,17}(?P<d>a)'
  - id: alone
    title: t
    severity: info
    events:
      e: '(?P<a>x\d) [^ ]{0,200}'
)";
  auto load = [&] {
    auto loaded = load_rules_from_string(yaml, "r.yaml");
    for (const auto& d : loaded.diagnostics) UNSCOPED_INFO(d.str());
    REQUIRE(loaded.ok());
    return std::move(loaded.rules);
  };
  std::vector<std::string> lines;
  std::uint64_t seed = 20261203;
  const std::string alphabet = "xyz)=[] ab0123 XQ";
  for (int i = 0; i < 20000; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const std::size_t n = (seed >> 33) % 120;
    std::string line;
    for (std::size_t k = 0; k < n; ++k) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      line += alphabet[(seed >> 33) % alphabet.size()];
    }
    lines.push_back(std::move(line));
  }
  // Lines where the relaxed first match runs over the bound and the expression's first match lies further on.
  lines.push_back("x1" + std::string(25, 'a') + "y1 x2 aa y2");
  lines.push_back(std::string(40, 'q') + "=1 ab=2");
  lines.push_back("qx" + std::string(35, 'a') + "y)bxay)1");  // an earlier round of a repeated group over its bound
  const auto exact = hits_as_text(compiled(load(), false), lines);
  REQUIRE(exact.size() > 5000);
  // One scanner (RE2 asked in both forms), and a scanner per 200 lines (the first form only: 200 questions about
  // lines this short stay under both of its limits).
  for (const std::size_t per_scanner : {std::size_t{0}, std::size_t{200}}) {
    INFO("a fresh scanner every " << per_scanner << " lines (0: one scanner)");
    const auto relaxed = hits_as_text(compiled(load(), true), lines, per_scanner);
    REQUIRE(relaxed.size() == exact.size());
    for (std::size_t i = 0; i < exact.size(); ++i) REQUIRE(relaxed[i] == exact[i]);
  }
  CHECK(std::find(exact.begin(), exact.end(), "20000 over/0 a=x2 b=y2") != exact.end());
  CHECK(std::find(exact.begin(), exact.end(), "20002 group/0 p=b b=1") != exact.end());
}

TEST_CASE("the shipped catalog captures the same fields relaxed or not, on every real log", "[match]") {
  auto load = [] {
    auto loaded = load_rules({std::string(FAULTLINE_CORPUS_DIR) + "/../../../rules"});
    REQUIRE(loaded.ok());
    return std::move(loaded.rules);
  };
  std::vector<std::string> lines;
  for (const auto& e : std::filesystem::directory_iterator(FAULTLINE_CORPUS_DIR)) {
    if (e.path().extension() != ".log") continue;
    std::ifstream in(e.path(), std::ios::binary);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines.push_back(line);
    }
  }
  REQUIRE(lines.size() > 1000);
  const auto relaxed = hits_as_text(compiled(load(), true), lines);
  const auto exact = hits_as_text(compiled(load(), false), lines);
  REQUIRE(exact.size() > 300);
  REQUIRE(relaxed.size() == exact.size());
  for (std::size_t i = 0; i < exact.size(); ++i) REQUIRE(relaxed[i] == exact[i]);
}

namespace {

// 6,000 lines of a small alphabet: a random prefix of any length (none for some), then mostly one of a few tails, so
// the same text comes again under other prefixes.
std::vector<std::string> lines_with_repeated_tails() {
  const std::vector<std::string> tails = {"dev12 dev345 k=ab x1 y2", "k=abcde dev9z x1  y3", "dev1234q k=a",
                                          "ab devzzzzz9z", "x1\ty1 devq", "d k=zz z"};
  std::vector<std::string> lines;
  std::uint64_t seed = 20261205;
  const auto next = [&seed](std::size_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>((seed >> 33) % n);
  };
  const std::string alphabet = "abk= dev0123xyzq";
  for (int i = 0; i < 6000; ++i) {
    std::string line;
    const std::size_t prefix = next(4) == 0 ? 0 : next(60);
    for (std::size_t k = 0; k < prefix; ++k) line += alphabet[next(alphabet.size())];
    line += next(3) == 0 ? std::string() : std::string(next(2) == 0 ? " " : "");
    if (next(4) != 0) line += tails[next(tails.size())];
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace

TEST_CASE("captures are RE2's first match in the whole line, asked from where it can start, answers kept", "[match]") {
  // RE2 is asked about a line from the expression's max width before the first match end Hyperscan saw, and a text
  // it answered (with the byte before it) is answered again without asking. Lines whose prefixes differ in length and
  // whose tails repeat exercise both; every hit's fields must be what RE2 finds in the whole line, and no line RE2
  // matches may be missed.
  const std::vector<std::string> regexes = {
      R"(dev(?P<n>\d{1,3}))",                          // greedy past the first end Hyperscan reports
      R"(\bk=(?P<v>[a-z]{1,4})\b)",                    // word boundaries on both sides of the window
      R"(^(?P<h>[a-z]{1,3}) )",                         // anchored at the line's start
      R"((?P<a>x\d)\s{0,3}(?P<b>y\d))",                // may match across a newline: confirmed in the line
      R"(d(?P<u>[^ ]*)z)",                              // unbounded: asked about the whole line
      R"(dev(?P<m>[a-z0-9]{2,40})(?P<t>z|q))",          // a long counted repetition (the relaxed copy)
  };
  std::string yaml = "rules:\n";
  for (std::size_t i = 0; i < regexes.size(); ++i) {
    std::string quoted;
    for (char c : regexes[i]) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    yaml += "  - id: r" + std::to_string(i) + "\n    title: t\n    severity: info\n    events:\n      e: '" + quoted +
            "'\n";
  }
  auto loaded = load_rules_from_string(yaml, "r.yaml");
  for (const auto& d : loaded.diagnostics) UNSCOPED_INFO(d.str());
  REQUIRE(loaded.ok());
  const auto rules = compiled(std::move(loaded.rules), true);

  std::vector<std::string> lines = lines_with_repeated_tails();
  lines.push_back("zz x1");  // Hyperscan's match of r3 runs into the next line; RE2 finds none in either
  lines.push_back("y2 dev7");

  // Expected: RE2 alone, on each whole line, its named captures as the scanner names fields.
  std::multiset<std::string> expected;
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_never_nl(true);
  for (std::size_t r = 0; r < regexes.size(); ++r) {
    RE2 re(regexes[r], options);
    REQUIRE(re.ok());
    std::vector<re2::StringPiece> groups(static_cast<std::size_t>(re.NumberOfCapturingGroups()) + 1);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const re2::StringPiece piece(lines[i].data(), lines[i].size());
      if (!re.Match(piece, 0, lines[i].size(), RE2::UNANCHORED, groups.data(), static_cast<int>(groups.size())))
        continue;
      std::set<std::string> fields;
      for (const auto& [name, index] : re.NamedCapturingGroups()) {
        const auto& g = groups[static_cast<std::size_t>(index)];
        if (g.data() != nullptr) fields.insert(name + "=" + std::string(g.data(), g.size()));
      }
      std::string t = std::to_string(i) + " r" + std::to_string(r) + "/0";
      for (const auto& f : fields) t += " " + f;
      expected.insert(t);
    }
  }
  // Found: the scanner's hits, their fields in the same order. One scanner asks RE2 about each expression in the
  // form that needs nothing built until it has asked a few hundred times, then in the form whose DFAs it builds; a
  // fresh scanner every 200 lines asks in the first form only (200 questions about lines this short stay under both
  // of its limits). Both must find what RE2 alone finds.
  for (const std::size_t per_scanner : {std::size_t{0}, std::size_t{200}}) {
    INFO("a fresh scanner every " << per_scanner << " lines (0: one scanner)");
    std::multiset<std::string> found;
    for (const auto& h : hits_as_text(rules, lines, per_scanner)) {
      std::vector<std::string> words;
      std::string w;
      for (char c : h + " ") {
        if (c != ' ') {
          w += c;
        } else if (!w.empty()) {
          words.push_back(w);
          w.clear();
        }
      }
      // No value holds a space here: "record rule/event", then the fields sorted.
      std::set<std::string> fields(words.begin() + 2, words.end());
      std::string t = words[0] + " " + words[1];
      for (const auto& f : fields) t += " " + f;
      found.insert(t);
    }
    REQUIRE(expected.size() > 3000);
    std::vector<std::string> missing, extra;
    std::set_difference(expected.begin(), expected.end(), found.begin(), found.end(), std::back_inserter(missing));
    std::set_difference(found.begin(), found.end(), expected.begin(), expected.end(), std::back_inserter(extra));
    for (std::size_t i = 0; i < missing.size() && i < 10; ++i) {
      UNSCOPED_INFO("RE2 finds, the scanner does not: " << missing[i] << " in '" << lines[std::stoul(missing[i])]
                                                        << "'");
    }
    for (std::size_t i = 0; i < extra.size() && i < 10; ++i) {
      UNSCOPED_INFO("the scanner finds, RE2 does not: " << extra[i] << " in '" << lines[std::stoul(extra[i])] << "'");
    }
    CHECK(missing.empty());
    CHECK(extra.empty());
  }
  CHECK(expected.count(std::to_string(lines.size() - 1) + " r0/0 n=7") == 1);
}

TEST_CASE("hits do not depend on where in memory the scanned bytes lie", "[match]") {
  // The lines of the test above in which Vectorscan's AVX-512 engine lost the matches of `d(?P<u>[^ ]*)z` at 27 of
  // 64 addresses; the scanner must find the same hits wherever the batch's bytes lie.
  const char* yaml = R"(
rules:
  - id: r3
    title: t
    severity: info
    events:
      e: '(?P<a>x\d)\s{0,3}(?P<b>y\d)'
  - id: r4
    title: t
    severity: info
    events:
      e: 'd(?P<u>[^ ]*)z'
  - id: r5
    title: t
    severity: info
    events:
      e: 'dev(?P<m>[a-z0-9]{2,40})(?P<t>z|q)'
)";
  auto loaded = load_rules_from_string(yaml, "r.yaml");
  REQUIRE(loaded.ok());
  const auto rules = compiled(std::move(loaded.rules), true);
  const std::vector<std::string> lines = lines_with_repeated_tails();
  std::string text;
  for (std::size_t i = 4096; i < lines.size(); ++i) text += lines[i] + "\n";
  Scanner scanner(rules);
  std::vector<char> memory(text.size() + 64);
  std::vector<std::string> first;
  for (std::size_t shift = 0; shift < 64; ++shift) {
    char* at = memory.data() + shift;
    std::copy(text.begin(), text.end(), at);
    RecordBatch b;
    std::uint64_t line = 0;
    for (std::size_t from = 0; from < text.size();) {
      const std::size_t nl = text.find('\n', from);
      RecordMeta m;
      m.line = ++line;
      if (nl > from) b.append_in_place(m, std::string_view(at + from, nl - from));
      from = nl + 1;
    }
    std::vector<Hit> hits;
    scanner.scan(b, hits);
    std::vector<std::string> got;
    for (const auto& h : hits) {
      std::string t = std::to_string(h.record) + " " + rules->rule(h.event.rule).id;
      for (const auto& [k, v] : h.fields) t += " " + k + "=" + v;
      got.push_back(std::move(t));
    }
    if (shift == 0) {
      first = got;
      REQUIRE(first.size() > 1000);
      continue;
    }
    INFO("bytes at offset " << shift << " of a 64-byte line: " << got.size() << " hits against " << first.size());
    REQUIRE(got == first);
  }
}
