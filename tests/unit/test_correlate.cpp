// The correlator through the real pipeline: ordered steps, windows, counts, absence, tolerance, resets, lifetimes,
// early warnings, repeats, keys, checkpoints and determinism. Root causes and cascades: test_correlate_causes.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "faultline/correlate.hpp"
#include "support.hpp"

using namespace faultline;
using namespace faultline::testing;

namespace {

const char* kTwoStep = R"(
id: two-step
title: "A then B on {where|somewhere}"
severity: critical
events:
  a: 'alpha happened(?: at (?P<where>\w+))?'
  b: 'beta failed'
sequence:
  - event: a
  - event: b
    within: 1m
)";

}  // namespace

TEST_CASE("steps complete in order and fire once", "[correlate]") {
  Harness h(compile_yaml(kTwoStep));
  h.lines({ts(0, "INFO alpha happened at gpu0"), ts(1, "noise"), ts(5, "ERROR beta failed")});
  auto inc = h.of("two-step");
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].severity == Severity::critical);
  CHECK(inc[0].status == IncidentStatus::firing);
  CHECK(inc[0].title == "A then B on gpu0");
  CHECK(*find_field(inc[0].fields, "where") == "gpu0");
  CHECK(inc[0].revision == 1);
  CHECK(inc[0].evidence.size() >= 2);
  CHECK(inc[0].first_seen == at(0));
}

TEST_CASE("out of order without tolerance does not fire", "[correlate]") {
  Harness h(compile_yaml(kTwoStep));
  h.lines({ts(0, "ERROR beta failed"), ts(1, "INFO alpha happened")});
  CHECK(h.of("two-step").empty());
}

TEST_CASE("tolerance takes a slightly early line as in order", "[correlate]") {
  std::string yaml = std::string(kTwoStep) + "tolerance: {lines: 3, time: 5s}\n";
  SECTION("within tolerance") {
    Harness h(compile_yaml(yaml));
    h.lines({ts(0, "ERROR beta failed"), ts(1, "INFO alpha happened")});
    CHECK(h.of("two-step").size() == 1);
  }
  SECTION("too many lines apart") {
    Harness h(compile_yaml(yaml));
    h.lines({ts(0, "ERROR beta failed"), ts(0, "x"), ts(0, "y"), ts(0, "z"), ts(0, "w"), ts(1, "INFO alpha happened")});
    CHECK(h.of("two-step").empty());
  }
  SECTION("too far apart in time") {
    Harness h(compile_yaml(yaml));
    h.lines({ts(0, "ERROR beta failed"), ts(30, "INFO alpha happened")});
    CHECK(h.of("two-step").empty());
  }
}

TEST_CASE("an early hit further behind than the tolerance is forgotten, and --explain says so once", "[correlate]") {
  Harness h(compile_yaml(std::string(kTwoStep) + "tolerance: {lines: 3, time: 5s}\n"));
  std::vector<std::string> trace;
  h.pipeline.set_trace([&](const std::string& t) { trace.push_back(t); });
  // Line 1 is 5 lines behind line 6, the next early hit: no completion can take it any more. Line 6 pairs with 7.
  h.lines({ts(0, "ERROR beta failed"), ts(0, "x"), ts(0, "y"), ts(0, "z"), ts(0, "w"), ts(1, "ERROR beta failed"),
           ts(1, "INFO alpha happened")});
  CHECK(h.of("two-step").size() == 1);
  auto said = [&](const std::string& what) {
    return std::count_if(trace.begin(), trace.end(), [&](const std::string& t) { return t.find(what) != t.npos; });
  };
  CHECK(said("line 1: two-step/b matched, not counted: it waited in [pod-a] for an earlier step, which did not "
             "complete within the rule's tolerance (lines: 3, time: 5s)") == 1);
  CHECK(said("line 1: two-step/b matched, not counted: 6 lines") == 0);
  CHECK(said("line 6: two-step/b matched, not counted") == 0);
}

TEST_CASE("a marker only optional steps list does not wait as an early hit, nor push out one that does",
          "[correlate]") {
  Harness h(compile_yaml(R"(
id: phased
title: "B after A"
severity: critical
events:
  phase: 'Capturing CUDA graphs'
  a: 'alpha happened'
  b: 'beta failed'
sequence:
  - event: phase
    optional: true
  - event: a
  - event: b
tolerance: {time: 5s}
)"));
  std::vector<std::string> trace;
  h.pipeline.set_trace([&](const std::string& t) { trace.push_back(t); });
  // b comes early; 40 progress lines follow (more than an early hit memory holds), then a: b counts after it.
  std::vector<std::string> lines{ts(0, "ERROR beta failed")};
  for (int i = 0; i < 40; ++i) lines.push_back(ts(0, "Capturing CUDA graphs: " + std::to_string(i) + "%"));
  lines.push_back(ts(1, "INFO alpha happened"));
  h.lines(lines);
  auto inc = h.of("phased");
  REQUIRE(inc.size() == 1);
  auto said = [&](const std::string& what) {
    return std::count_if(trace.begin(), trace.end(), [&](const std::string& t) { return t.find(what) != t.npos; });
  };
  CHECK(said("phased/phase matched, not counted") == 0);
  CHECK(said("phased/phase matched, dropped") == 0);
  CHECK(said("earlier hit of b at line 1 taken as in order") == 1);
}

TEST_CASE("a step window that passes expires the story", "[correlate]") {
  Harness h(compile_yaml(kTwoStep));
  h.lines({ts(0, "alpha happened"), ts(120, "beta failed")});
  CHECK(h.of("two-step").empty());
  h.lines({ts(130, "alpha happened"), ts(140, "beta failed")});
  CHECK(h.of("two-step").size() == 1);
}

TEST_CASE("count within a window", "[correlate]") {
  auto rules = compile_yaml(R"(
id: bursts
title: burst
severity: warning
events:
  e: 'Failed to initialize the TMA descriptor (?P<code>\d+)'
sequence:
  - event: e
    count: 3
    within: 10s
)");
  SECTION("three inside the window") {
    Harness h(rules);
    h.lines({ts(0, "Error: Failed to initialize the TMA descriptor 715"), ts(2, "Error: Failed to initialize the TMA descriptor 715"),
             ts(4, "Error: Failed to initialize the TMA descriptor 999")});
    auto inc = h.of("bursts");
    REQUIRE(inc.size() == 1);
    CHECK(*find_field(inc[0].fields, "code") == "999");
  }
  SECTION("spread out") {
    Harness h(rules);
    h.lines({ts(0, "Error: Failed to initialize the TMA descriptor 715"), ts(20, "Error: Failed to initialize the TMA descriptor 715"),
             ts(40, "Error: Failed to initialize the TMA descriptor 715")});
    CHECK(h.of("bursts").empty());
  }
  SECTION("a window that slides over many hits fires at the first three inside it") {
    // One every 6 s for 10 minutes: never three within 10 s (the step's times are dropped as the window slides on).
    Harness h(rules);
    for (int i = 0; i < 100; ++i) {
      h.line(ts(6 * i, "Error: Failed to initialize the TMA descriptor " + std::to_string(i)));
    }
    CHECK(h.of("bursts").empty());
    h.lines({ts(600, "Error: Failed to initialize the TMA descriptor 600"),
             ts(601, "Error: Failed to initialize the TMA descriptor 601")});
    auto inc = h.of("bursts");
    REQUIRE(inc.size() == 1);
    CHECK(*find_field(inc[0].fields, "code") == "601");
  }
}

TEST_CASE("absence fires when the awaited line never comes", "[correlate]") {
  auto rules = compile_yaml(kNeverReadyRule);
  SECTION("no ready line") {
    Harness h(rules);
    h.line(ts(0, "Starting server"));
    h.pipeline.advance(at(300));
    CHECK(h.of("never-ready").empty());
    h.pipeline.advance(at(601));
    auto inc = h.of("never-ready");
    REQUIRE(inc.size() == 1);
    CHECK(inc[0].last_seen == at(600));
  }
  SECTION("ready arrives") {
    Harness h(rules);
    h.lines({ts(0, "Starting server"), ts(200, "Application startup complete")});
    h.pipeline.advance(at(1200));
    CHECK(h.of("never-ready").empty());
  }
}

TEST_CASE("a stream that ended lets go of what only its own lines could move on, and of nothing else",
          "[correlate]") {
  DecodeOptions raw;
  raw.format = ContainerFormat::raw;
  SECTION("a partial sequence is dropped: a later stream of the same name starts afresh, the checkpoint forgets it") {
    auto rules = compile_yaml(kTwoStep);
    {
      // Not ended: the sequence goes on in a later stream of the same logical name.
      Harness h(rules);
      h.line(ts(0, "alpha happened"));
      const std::uint32_t again = h.replay.add_stream(h.identity, raw);
      h.replay.line(again, ts(10, "beta failed"));
      CHECK(h.of("two-step").size() == 1);
    }
    Harness h(rules);
    h.line(ts(0, "alpha happened"));
    const std::string before = h.pipeline.save_state();
    h.pipeline.end_stream(h.stream);
    const std::string after = h.pipeline.save_state();
    CHECK(before.find("alpha happened") != std::string::npos);
    CHECK(after.find("alpha happened") == std::string::npos);  // its story
    CHECK(before.find("\"pod-a\"") != std::string::npos);
    CHECK(after.find("\"pod-a\"") == std::string::npos);  // its clock: nothing runs on it any more
    const std::uint32_t again = h.replay.add_stream(h.identity, raw);
    h.replay.line(again, ts(10, "beta failed"));
    CHECK(h.of("two-step").empty());
  }
  SECTION("a story waiting out an absence still completes") {
    Harness h(compile_yaml(kNeverReadyRule));
    h.line(ts(0, "Starting server"));
    h.pipeline.end_stream(h.stream);
    h.pipeline.advance(at(601));
    CHECK(h.of("never-ready").size() == 1);
  }
  SECTION("an open incident still goes quiet and resolves, and its clock is checkpointed until then") {
    Harness h(compile_yaml(R"(
id: flappy
title: flappy
severity: warning
events: {bad: 'link down'}
lifetime: {quiet: 5m}
)"));
    h.line(ts(0, "link down"));
    h.pipeline.end_stream(h.stream);
    CHECK(h.pipeline.save_state().find("\"s\":\"pod-a\"") != std::string::npos);
    h.pipeline.advance(at(301));
    REQUIRE(h.emitted.size() == 2);
    CHECK(h.emitted[1].status == IncidentStatus::resolved);
  }
}

TEST_CASE("reset_on clears partial progress", "[correlate]") {
  std::string yaml = std::string(kTwoStep) + "reset_on: [restart]\n";
  yaml.insert(yaml.find("sequence:"), "  restart: 'Server restarting'\n");
  Harness h(compile_yaml(yaml));
  h.lines({ts(0, "alpha happened"), ts(1, "Server restarting"), ts(2, "beta failed")});
  CHECK(h.of("two-step").empty());
}

TEST_CASE("early warning escalates as a revision of the same incident", "[correlate]") {
  Harness h(compile_yaml(kStagedRule));
  h.line(ts(0, "Skipping tactic 3"));
  REQUIRE(h.emitted.size() == 1);
  CHECK(h.emitted[0].severity == Severity::warning);
  h.line(ts(5, "Assertion failed: boom"));
  REQUIRE(h.emitted.size() == 2);
  CHECK(h.emitted[1].severity == Severity::critical);
  CHECK(h.emitted[1].id == h.emitted[0].id);
  CHECK(h.emitted[1].revision == 2);
  CHECK(h.emitted[1].count == 1);
}

TEST_CASE("repeats count on the open incident; a crash printing its error twice is one occurrence", "[correlate]") {
  std::string yaml = std::string(kTwoStep) + "reset_on: [restart]\n";
  yaml.insert(yaml.find("sequence:"), "  restart: 'Server restarting'\n");
  Harness h(compile_yaml(yaml));
  h.lines({ts(0, "alpha happened"), ts(1, "beta failed")});
  h.lines({ts(2, "alpha happened"), ts(3, "beta failed")});  // same crash, printed again
  REQUIRE(h.of("two-step").size() == 1);
  h.lines({ts(100, "Server restarting"), ts(110, "alpha happened"), ts(115, "beta failed")});
  auto inc = h.of("two-step");
  REQUIRE(inc.size() == 2);
  CHECK(inc[1].id == inc[0].id);
  CHECK(inc[1].count == 2);
  CHECK(inc[1].revision == 2);
}

TEST_CASE("an incident resolves after its quiet period or on resolve_on", "[correlate]") {
  auto yaml = std::string(R"(
id: flappy
title: flappy
severity: warning
events:
  bad: 'link down'
  good: 'link up'
sequence:
  - bad
lifetime: {quiet: 5m, resolve_on: [good]}
)");
  SECTION("quiet") {
    Harness h(compile_yaml(yaml));
    h.line(ts(0, "link down"));
    h.pipeline.advance(at(200));
    CHECK(h.emitted.size() == 1);
    h.pipeline.advance(at(301));
    REQUIRE(h.emitted.size() == 2);
    CHECK(h.emitted[1].status == IncidentStatus::resolved);
    CHECK(h.emitted[1].revision == 2);
  }
  SECTION("resolve_on") {
    Harness h(compile_yaml(yaml));
    h.lines({ts(0, "link down"), ts(10, "link up")});
    REQUIRE(h.emitted.size() == 2);
    CHECK(h.emitted[1].status == IncidentStatus::resolved);
    h.line(ts(20, "link down"));
    REQUIRE(h.emitted.size() == 3);
    CHECK(h.emitted[2].id != h.emitted[0].id);  // a new incident after resolution
  }
  SECTION("quiet, counted from the same failure printed again") {
    // The second line is the same occurrence (within a minute): no revision, but the incident was seen then.
    Harness h(compile_yaml(yaml));
    h.lines({ts(0, "link down"), ts(30, "link down")});
    REQUIRE(h.emitted.size() == 1);
    h.pipeline.advance(at(301));
    CHECK(h.emitted.size() == 1);
    h.pipeline.advance(at(331));
    REQUIRE(h.emitted.size() == 2);
    CHECK(h.emitted[1].status == IncidentStatus::resolved);
    CHECK(h.emitted[1].last_seen == at(330));
  }
}

TEST_CASE("a captured field can separate state machines", "[correlate]") {
  Harness h(compile_yaml(R"(
id: per-rank
title: rank {rank} stuck
severity: warning
key: [stream, field:rank]
events:
  a: 'rank (?P<rank>\d+) entered barrier'
  b: 'rank (?P<rank>\d+) timed out'
sequence: [a, b]
)"));
  h.lines({ts(0, "rank 1 entered barrier"), ts(1, "rank 2 timed out")});
  CHECK(h.emitted.empty());
  h.line(ts(2, "rank 1 timed out"));
  REQUIRE(h.emitted.size() == 1);
  CHECK(h.emitted[0].title == "rank 1 stuck");
}

TEST_CASE("same input gives the same incidents however it is cut", "[correlate]") {
  auto rules = compile_yaml(std::string(kTwoStep) + "tolerance: {lines: 3, time: 5s}\n");
  std::string log;
  for (int i = 0; i < 200; ++i) log += ts(i, i % 50 == 7 ? "beta failed" : i % 50 == 8 ? "alpha happened at x" : "noise line " + std::to_string(i)) + "\n";
  auto run = [&](std::size_t piece) {
    std::vector<std::string> out;
    Pipeline p(rules, [&](const Incident& i) { out.push_back(to_json(i)); });
    StreamIdentity id;
    id.name = id.logical = id.instance = "s";
    DecodeOptions o;
    o.format = ContainerFormat::raw;
    auto s = p.add_stream(id, o);
    for (std::size_t i = 0; i < log.size(); i += piece) {
      p.feed(s, std::string_view(log).substr(i, piece), at(0));
      if (piece < 64) p.drain();
    }
    p.finish(at(0));
    return out;
  };
  auto whole = run(log.size());
  REQUIRE(!whole.empty());
  CHECK(run(1) == whole);
  CHECK(run(17) == whole);
  CHECK(run(4096) == whole);
}

TEST_CASE("in-flight state survives a checkpoint", "[correlate]") {
  auto rules = compile_yaml(kTwoStep);
  std::string state;
  {
    Harness h(rules);
    h.line(ts(0, "alpha happened at gpu3"));
    state = h.pipeline.save_state();
  }
  Harness h(rules);
  REQUIRE(h.pipeline.load_state(state).ok());
  h.line(ts(10, "beta failed"));
  auto inc = h.of("two-step");
  REQUIRE(inc.size() == 1);
  CHECK(*find_field(inc[0].fields, "where") == "gpu3");
  auto bad = h.pipeline.load_state("{not json");
  REQUIRE_FALSE(bad.ok());
  CHECK(!bad.error().message.empty());
}

TEST_CASE("a story begun again by the hit that found its window passed has seen that hit, and is checkpointed",
          "[correlate]") {
  // The OOM comes too late to be the second failure within a minute: the story starts over with it as its first
  // step. That story has seen an OOM (`after` asks), and it is in flight like any other: a checkpoint keeps it.
  auto rules = compile_yaml(R"(
id: fail-twice
title: t
severity: critical
events:
  crash: 'worker crashed'
  oom: 'out of memory'
  gave_up: 'giving up'
sequence:
  - any: [crash, oom]
  - {any: [crash, oom], within: 1m}
  - {event: gave_up, after: [oom]}
)");
  const std::vector<std::string> before = {ts(0, "worker crashed"), ts(120, "out of memory")};
  const std::vector<std::string> after = {ts(130, "worker crashed"), ts(131, "giving up")};
  {
    Harness h(rules);
    h.lines(before);
    h.lines(after);
    CHECK(h.of("fail-twice").size() == 1);
  }
  std::string state;
  {
    Harness h(rules);
    h.lines(before);
    CHECK(h.of("fail-twice").empty());
    state = h.pipeline.save_state();
  }
  Harness h(rules);
  REQUIRE(h.pipeline.load_state(state).ok());
  h.lines(after);
  CHECK(h.of("fail-twice").size() == 1);
}

TEST_CASE("ids are deterministic for the same lines", "[correlate]") {
  auto rules = compile_yaml(kTwoStep);
  Harness a(rules), b(rules);
  for (auto* h : {&a, &b}) h->lines({ts(0, "alpha happened"), ts(5, "beta failed")});
  REQUIRE(a.emitted.size() == 1);
  CHECK(a.emitted[0].id == b.emitted[0].id);
  Harness c(rules, "pod-other");
  c.lines({ts(0, "alpha happened"), ts(5, "beta failed")});
  CHECK(c.emitted[0].id != a.emitted[0].id);
}

TEST_CASE("a new instance starts a new story but keeps the incident", "[correlate]") {
  Harness h(compile_yaml(kTwoStep));
  h.line(ts(0, "alpha happened"));
  h.pipeline.new_instance(h.stream, h.instance("pod-a#1"));
  h.line(ts(5, "beta failed"));
  CHECK(h.emitted.empty());
  h.lines({ts(10, "alpha happened"), ts(12, "beta failed")});
  REQUIRE(h.emitted.size() == 1);
  h.pipeline.new_instance(h.stream, h.instance("pod-a#2"));
  h.lines({ts(20, "alpha happened"), ts(22, "beta failed")});
  REQUIRE(h.emitted.size() == 2);
  CHECK(h.emitted[1].id == h.emitted[0].id);
  CHECK(h.emitted[1].count == 2);
}
