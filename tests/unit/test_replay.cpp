// Replay: recorded input through the pipeline on a virtual clock; the latest revision of each incident, in order of
// first emission.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "faultline/replay.hpp"
#include "support.hpp"

using namespace faultline;
using namespace faultline::testing;

namespace {

std::string ts(int seconds, const std::string& msg) { return format_time(at(seconds)) + " " + msg; }

const char* kStaged = R"(
id: staged
title: staged
severity: critical
events:
  skip: 'Skipping tactic'
  fatal: 'Assertion failed: boom'
sequence:
  - event: skip
    optional: true
    severity: warning
  - event: fatal
)";

const char* kNeverReady = R"(
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
)";

StreamIdentity named(const std::string& name) {
  StreamIdentity id;
  id.name = id.logical = id.instance = name;
  return id;
}

DecodeOptions raw() {
  DecodeOptions d;
  d.format = ContainerFormat::raw;
  return d;
}

}  // namespace

TEST_CASE("a replay keeps the latest revision of each incident; the observer sees every one", "[replay]") {
  std::vector<Incident> seen;
  ReplayOptions options;
  options.start = at(0);
  options.on_incident = [&](const Incident& i) { seen.push_back(i); };
  Replay replay(compile_yaml(kStaged), std::move(options));
  auto s = replay.add_stream(named("pod"), raw());
  replay.line(s, ts(0, "Skipping tactic 3"));
  replay.line(s, ts(5, "Assertion failed: boom"));
  replay.finish();
  REQUIRE(seen.size() >= 2);
  REQUIRE(replay.incidents().size() == 1);
  const Incident& last = replay.incidents()[0];
  CHECK(last.id == seen.front().id);
  CHECK(last.revision == seen.back().revision);
  CHECK(last.severity == Severity::critical);
}

TEST_CASE("incidents are listed in order of first emission, across streams", "[replay]") {
  auto rules = compile_yaml(std::string(kStaged));
  Replay replay(rules, ReplayOptions{at(0), {}, {}});
  auto a = replay.add_stream(named("pod-a"), raw());
  auto b = replay.add_stream(named("pod-b"), raw());
  replay.line(b, ts(0, "Skipping tactic 1"));
  replay.line(a, ts(1, "Skipping tactic 2"));
  replay.line(b, ts(2, "Assertion failed: boom"));  // b's incident gets a new revision: it stays first
  replay.finish();
  REQUIRE(replay.incidents().size() == 2);
  CHECK(replay.incidents()[0].stream == "pod-b");
  CHECK(replay.incidents()[0].severity == Severity::critical);
  CHECK(replay.incidents()[1].stream == "pod-a");
}

TEST_CASE("after() runs the clock on from the lines' own time, so absences fire without a wall clock", "[replay]") {
  Replay replay(compile_yaml(kNeverReady), ReplayOptions{at(-3600), {}, {}});  // the clock: an hour before the lines
  auto s = replay.add_stream(named("pod"), raw());
  replay.line(s, ts(0, "Starting server"));
  replay.after(std::chrono::minutes(5));
  CHECK(replay.clock() == at(300));
  CHECK(replay.incidents().empty());
  replay.after(std::chrono::minutes(6));
  CHECK(replay.clock() == at(660));
  REQUIRE(replay.incidents().size() == 1);
  CHECK(replay.incidents()[0].rule == "never-ready");
}

TEST_CASE("before any line, after() runs on from the clock; advance() sets it", "[replay]") {
  Replay replay(compile_yaml(kNeverReady), ReplayOptions{at(0), {}, {}});
  replay.add_stream(named("pod"), raw());
  replay.after(std::chrono::seconds(30));
  CHECK(replay.clock() == at(30));
  replay.advance(at(100));
  CHECK(replay.clock() == at(100));
  CHECK(replay.pipeline().now() == at(100));
  replay.start(at(5));  // what is fed next was read at 5 s; the event clock stays
  CHECK(replay.clock() == at(5));
  CHECK(replay.pipeline().now() == at(100));
}

TEST_CASE("bytes are fed as they come; end_stream() turns a last line without newline into a record", "[replay]") {
  Replay replay(compile_yaml(kStaged), ReplayOptions{at(0), {}, {}});
  auto s = replay.add_stream(named("pod"), raw());
  const std::string text = ts(0, "Skipping tactic 3") + "\n" + ts(1, "Assertion fa");
  replay.feed(s, text);
  replay.feed(s, "iled: boom");
  CHECK(replay.pipeline().progress(s).has_partial);
  replay.end_stream(s);
  CHECK_FALSE(replay.pipeline().progress(s).has_partial);
  CHECK(replay.stats().lines == 2);
  replay.finish();
  REQUIRE(replay.incidents().size() == 1);
  CHECK(replay.incidents()[0].severity == Severity::critical);
}

TEST_CASE("a stream's dateless times are read against the clock when it is added", "[replay]") {
  // 2026-01-01 as the clock: a line printed as "01-01 00:00:05" (no year) is read in 2026.
  const Time clock = Time(std::chrono::seconds(1767225600));
  Replay replay(compile_yaml(kNeverReady), ReplayOptions{clock, {}, {}});
  auto s = replay.add_stream(named("pod"), raw());
  replay.line(s, "INFO 01-01 00:00:05 [api.py:1] Starting server");
  CHECK(replay.pipeline().now() == clock + std::chrono::seconds(5));
}
