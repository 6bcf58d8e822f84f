// The correlator's root causes through the real pipeline: a cascade pointing at the cause on its stream, node-keyed
// causes and what their attribution lets them explain (hardware faults, their families, the GPU they name), and
// cascades explained by an unclassified failure.
#include <catch2/catch.hpp>

#include <map>

#include "faultline/correlate.hpp"
#include "support.hpp"

using namespace faultline;
using namespace faultline::testing;

namespace {

// A failure no rule knows, as vLLM's EngineCore logs it at ERROR: a traceback raised in flux.py's `function`.
std::vector<std::string> flux_story(const std::string& function) {
  return {"(EngineCore_0 pid=88) ERROR 11-29 10:08:01 [core.py:866] Traceback (most recent call last):",
          "(EngineCore_0 pid=88) ERROR 11-29 10:08:01 [core.py:866]   File \"/x/flux.py\", line 3, in " + function,
          "(EngineCore_0 pid=88) ERROR 11-29 10:08:01 [core.py:866] RuntimeError: the flux capacitor is out of phase"};
}

}  // namespace

TEST_CASE("a cascade incident points at the root cause on the same stream", "[correlate]") {
  auto rules = compile_yaml(R"(
rules:
  - id: root
    title: root
    severity: critical
    priority: 90
    events: {e: 'Unsupported architecture'}
  - id: engine-dead
    title: engine dead
    severity: critical
    cascade: {window: 2m, hold: 10s}
    events: {e: 'EngineDeadError'}
)");
  SECTION("root cause first") {
    Harness h(rules);
    h.lines({ts(0, "RuntimeError: Unsupported architecture"), ts(1, "vllm.v1.engine.exceptions.EngineDeadError: dead")});
    h.pipeline.advance(at(20));
    auto dead = h.of("engine-dead");
    REQUIRE(dead.size() == 1);
    REQUIRE(dead[0].caused_by);
    CHECK(*dead[0].caused_by == h.of("root")[0].id);
    CHECK(dead[0].caused_by_rule == "root");
  }
  SECTION("root cause printed just after the consequence") {
    Harness h(rules);
    h.lines({ts(0, "EngineDeadError: dead"), ts(2, "RuntimeError: Unsupported architecture")});
    h.pipeline.advance(at(30));
    auto dead = h.of("engine-dead");
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].caused_by_rule == "root");
  }
  // The consequence alone, in words that are no failure story of their own (an exception line would be the
  // detector's unclassified failure, and that its root cause).
  SECTION("no root cause: raised as what it is, after the hold") {
    Harness h(rules);
    h.line(ts(0, "INFO engine state: EngineDeadError seen"));
    CHECK(h.of("engine-dead").empty());
    h.pipeline.advance(at(11));
    auto dead = h.of("engine-dead");
    REQUIRE(dead.size() == 1);
    CHECK_FALSE(dead[0].caused_by);
  }
  SECTION("a root cause on another stream does not explain it") {
    Harness h(rules);
    StreamIdentity other;
    other.name = other.logical = "pod-b";
    DecodeOptions o;
    o.format = ContainerFormat::raw;
    auto b = h.pipeline.add_stream(other, o);
    h.pipeline.feed(b, ts(0, "RuntimeError: Unsupported architecture") + "\n", at(0));
    h.line(ts(1, "INFO engine state: EngineDeadError seen"));
    h.pipeline.advance(at(30));
    auto dead = h.of("engine-dead");
    REQUIRE(dead.size() == 1);
    CHECK_FALSE(dead[0].caused_by);
  }
}

TEST_CASE("a node-keyed root cause explains pods on its node; unrelated pods do not explain each other", "[correlate]") {
  auto rules = compile_yaml(R"(
rules:
  - id: xid
    title: xid
    severity: critical
    priority: 100
    key: [node]
    events: {e: 'NVRM: Xid'}
  - id: nccl
    title: nccl
    severity: critical
    priority: 50
    events: {e: 'Watchdog caught collective operation timeout'}
  - id: arch
    title: arch
    severity: critical
    priority: 90
    events: {e: 'Unsupported architecture'}
)");
  std::vector<Incident> out;
  Pipeline p(rules, [&](const Incident& i) { out.push_back(i); });
  auto add = [&](const std::string& name, const std::string& pod) {
    Fields labels{{"node", "gpu-7"}};
    if (!pod.empty()) labels.emplace_back("pod", pod);
    return add_raw_stream(p, name, std::move(labels));
  };
  auto kmsg = add("kmsg", "");
  auto pod_a = add("ns/a/c", "a");
  auto pod_b = add("ns/b/c", "b");
  SECTION("unrelated pods on one node") {
    p.feed(pod_b, ts(0, "RuntimeError: Unsupported architecture") + "\n", at(0));
    p.drain();
    p.feed(pod_a, ts(10, "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)") + "\n", at(0));
    p.finish(at(60));
    REQUIRE(out.size() == 2);
    for (const auto& i : out) CHECK_FALSE(i.caused_by);
  }
  SECTION("an Xid in the kernel log explains the pods of its node") {
    p.feed(kmsg, ts(0, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.") + "\n", at(0));
    p.drain();
    p.feed(pod_a, ts(30, "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)") + "\n", at(0));
    p.finish(at(60));
    std::map<std::string, std::string> cause;
    for (const auto& i : out) cause[i.rule] = i.caused_by_rule;
    REQUIRE(cause.count("nccl"));
    CHECK(cause["nccl"] == "xid");
    CHECK(cause["xid"].empty());
  }
}

TEST_CASE("a node-wide root cause explains only what its attribution allows: hardware faults, their families, its GPU",
          "[correlate]") {
  auto rules = compile_yaml(R"(
rules:
  - id: xid
    title: xid
    severity: critical
    priority: 100
    key: [node]
    attribution:
      explains: [nccl, cascade]
      when: {xid: ["48", "79"]}
      gpu: [pci]
    events: {e: 'NVRM: Xid \(PCI:(?P<pci>[0-9a-f:]+)\): (?P<xid>\d+)'}
  - id: nccl
    title: nccl
    severity: critical
    priority: 50
    labels: {category: communication}
    events: {e: 'Watchdog caught collective operation timeout'}
  - id: config
    title: config
    severity: critical
    priority: 70
    labels: {category: configuration}
    events: {e: 'max_model_len \(\d+\) is greater than'}
  - id: engine-dead
    title: engine dead
    severity: critical
    cascade: {window: 2m, hold: 10s}
    labels: {category: cascade}
    events: {e: 'EngineDeadError'}
)");
  std::vector<Incident> out;
  Pipeline p(rules, [&](const Incident& i) { out.push_back(i); });
  auto add = [&](const std::string& name, Fields labels) {
    labels.emplace_back("node", "gpu-7");
    return add_raw_stream(p, name, std::move(labels));
  };
  auto kmsg = add("kmsg", {});
  auto pod = add("ns/a/c", {{"pod", "a"}});
  auto causes = [&] {
    std::map<std::string, std::string> cause;
    for (const auto& i : out) cause[i.rule] = i.caused_by_rule;
    return cause;
  };
  const std::string nccl = "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)";
  const std::string config = "ValueError: User-specified max_model_len (262144) is greater than the derived one";
  SECTION("an Xid an application fault raises (31) explains nothing") {
    p.feed(kmsg, ts(0, "NVRM: Xid (PCI:0000:70:00): 31, pid=684430, name=python3, MMU Fault") + "\n", at(0));
    p.drain();
    p.feed(pod, ts(5, nccl) + "\n" + ts(6, config) + "\n", at(0));
    p.finish(at(60));
    auto cause = causes();
    REQUIRE(cause.count("nccl"));
    CHECK(cause["nccl"].empty());
    CHECK(cause["config"].empty());
  }
  SECTION("a hardware Xid explains the families it causes, never a configuration error") {
    p.feed(kmsg, ts(0, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.") + "\n", at(0));
    p.drain();
    p.feed(pod, ts(5, nccl) + "\n" + ts(6, config) + "\n", at(0));
    p.finish(at(60));
    auto cause = causes();
    CHECK(cause["nccl"] == "xid");
    REQUIRE(cause.count("config"));
    CHECK(cause["config"].empty());
  }
  SECTION("a cascade prefers the cause on its own stream to the node's") {
    p.feed(kmsg, ts(0, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.") + "\n", at(0));
    p.drain();
    p.feed(pod, ts(5, config) + "\n" + ts(6, "vllm.v1.engine.exceptions.EngineDeadError: dead") + "\n", at(0));
    p.finish(at(60));
    CHECK(causes()["engine-dead"] == "config");
  }
}

TEST_CASE("a node-wide root cause explains only the pods of the GPU it names, when theirs is known", "[correlate]") {
  auto rules = compile_yaml(R"(
rules:
  - id: xid
    title: xid
    severity: critical
    priority: 100
    key: [node]
    attribution: {gpu: [pci]}
    events: {e: 'NVRM: Xid \(PCI:(?P<pci>[0-9a-f:]+)\): (?P<xid>\d+)'}
  - id: nccl
    title: nccl
    severity: critical
    priority: 50
    events: {e: 'Watchdog caught collective operation timeout'}
)");
  std::vector<Incident> out;
  Pipeline p(rules, [&](const Incident& i) { out.push_back(i); });
  auto add = [&](const std::string& name, const std::string& pod, const std::string& pci) {
    Fields labels{{"node", "gpu-7"}, {"pod", pod}};
    if (!pci.empty()) labels.emplace_back("pci", pci);  // a source's static label: the pod's GPU
    return add_raw_stream(p, name, std::move(labels));
  };
  auto kmsg = add("kmsg", "", "");
  auto same = add("ns/a/c", "a", "00000000:3B:00.0");  // nvidia-smi's spelling of the same bus id
  auto other = add("ns/b/c", "b", "0000:18:00.0");
  auto unknown = add("ns/c/c", "c", "");
  p.feed(kmsg, ts(0, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.") + "\n", at(0));
  p.drain();
  const std::string nccl = "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)";
  p.feed(same, ts(5, nccl) + "\n", at(0));
  p.feed(other, ts(5, nccl) + "\n", at(0));
  p.feed(unknown, ts(5, nccl) + "\n", at(0));
  p.finish(at(60));
  std::map<std::string, std::string> cause;
  for (const auto& i : out) cause[i.stream] = i.caused_by_rule;
  CHECK(cause["ns/a/c"] == "xid");
  CHECK(cause["ns/b/c"].empty());
  CHECK(cause["ns/c/c"] == "xid");
}

TEST_CASE("a cascade points at the unclassified failure before it; an unclassified failure explains no typed incident",
          "[correlate]") {
  auto rules = compile_yaml(R"(
rules:
  - id: engine-init-failed
    title: engine init failed
    severity: critical
    cascade: {window: 2m, hold: 10s}
    events: {e: 'EngineCore failed to start'}
  - id: nccl
    title: nccl
    severity: critical
    priority: 50
    events: {e: 'Watchdog caught collective operation timeout'}
)");
  std::vector<std::string> story = flux_story("start");
  story.push_back("(EngineCore_0 pid=88) ERROR 11-29 10:08:01 [core.py:868] EngineCore failed to start.");
  SECTION("the story closes at the end of input") {
    Harness h(rules);
    h.lines(story);
    h.replay.finish();
    auto unclassified = h.of("unclassified-failure");
    auto init = h.of("engine-init-failed");
    REQUIRE_FALSE(unclassified.empty());
    CHECK(unclassified.back().id == unclassified.front().id);  // one incident (raised to critical: see below)
    REQUIRE(init.size() == 1);
    REQUIRE(init[0].caused_by);
    CHECK(*init[0].caused_by == unclassified[0].id);
    CHECK(init[0].caused_by_rule == "unclassified-failure");
  }
  SECTION("the story closes while the cascade is held (more lines follow)") {
    Harness h(rules);
    h.lines(story);
    for (int i = 0; i < 30; ++i) h.line("INFO 11-29 10:08:02 [api.py:1] shutting down " + std::to_string(i));
    h.replay.finish();
    auto init = h.of("engine-init-failed");
    REQUIRE(init.size() == 1);
    CHECK(init[0].caused_by_rule == "unclassified-failure");
  }
  SECTION("a typed incident after it is not explained by it") {
    Harness h(rules);
    h.lines({story[0], story[1], story[2]});
    for (int i = 0; i < 30; ++i) h.line("INFO 11-29 10:08:02 [api.py:1] serving " + std::to_string(i));
    h.line("11-29 10:08:03 [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)");
    h.replay.finish();
    REQUIRE(h.of("unclassified-failure").size() == 1);
    auto nccl = h.of("nccl");
    REQUIRE(nccl.size() == 1);
    CHECK_FALSE(nccl[0].caused_by);
  }
}

TEST_CASE("the unclassified failure that explains a critical cascade pages at the cascade's severity", "[correlate]") {
  auto rules = compile_yaml(R"(
rules:
  - id: engine-dead
    title: engine dead
    severity: critical
    cascade: {window: 2m, hold: 10s}
    events: {e: 'the engine is dead'}
)");
  // A traceback the logger printed at ERROR while the process went on: a warning on its own.
  const std::vector<std::string> story = flux_story("step");
  Harness h(rules);
  h.lines(story);
  for (int i = 0; i < 25; ++i) h.line("INFO 11-29 10:08:02 [api.py:1] serving " + std::to_string(i));
  h.line("ERROR 11-29 10:08:03 [async_llm.py:1] the engine is dead, shutting down the API server");
  h.replay.finish();
  auto dead = h.of("engine-dead");
  auto unclassified = h.of("unclassified-failure");
  REQUIRE(dead.size() == 1);
  REQUIRE_FALSE(unclassified.empty());
  REQUIRE(dead[0].caused_by);
  CHECK(*dead[0].caused_by == unclassified[0].id);
  CHECK(dead[0].severity == Severity::critical);
  CHECK(unclassified.front().severity == Severity::warning);
  // The cascade does not page on its own, so its cause does, as loud: a new revision after the cascade's.
  CHECK(unclassified.back().severity == Severity::critical);
  CHECK(unclassified.back().revision == unclassified.front().revision + 1);
  CHECK(unclassified.back().id == unclassified.front().id);
  CHECK(h.pipeline.detector().inventory().front().severity == Severity::critical);
}
