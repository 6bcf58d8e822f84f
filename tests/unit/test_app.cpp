// The command line's pieces: the input reader (mapped regular files a window at a time, pipes read into a buffer,
// files that shrink while being read end early instead of faulting) and the rule-test engine.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "app/input.hpp"
#include "app/rule_tests.hpp"
#include "support.hpp"

using faultline::app::ScanInput;

namespace {

std::string temp_file(const std::string& name, const std::string& content) {
  auto dir = std::filesystem::temp_directory_path() / ("faultline-app-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::string read_all(ScanInput& in, std::size_t* pieces = nullptr) {
  std::string out;
  std::string_view piece;
  std::size_t n = 0;
  while (in.next(piece)) {
    out.append(piece);
    ++n;
  }
  if (pieces != nullptr) *pieces = n;
  return out;
}

}  // namespace

TEST_CASE("a regular file is mapped a window at a time and read whole", "[app]") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::string content;
  for (int i = 0; content.size() < 5 * page + 123; ++i) content += "INFO line " + std::to_string(i) + "\n";
  const auto path = temp_file("mapped.log", content);
  ScanInput in(path, 2 * page);
  REQUIRE(in.ok());
  CHECK(in.mapped());
  std::size_t pieces = 0;
  CHECK(read_all(in, &pieces) == content);
  CHECK(pieces == 3);  // 2 + 2 + 1.x pages
  CHECK(in.ok());
}

TEST_CASE("a file that shrinks after it was opened ends early, without a fault", "[app]") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::string content(8 * page, 'x');
  const auto path = temp_file("shrinks.log", content);
  ScanInput in(path, 2 * page);
  std::string_view piece;
  REQUIRE(in.next(piece));
  CHECK(piece.size() == 2 * page);
  // copytruncate-style: another process truncates it to 3 pages.
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(3 * page)) == 0);
  std::string rest;
  while (in.next(piece)) rest.append(piece);
  CHECK(rest.size() == page);
  CHECK(in.ok());
}

TEST_CASE("standard input and pipes are read, not mapped; empty and missing files", "[app]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string text = "one\ntwo\n";
  REQUIRE(::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  const int saved = ::dup(STDIN_FILENO);
  REQUIRE(::dup2(fds[0], STDIN_FILENO) >= 0);
  ::close(fds[0]);
  {
    ScanInput in("-");
    CHECK_FALSE(in.mapped());
    CHECK(read_all(in) == text);
    CHECK(in.ok());
  }
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);

  ScanInput empty(temp_file("empty.log", ""));
  CHECK(empty.ok());
  CHECK(read_all(empty).empty());

  ScanInput missing("/nonexistent/faultline.log");
  CHECK_FALSE(missing.ok());
  CHECK(missing.error().find("No such file") != std::string::npos);
  std::string_view piece;
  CHECK_FALSE(missing.next(piece));
}

TEST_CASE("a rule test replays its lines on a virtual clock and compares the incidents it expects", "[app]") {
  auto compiled = faultline::testing::compile_yaml(R"(
id: never-ready
title: server never became ready
severity: warning
events:
  start: 'Starting server'
  ready: 'Application startup complete'
sequence:
  - event: start
  - absent: ready
    for: 10m
tests:
  - name: fires once the window has passed
    lines:
      - "2026-01-01T00:00:00Z Starting server"
    advance: 11m
    expect:
      - severity: warning
  - name: expects the wrong severity
    lines:
      - "2026-01-01T00:00:00Z Starting server"
      - after: 11m
        text: "2026-01-01T00:11:00Z still starting"
    expect:
      - severity: critical
)");
  const auto& tests = compiled->rule_set().rules[0].tests;
  REQUIRE(tests.size() == 2);
  CHECK(faultline::app::replay_test(compiled, tests[0], "").size() == 1);
  CHECK(faultline::app::replay_test(compiled, tests[1], "").size() == 1);  // `after:` ran the clock past the window

  std::ostringstream out;
  auto summary = faultline::app::run_rule_tests(compiled, out, /*verbose=*/true);
  CHECK(summary.passed == 1);
  CHECK(summary.failed == 1);
  CHECK(out.str().find("ok   never-ready: fires once the window has passed\n") != std::string::npos);
  CHECK(out.str().find("FAIL never-ready: expects the wrong severity") != std::string::npos);
  CHECK(out.str().find("rule never-ready incident 1: severity differs") != std::string::npos);
}
