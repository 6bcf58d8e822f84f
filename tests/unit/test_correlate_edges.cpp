// The correlator at its edges: rules with more events than a machine word has bits, checkpoints of such stories,
// the clock incidents are stamped with, restore errors, and the streams' bounded event clocks (a far-future line,
// time going back, one stream's time never gating another's deadlines, node clocks, holds bounded by wall time).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>

#include "faultline/clock.hpp"
#include "correlate/evidence.hpp"
#include "faultline/correlate.hpp"
#include "support.hpp"

using namespace faultline;
using namespace faultline::testing;

namespace {

// 70 events e0..e69 and a `done` event that counts only once e65 was seen.
std::string many_events_rule() {
  std::string yaml = "id: many-events\ntitle: many events\nseverity: warning\nevents:\n";
  for (int i = 0; i < 70; ++i) yaml += "  e" + std::to_string(i) + ": 'token-e" + std::to_string(i) + " seen'\n";
  yaml += "  done: 'finally done'\nsequence:\n  - event: done\n    after: [e65]\n";
  return yaml;
}

}  // namespace

TEST_CASE("a rule with more than 64 events tells every event apart in `after`", "[correlate]") {
  auto rules = compile_yaml(many_events_rule());
  const Rule& r = rules->rule(0);
  // e1 and e65 are the pair a 64-bit mask of seen events would confuse.
  REQUIRE(r.event_index("e1") % 64 == r.event_index("e65") % 64);
  Harness h(rules);
  h.lines({ts(0, "token-e1 seen"), ts(1, "finally done")});
  CHECK(h.of("many-events").empty());
  h.lines({ts(2, "token-e65 seen"), ts(3, "finally done")});
  CHECK(h.of("many-events").size() == 1);
}

TEST_CASE("a checkpoint keeps the events past the 64th that a story has seen", "[correlate]") {
  auto rules = compile_yaml(many_events_rule());
  std::string seen_e65, seen_e1;
  {
    Harness h(rules);
    h.line(ts(0, "token-e65 seen"));
    seen_e65 = h.pipeline.save_state();
  }
  {
    Harness h(rules);
    h.line(ts(0, "token-e1 seen"));
    seen_e1 = h.pipeline.save_state();
  }
  CHECK(seen_e65.find("\"seen_more\"") != std::string::npos);
  CHECK(seen_e1.find("\"seen_more\"") == std::string::npos);  // the format older builds read, unchanged
  SECTION("e65 seen before the restart") {
    Harness h(rules);
    REQUIRE(h.pipeline.load_state(seen_e65).ok());
    h.line(ts(5, "finally done"));
    CHECK(h.of("many-events").size() == 1);
  }
  SECTION("only e1 seen before the restart") {
    Harness h(rules);
    REQUIRE(h.pipeline.load_state(seen_e1).ok());
    h.line(ts(5, "finally done"));
    CHECK(h.of("many-events").empty());
  }
}

TEST_CASE("incidents are stamped with the read time of the injected clock", "[correlate]") {
  ManualClock clock;
  clock.advance(std::chrono::seconds(42));
  PipelineOptions options;
  options.correlator.clock = &clock;
  std::vector<Incident> emitted;
  Pipeline pipeline(compile_yaml("id: one\ntitle: one\nseverity: critical\nevents:\n  a: 'it broke'\n"),
                    [&](const Incident& i) { emitted.push_back(i); }, options);
  StreamIdentity id;
  id.name = id.logical = "pod-a";
  id.instance = "pod-a#0";
  DecodeOptions decode;
  decode.format = ContainerFormat::raw;
  decode.time.reference = at(0);
  std::uint32_t stream = pipeline.add_stream(id, decode);
  pipeline.feed(stream, ts(0, "ERROR it broke") + "\n", at(0));
  pipeline.drain();
  REQUIRE(emitted.size() == 1);
  CHECK(emitted[0].read_at == clock.steady());
}

TEST_CASE("a state from a newer build is refused with a reason", "[correlate]") {
  Harness h(compile_yaml(many_events_rule()));
  auto loaded = h.pipeline.load_state(R"({"version": 3, "stories": [], "open": []})");
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.error().message == "state version 3 is newer than this build");
}

namespace {

const char* kOom = R"(
id: oom
title: oom
severity: critical
events:
  e: 'CUDA out of memory'
lifetime: {quiet: 30m}
)";

// A pipeline over named streams (optionally on a node), raw format, every revision kept.
struct Multi {
  std::vector<Incident> out;
  Pipeline p;
  explicit Multi(std::shared_ptr<const CompiledRules> rules, PipelineOptions options = {})
      : p(std::move(rules), [this](const Incident& i) { out.push_back(i); }, options) {}
  std::uint32_t add(const std::string& name, const std::string& node = "") {
    StreamIdentity id;
    id.name = id.logical = id.instance = name;
    if (!node.empty()) id.labels = {{"node", node}};
    DecodeOptions o;
    o.format = ContainerFormat::raw;
    o.time.reference = at(0);
    return p.add_stream(id, o);
  }
  void line(std::uint32_t stream, const std::string& text, Time read_time = at(0)) {
    p.feed(stream, text + "\n", read_time);
    p.drain();
  }
  std::vector<Incident> of(const std::string& rule) const {
    std::vector<Incident> r;
    for (const auto& i : out) {
      if (i.rule == rule) r.push_back(i);
    }
    return r;
  }
  std::size_t resolved() const {
    std::size_t n = 0;
    for (const auto& i : out) n += i.status == IncidentStatus::resolved ? 1 : 0;
    return n;
  }
};

const char* kFarFuture = "2099-01-01T00:00:00.000Z INFO far future line";

}  // namespace

TEST_CASE("a far-future line in one stream resolves nothing anywhere", "[correlate][clock]") {
  Multi s(compile_yaml(kOom));
  auto a = s.add("streamA.log");
  auto b = s.add("streamB.log");
  s.line(a, ts(0, "ERROR torch.OutOfMemoryError: CUDA out of memory."));
  REQUIRE(s.of("oom").size() == 1);
  SECTION("in another stream") { s.line(b, kFarFuture); }
  SECTION("in the same stream") { s.line(a, kFarFuture); }
  CHECK(s.p.correlator_stats().times_rejected_future == 1);
  CHECK(s.p.now() < at(3600));  // no clock took the line's time
  s.p.advance(at(60));
  s.p.tick(SystemClock::instance().now());
  CHECK(s.resolved() == 0);
  // A later failure is a repeat of the open incident, not one resolved the moment it fires.
  s.line(a, ts(300, "ERROR torch.OutOfMemoryError: CUDA out of memory."));
  s.p.advance(at(301));
  CHECK(s.resolved() == 0);
  CHECK(s.out.back().count == 2);
  // The stream's own time still ends it.
  s.p.advance(at(300 + 1801));
  CHECK(s.resolved() == 1);
}

TEST_CASE("one stream's later time never resolves another stream's incident", "[correlate][clock]") {
  Multi s(compile_yaml(kOom));
  auto a = s.add("a.log");
  auto b = s.add("b.log");
  s.line(a, ts(0, "ERROR CUDA out of memory"));
  s.line(b, ts(7200, "INFO two hours later, in another file"));
  s.p.finish(at(0));
  REQUIRE(s.of("oom").size() == 1);
  CHECK(s.resolved() == 0);  // a.log shows nothing past its quiet time
}

TEST_CASE("a failure after the stream's time went back a day counts", "[correlate][clock]") {
  Multi s(compile_yaml(kOom));
  auto a = s.add("a.log");
  s.line(a, ts(86400, "ERROR CUDA out of memory"));
  s.line(a, ts(0, "ERROR CUDA out of memory"));
  s.line(a, ts(5, "ERROR CUDA out of memory"));
  auto inc = s.of("oom");
  REQUIRE(inc.size() == 2);
  CHECK(inc[0].count == 1);
  CHECK(inc[1].status == IncidentStatus::firing);
  CHECK(inc[1].count == 2);
  CHECK(inc[1].revision == 2);
  CHECK(inc[1].last_seen == at(0));
  CHECK(s.p.correlator_stats().times_went_back == 1);
  CHECK(s.p.now() == at(5));  // the stream's clock went back with it
}

TEST_CASE("a hold is released on its own stream's clock, not gated by a stream hours behind", "[correlate][clock]") {
  auto rules = compile_yaml(R"(
id: fmha
title: fmha
severity: critical
events:
  hint: 'TllmGenFmhaRunner'
  err: 'Unsupported architecture'
sequence:
  - event: hint
    optional: true
  - event: err
tolerance: {lines: 20, time: 5s}
)");
  Multi s(rules);
  auto worker = s.add("worker-stderr.log");
  auto vllm = s.add("vllm.log");
  const Time wall = at(100000);
  // vLLM logs local time 8 h behind; the worker prints no time at all (its lines take the time of reading).
  s.line(vllm, ts(100000 - 8 * 3600, "INFO vLLM API server version 0.19.0"), wall);
  s.line(worker, "RuntimeError: Error in function: Unsupported architecture", wall);
  CHECK(s.of("fmha").empty());  // held for the optional evidence
  s.p.tick(wall);
  s.p.tick(wall + std::chrono::seconds(3));
  CHECK(s.of("fmha").empty());
  s.p.tick(wall + std::chrono::seconds(6));
  REQUIRE(s.of("fmha").size() == 1);
}

TEST_CASE("live holds end on the steady clock when the stream's time stands still", "[correlate][clock]") {
  auto rules = compile_yaml(R"(
id: fmha
title: fmha
severity: critical
events:
  hint: 'TllmGenFmhaRunner'
  err: 'Unsupported architecture'
sequence:
  - event: hint
    optional: true
  - event: err
tolerance: {lines: 20, time: 5s}
)");
  ManualClock clock;
  clock.advance(std::chrono::seconds(1));
  PipelineOptions options;
  options.correlator.clock = &clock;
  SECTION("bounded by wall time (run)") {
    options.correlator.holds_bounded_by_wall = true;
    Multi s(rules, options);
    auto w = s.add("w.log");
    s.line(w, ts(0, "RuntimeError: Unsupported architecture"));
    s.p.advance(at(0));
    CHECK(s.of("fmha").empty());
    clock.advance(std::chrono::seconds(6));
    s.p.advance(at(0));  // event time has not moved
    CHECK(s.of("fmha").size() == 1);
  }
  SECTION("event time only (replay)") {
    Multi s(rules, options);
    auto w = s.add("w.log");
    s.line(w, ts(0, "RuntimeError: Unsupported architecture"));
    clock.advance(std::chrono::seconds(6));
    s.p.advance(at(0));
    CHECK(s.of("fmha").empty());
    s.p.release_held();
    CHECK(s.of("fmha").size() == 1);
  }
}

TEST_CASE("a node-keyed rule runs on its node's clock, the latest of its streams' bounded clocks", "[correlate][clock]") {
  auto rules = compile_yaml(R"(
id: xid
title: xid
severity: critical
key: [node]
events: {e: 'NVRM: Xid'}
lifetime: {quiet: 30m}
)");
  Multi s(rules);
  auto kmsg = s.add("kmsg", "gpu-7");
  auto pod = s.add("ns/a/c", "gpu-7");
  auto other = s.add("ns/b/c", "gpu-8");
  s.line(kmsg, ts(0, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."));
  REQUIRE(s.of("xid").size() == 1);
  s.line(pod, kFarFuture);
  s.line(other, ts(4000, "INFO a pod on another node"));
  s.p.advance(at(1));
  CHECK(s.resolved() == 0);
  s.line(pod, ts(2000, "INFO the node's pod, 2000 s later"));
  s.p.advance(at(1));
  CHECK(s.resolved() == 1);  // the node's time passed the quiet period, though the kernel log said nothing more
}

TEST_CASE("each stream's clock survives a checkpoint; a version 1 state is still read", "[correlate][clock]") {
  auto rules = compile_yaml(kOom);
  std::string state;
  {
    Multi s(rules);
    auto a = s.add("a.log");
    auto b = s.add("b.log");
    s.line(a, ts(0, "ERROR CUDA out of memory"));
    s.line(b, ts(7200, "INFO later"));
    state = s.p.save_state();
  }
  CHECK(state.find("\"version\":2") != std::string::npos);
  SECTION("version 2") {
    Multi s(rules);
    REQUIRE(s.p.load_state(state).ok());
    auto a = s.add("a.log");
    s.add("b.log");
    s.p.advance(at(1));
    CHECK(s.resolved() == 0);  // a.log's clock came back at 0, not at b.log's time
    s.line(a, ts(1900, "INFO a.log goes on"));
    s.p.advance(at(1));
    CHECK(s.resolved() == 1);
  }
  SECTION("version 1: one clock for every stream the state names") {
    Multi s(rules);
    const std::string v1 = R"({"version":1,"now":)" + std::to_string(at(1000).time_since_epoch().count()) +
                           R"(,"stories":[],"open":[]})";
    REQUIRE(s.p.load_state(v1).ok());
    s.add("a.log");
    CHECK(s.p.now() <= at(1000));
  }
}

TEST_CASE("every open incident survives a checkpoint, as it was, and resolves after the restart", "[correlate]") {
  // The open incidents are written as their own JSON, one after the other: three of them, in three streams, one
  // with a quote and a non-ASCII name in its evidence.
  auto rules = compile_yaml(kOom);
  std::string state;
  std::vector<Incident> before;
  {
    Multi s(rules);
    auto a = s.add("a.log");
    auto b = s.add("b \"quoted\".log");
    auto c = s.add("c-\xc3\xa9.log");
    s.line(a, ts(0, "ERROR CUDA out of memory"));
    s.line(b, ts(1, "ERROR CUDA out of memory \"on\" GPU 1"));
    s.line(c, ts(2, "ERROR CUDA out of memory on GPU \xc3\xa9"));
    REQUIRE(s.out.size() == 3);
    before = s.out;
    state = s.p.save_state();
  }
  Multi s(rules);
  REQUIRE(s.p.load_state(state).ok());
  auto a = s.add("a.log");
  auto b = s.add("b \"quoted\".log");
  auto c = s.add("c-\xc3\xa9.log");
  for (auto stream : {a, b, c}) s.line(stream, ts(1900, "INFO goes on"));
  s.p.advance(at(1));
  REQUIRE(s.resolved() == 3);
  for (const auto& open : before) {
    const auto same = std::find_if(s.out.begin(), s.out.end(), [&](const Incident& i) { return i.id == open.id; });
    REQUIRE(same != s.out.end());
    CHECK(same->evidence.front().text == open.evidence.front().text);
    CHECK(same->first_seen == open.first_seen);
  }
}

TEST_CASE("numeric state fields must be integers", "[correlate]") {
  Harness h(compile_yaml(kOom));
  for (const char* bad : {R"({"version": 1e300, "stories": [], "open": []})", R"({"version": 1.5})",
                          R"({"version": "1"})", R"({"version": -99999999999999999999})"}) {
    INFO(bad);
    auto loaded = h.pipeline.load_state(bad);
    CHECK_FALSE(loaded.ok());
  }
  // A story's "raised" (any integer field) beyond its type's range is an error, not undefined behaviour.
  Harness two(compile_yaml(R"(
id: two
title: two
severity: critical
events: {a: 'first thing', b: 'second thing'}
sequence: [a, b]
)"));
  two.line(ts(0, "first thing"));
  std::string story = two.pipeline.save_state();
  auto pos = story.find("\"raised\":-1");
  REQUIRE(pos != std::string::npos);
  story.replace(pos, std::string("\"raised\":-1").size(), "\"raised\":1e300");
  Harness three(compile_yaml(R"(
id: two
title: two
severity: critical
events: {a: 'first thing', b: 'second thing'}
sequence: [a, b]
)"));
  auto loaded = three.pipeline.load_state(story);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.error().message.find("raised") != std::string::npos);
}

TEST_CASE("the open incidents are bounded in bytes: the one due to go quiet soonest is resolved early", "[correlate]") {
  auto rules = compile_yaml(R"(
id: bus-gone
title: "GPU {gpu} fell off the bus"
severity: critical
events:
  gone: 'GPU (?P<gpu>\d+) has fallen off the bus'
sequence: [gone]
key: [stream, field:gpu]
lifetime: {quiet: 10m}
)");
  auto replay_with = [&](std::size_t max_bytes, std::vector<Incident>& out) {
    ReplayOptions o;
    o.start = at(0);
    o.on_incident = [&out](const Incident& i) { out.push_back(i); };
    o.pipeline.correlator.max_open_incident_bytes = max_bytes;
    o.pipeline.fingerprint.enabled = false;
    auto replay = std::make_unique<Replay>(rules, o);
    StreamIdentity id;
    id.name = id.logical = "pod-a";
    id.instance = "pod-a#0";
    DecodeOptions decode;
    decode.format = ContainerFormat::raw;
    auto s = replay->add_stream(id, decode);
    const std::string pad(1000, 'x');  // each incident holds ~1 KB of evidence
    for (int i = 0; i < 100; ++i) replay->line(s, ts(i, "GPU " + std::to_string(i) + " has fallen off the bus " + pad));
    return replay;
  };
  auto resolved = [](const std::vector<Incident>& out) {
    std::vector<std::string> gpus;
    for (const auto& i : out)
      if (i.status == IncidentStatus::resolved) gpus.push_back(*find_field(i.fields, "gpu"));
    return gpus;
  };

  SECTION("within the bound nothing resolves before its quiet period") {
    std::vector<Incident> out;
    auto replay = replay_with(CorrelatorOptions{}.max_open_incident_bytes, out);
    CHECK(out.size() == 100);
    CHECK(resolved(out).empty());
    CHECK(replay->pipeline().correlator_stats().incidents_resolved_early == 0);
  }
  SECTION("beyond it the oldest go first, each as a resolved revision, counted") {
    std::vector<Incident> out;
    auto replay = replay_with(64 * 1024, out);
    const auto gone = resolved(out);
    REQUIRE(gone.size() >= 30);
    CHECK(replay->pipeline().correlator_stats().incidents_resolved_early == gone.size());
    for (std::size_t k = 0; k < gone.size(); ++k) CHECK(gone[k] == std::to_string(k));
    // What stays open fits the bound: at least 1 KB of evidence each.
    CHECK((100 - gone.size()) * 1000 <= 64 * 1024);
    // An incident resolved early says when it was last seen, not when it was let go.
    for (const auto& i : out) {
      if (i.status == IncidentStatus::resolved) CHECK(i.last_seen == at(std::stoi(*find_field(i.fields, "gpu"))));
    }
  }
}

TEST_CASE("a stream's ring of last lines: newest first, the oldest's place taken once full, no memory while empty",
          "[correlate][ring]") {
  correlate::LineRing ring;
  CHECK(ring.empty());
  const auto put = [&](std::uint64_t line, std::string text) {
    correlate::ContextLine& slot = ring.push(3);
    slot.line = line;
    slot.text.assign(text);
  };
  const auto newest_first = [&] {
    std::vector<std::uint64_t> lines;
    for (std::size_t i = 0; i < ring.size(); ++i) lines.push_back(ring.from_newest(i).line);
    return lines;
  };
  put(1, "one");
  put(2, "two");
  CHECK(newest_first() == std::vector<std::uint64_t>{2, 1});
  put(3, "three");
  put(4, "four");  // full: line 1's place
  CHECK(ring.size() == 3);
  CHECK(newest_first() == std::vector<std::uint64_t>{4, 3, 2});
  CHECK(ring.newest().text == "four");
  for (std::uint64_t l = 5; l <= 11; ++l) put(l, "line " + std::to_string(l));  // around the ring more than twice
  CHECK(newest_first() == std::vector<std::uint64_t>{11, 10, 9});
  CHECK(ring.from_newest(2).text == "line 9");
  ring.clear();
  CHECK(ring.empty());
  put(20, "again");
  CHECK(newest_first() == std::vector<std::uint64_t>{20});
  ring.release();
  CHECK(ring.empty());
  CHECK(ring.size() == 0);
}

TEST_CASE("streams by name: the first stream of a name, found without a walk, kept right when a stream is renamed",
          "[correlate][streams]") {
  correlate::Streams streams;
  const auto named = [](std::string name) {
    StreamIdentity id;
    id.name = id.logical = id.instance = std::move(name);
    return id;
  };
  CHECK_FALSE(streams.find("a").has_value());
  streams.set_identity(2, named("a"));
  streams.set_identity(0, named("b"));
  streams.set_identity(1, named("a"));  // a second stream of that name, before the first one
  REQUIRE(streams.find("a").has_value());
  CHECK(*streams.find("a") == 1);
  CHECK(*streams.find("b") == 0);
  // Stream 1 takes another name: stream 2 is the first "a" again.
  streams.set_identity(1, named("c"));
  CHECK(*streams.find("a") == 2);
  CHECK(*streams.find("c") == 1);
  // Stream 2 renamed too: no "a" is left.
  streams.set_identity(2, named("d"));
  CHECK_FALSE(streams.find("a").has_value());
  // A checkpoint's stream is found, and added once.
  CHECK(streams.find_or_add("d") == 2);
  const auto added = streams.find_or_add("e");
  CHECK(added == 3);
  CHECK(streams.find_or_add("e") == added);
  CHECK(*streams.find("e") == added);
  // An ended stream keeps its name (its incidents still explain others).
  streams.end(0);
  CHECK(*streams.find("b") == 0);
}
