// The correlator at its edges: rules with more events than a machine word has bits, checkpoints of such stories,
// the clock incidents are stamped with, and restore errors.
#include <catch2/catch.hpp>

#include "faultline/clock.hpp"
#include "faultline/correlate.hpp"
#include "support.hpp"

using namespace faultline;
using namespace faultline::testing;

namespace {

std::string ts(int seconds, const std::string& msg) { return format_time(at(seconds)) + " " + msg; }

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
  auto loaded = h.pipeline.load_state(R"({"version": 2, "stories": [], "open": []})");
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.error().message == "state version 2 is newer than this build");
}
