// The catalog: rule files loaded, overrides applied and patterns compiled in one call, under a policy for load
// errors (the daemon stops; check and scan compile the rest to report every problem).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "faultline/catalog.hpp"

using namespace faultline;
namespace fs = std::filesystem;

namespace {

const char* kGood = R"(
id: good
title: good
severity: warning
events:
  a: 'alpha happened'
sequence:
  - event: a
)";

const char* kBadPattern = R"(
id: bad-pattern
title: bad pattern
severity: warning
events:
  a: '(unclosed'
sequence:
  - event: a
)";

const char* kBadYaml = R"(
id: bad-yaml
title: bad yaml
severity: sometimes
events:
  a: 'x'
sequence:
  - event: a
)";

// A fresh directory holding the named rule files.
std::string rule_dir(const std::string& name, std::initializer_list<std::pair<const char*, const char*>> files) {
  fs::path dir = fs::temp_directory_path() / ("faultline-catalog-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [file, text] : files) std::ofstream(dir / file) << text;
  return dir.string();
}

bool mentions(const Catalog& c, const std::string& text) {
  for (const auto& d : c.diagnostics) {
    if (d.message.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a catalog that loads and compiles has its rules and no errors", "[catalog]") {
  Catalog c = load_and_compile({rule_dir("ok", {{"good.yaml", kGood}})}, {}, "");
  REQUIRE(c.compiled);
  CHECK(c.ok());
  CHECK(c.rules().rules.size() == 1);
  CHECK(c.seconds >= 0);
}

TEST_CASE("stopping at a load error compiles nothing; compiling the rest reports pattern errors too", "[catalog]") {
  const std::string dir = rule_dir("mixed", {{"good.yaml", kGood}, {"bad-yaml.yaml", kBadYaml}, {"bad-pattern.yaml", kBadPattern}});
  Catalog stop = load_and_compile({dir}, {}, "", CatalogPolicy{OnLoadError::stop});
  CHECK_FALSE(stop.compiled);
  CHECK(stop.errors() == 1);
  CHECK_FALSE(mentions(stop, "(unclosed"));

  Catalog rest = load_and_compile({dir}, {}, "", CatalogPolicy{OnLoadError::compile_the_rest});
  CHECK_FALSE(rest.compiled);
  CHECK(rest.errors() > 1);
  CHECK(mentions(rest, "(unclosed"));
  CHECK(rest.diagnostics.front().pos.file.find("bad-yaml.yaml") != std::string::npos);  // loading's come first
}

TEST_CASE("overrides change or remove rules before compiling; one naming no rule is a warning", "[catalog]") {
  const std::string dir = rule_dir("overrides", {{"good.yaml", kGood}, {"other.yaml", R"(
id: other
title: other
severity: info
events:
  a: 'beta happened'
sequence:
  - event: a
)"}});
  std::vector<RuleOverride> overrides(3);
  overrides[0].rule = "good";
  overrides[0].severity = Severity::critical;
  overrides[1].rule = "other";
  overrides[1].enabled = false;
  overrides[2].rule = "missing";
  Catalog c = load_and_compile({dir}, overrides, "");
  REQUIRE(c.compiled);
  REQUIRE(c.rules().rules.size() == 1);
  CHECK(c.rules().rules[0].id == "good");
  CHECK(c.rules().rules[0].severity == Severity::critical);
  REQUIRE(c.diagnostics.size() == 1);
  CHECK(c.diagnostics[0].kind == Diagnostic::Kind::warning);
  CHECK(mentions(c, "'missing'"));
}

TEST_CASE("a catalog loaded without compiling lists its rules", "[catalog]") {
  Catalog c = load_and_compile({rule_dir("list", {{"bad-pattern.yaml", kBadPattern}})}, {}, "",
                               CatalogPolicy{OnLoadError::stop, /*compile=*/false});
  CHECK(c.ok());  // the bad pattern is found only by compiling
  CHECK_FALSE(c.compiled);
  REQUIRE(c.rules().rules.size() == 1);
  CHECK(c.rules().rules[0].id == "bad-pattern");
}

TEST_CASE("no paths means the shipped catalog", "[catalog]") {
  Catalog c = load_and_compile({}, {}, "", CatalogPolicy{OnLoadError::stop, /*compile=*/false});
  CHECK(c.ok());
  CHECK(c.rules().rules.size() > 10);
}
