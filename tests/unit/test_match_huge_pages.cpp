// The matcher with its databases on huge pages (place_databases_on_huge_pages), as `scan` runs it. A process of its
// own: the allocator is the process's from its first database on, so that every database here is had and freed
// through it -- a small one (from malloc) and the shipped catalog's (from a huge-page mapping), compiled and loaded
// from the cache.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>

#include "faultline/match.hpp"
#include "support.hpp"

using namespace faultline;
using namespace faultline::testing;

namespace {

RecordBatch batch_of(const std::vector<std::string>& lines) {
  RecordBatch b;
  std::uint64_t n = 0;
  for (const auto& text : lines) {
    RecordMeta m;
    m.line = ++n;
    m.level = Level::error;
    b.append(m, text);
  }
  return b;
}

const char* const kFmha =
    "RuntimeError: Error in function 'TllmGenFmhaRunner' at /opt/flashinfer/include/flashinfer/trtllm/fmha/"
    "fmhaRunner.cuh:37: Unsupported architecture";

}  // namespace

TEST_CASE("databases on huge pages compile, load from the cache, scan and are freed", "[match][huge-pages]") {
  place_databases_on_huge_pages();
  place_databases_on_huge_pages();  // a second call changes nothing
  const auto dir = std::filesystem::temp_directory_path() / ("faultline-huge-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);

  SECTION("a small database (from malloc)") {
    const char* yaml = R"(
rules:
  - id: small
    title: t
    severity: info
    events:
      e: 'first (?P<what>\w+) second'
)";
    for (int round = 0; round < 3; ++round) {
      auto compiled = compile_rules(load_rules_from_string(yaml, "r.yaml").rules, CompileOptions{dir.string()});
      REQUIRE(compiled.rules);
      CHECK(compiled.info.from_cache == (round > 0));
      CHECK(compiled.info.database_bytes < (std::size_t{256} << 10));
      Scanner scanner(compiled.rules);
      std::vector<Hit> hits;
      scanner.scan(batch_of({"noise", "first big second"}), hits);
      REQUIRE(hits.size() == 1);
      CHECK(hits[0].record == 1);
      CHECK(*find_field(hits[0].fields, "what") == "big");
    }
  }

  SECTION("the shipped catalog's database (from a huge-page mapping)") {
    for (int round = 0; round < 3; ++round) {
      LoadResult loaded = load_rules({default_rules_dir()}, LoadOptions{false, true, dir.string()});
      REQUIRE(loaded.ok());
      auto compiled = compile_rules(std::move(loaded.rules), CompileOptions{dir.string()});
      REQUIRE(compiled.rules);
      CHECK(compiled.info.from_cache == (round > 0));
      CHECK(compiled.info.database_bytes >= (std::size_t{256} << 10));
      Scanner scanner(compiled.rules);
      std::vector<Hit> hits;
      std::vector<AnchorHit> anchors;
      scanner.scan(batch_of({"INFO 11-29 10:08:01 [core.py:12] Model init total -- 21.36s", kFmha}), hits, anchors);
      bool fmha = false;
      for (const auto& h : hits) fmha = fmha || compiled.rules->rule(h.event.rule).id.find("fmha") != std::string::npos;
      CHECK(fmha);
      CHECK_FALSE(anchors.empty());  // "RuntimeError: " ends a story
    }
  }
  std::filesystem::remove_all(dir);
}
