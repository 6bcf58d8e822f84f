// Rule texts: templates (placeholders, defaults, optional segments), the placeholder check at load, every shipped
// rule's texts rendered with any field absent, and the field transforms (capabilities named as sm_NN and GPU family).
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

#include "faultline/match.hpp"
#include "faultline/rules.hpp"
#include "support.hpp"

using namespace faultline;

using faultline::testing::dump;
using faultline::testing::has_error;

TEST_CASE("templates expand fields with defaults", "[rules]") {
  Fields f{{"arch", "sm_120"}, {"empty", ""}};
  CHECK(expand_template("no kernel for {arch|this GPU}", f) == "no kernel for sm_120");
  CHECK(expand_template("on {gpu|this GPU}.", f) == "on this GPU.");
  CHECK(expand_template("{empty|fallback}", f) == "fallback");
  CHECK(expand_template("{missing}", f).empty());
  CHECK(expand_template("json {\"a\": 1}", f) == "json {\"a\": 1}");
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
