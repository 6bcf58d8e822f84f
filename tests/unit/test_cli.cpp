// The one command-line parser: both value spellings, repeatable and typed flags, positionals with '-', unknown
// flags rejected, usage generated from the table.
#include <catch2/catch.hpp>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "faultline/decode.hpp"

using faultline::ContainerFormat;
using faultline::app::Args;
using faultline::app::cli::Parser;

namespace {

std::optional<int> read_int(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  return std::stoi(std::string(text));
}

// A table shaped like `run`'s: repeatable --source, typed --format, an aliased --config, a switch.
struct RunLike {
  std::vector<std::string> sources, webhooks, positionals;
  std::string config, listen;
  std::optional<ContainerFormat> format;
  int reps = 1;
  bool check = false;
  Parser cli{"run", "Follows logs."};

  RunLike() {
    cli.option("--config", "FILE", config, "YAML config").alias("-c");
    cli.option("--source", "GLOB", sources, "a file or glob to follow (repeatable)");
    cli.option("--listen", "ADDR", listen, "HTTP host:port");
    cli.option("--webhook", "URL", webhooks, "also POST every incident to URL (repeatable)");
    cli.option("--format", "F", format, faultline::parse_container_format, "auto, raw, cri or docker", "format");
    cli.option("--reps", "N", reps, read_int, "a whole number", "repetitions");
    cli.flag("--check-config", check, "validate, then exit");
    cli.positionals("FILE|-", positionals);
  }
};

}  // namespace

TEST_CASE("a value is taken as the next argument or after an equals sign", "[cli]") {
  RunLike r;
  auto parsed = r.cli.parse({"--config", "a.yaml", "--listen=127.0.0.1:9", "--format=cri", "--reps", "3"});
  REQUIRE(parsed.ok());
  CHECK(r.config == "a.yaml");
  CHECK(r.listen == "127.0.0.1:9");
  CHECK(r.format == ContainerFormat::cri);
  CHECK(r.reps == 3);
}

TEST_CASE("a repeatable flag keeps every value in order; another keeps the last", "[cli]") {
  RunLike r;
  REQUIRE(r.cli.parse({"--source", "/a/*.log", "--webhook=http://x", "--source=/b.log", "--listen", "1", "--listen", "2"})
              .ok());
  CHECK(r.sources == std::vector<std::string>{"/a/*.log", "/b.log"});
  CHECK(r.webhooks == std::vector<std::string>{"http://x"});
  CHECK(r.listen == "2");
}

TEST_CASE("positional arguments keep their order; '-' is one, and '--' ends the flags", "[cli]") {
  RunLike r;
  REQUIRE(r.cli.parse({"x.log", "-", "--check-config", "y.log", "--", "--not-a-flag"}).ok());
  CHECK(r.positionals == std::vector<std::string>{"x.log", "-", "y.log", "--not-a-flag"});
  CHECK(r.check);
}

TEST_CASE("an alias is the same flag", "[cli]") {
  RunLike r;
  REQUIRE(r.cli.parse({"-c", "b.yaml"}).ok());
  CHECK(r.config == "b.yaml");
}

TEST_CASE("an unknown flag is an error naming it, never a path", "[cli]") {
  RunLike r;
  auto parsed = r.cli.parse({"x.log", "--markdwn"});
  REQUIRE(parsed.problem);
  CHECK(parsed.problem->message == "unknown flag '--markdwn'");
  CHECK(parsed.problem->pos.file == "faultline run");
  CHECK(parsed.problem->pos.column == 2);  // the second argument
  CHECK(r.positionals == std::vector<std::string>{"x.log"});

  auto with_value = r.cli.parse({"--colour=yes"});
  REQUIRE(with_value.problem);
  CHECK(with_value.problem->message == "unknown flag '--colour'");
}

TEST_CASE("a typed value that does not read is an error saying what was expected", "[cli]") {
  RunLike r;
  auto parsed = r.cli.parse({"--format", "json"});
  REQUIRE(parsed.problem);
  CHECK(parsed.problem->message == "--format: expected auto, raw, cri or docker, got 'json'");
  CHECK_FALSE(r.format);
  auto reps = r.cli.parse({"--reps=many"});
  REQUIRE(reps.problem);
  CHECK(reps.problem->message == "--reps: expected a whole number, got 'many'");
}

TEST_CASE("a missing value, a value given to a switch and a stray positional are errors", "[cli]") {
  RunLike r;
  auto missing = r.cli.parse({"--source"});
  REQUIRE(missing.problem);
  CHECK(missing.problem->message == "--source needs a value (GLOB)");
  auto switch_value = r.cli.parse({"--check-config=yes"});
  REQUIRE(switch_value.problem);
  CHECK(switch_value.problem->message == "--check-config takes no value");

  bool json = false;
  Parser no_positionals("version", "");
  no_positionals.flag("--json", json, "");
  auto stray = no_positionals.parse({"extra"});
  REQUIRE(stray.problem);
  CHECK(stray.problem->message == "unexpected argument 'extra'");
}

TEST_CASE("--help asks for the usage, which is generated from the table", "[cli]") {
  RunLike r;
  CHECK(r.cli.parse({"--source", "a", "-h"}).help);
  CHECK(r.cli.parse({"--help"}).help);
  const std::string usage = r.cli.usage();
  CHECK(usage.rfind("usage: faultline run [--config FILE] [--source GLOB]... ", 0) == 0);
  CHECK(usage.find("[FILE|-]...") != std::string::npos);
  CHECK(usage.find("\nFollows logs.\n") != std::string::npos);
  CHECK(usage.find("  -c, --config FILE  YAML config\n") != std::string::npos);
  CHECK(usage.find("  --check-config     validate, then exit\n") != std::string::npos);
  CHECK(usage.find("  -h, --help         this text\n") != std::string::npos);
  for (std::size_t start = 0, end; (end = usage.find('\n', start)) != std::string::npos; start = end + 1) {
    CHECK(end - start <= 118);
  }
}

TEST_CASE("handle() prints the usage for --help and a problem with a pointer to --help", "[cli]") {
  RunLike r;
  std::ostringstream out, err;
  CHECK(r.cli.handle({"--help"}, out, err) == 0);
  CHECK(out.str() == r.cli.usage());
  CHECK(err.str().empty());

  std::ostringstream out2, err2;
  CHECK(r.cli.handle({"--nope"}, out2, err2) == 2);
  CHECK(out2.str().empty());
  CHECK(err2.str() == "faultline run: unknown flag '--nope' ('faultline run --help' lists the flags)\n");

  std::ostringstream out3, err3;
  CHECK_FALSE(r.cli.handle({"a.log"}, out3, err3));
}
