// Helpers shared by the unit tests: compile rules from YAML text and replay lines through the real pipeline.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "faultline/match.hpp"
#include "faultline/pipeline.hpp"
#include "faultline/replay.hpp"
#include "faultline/rules.hpp"

namespace faultline::testing {

inline std::shared_ptr<const CompiledRules> compile_yaml(const std::string& yaml) {
  LoadResult loaded = load_rules_from_string(yaml, "test.yaml");
  for (const auto& d : loaded.diagnostics) UNSCOPED_INFO(d.str());
  REQUIRE(loaded.ok());
  CompileResult compiled = compile_rules(std::move(loaded.rules));
  for (const auto& d : compiled.diagnostics) UNSCOPED_INFO(d.str());
  REQUIRE(compiled.rules);
  return compiled.rules;
}

// Rules several rooms' tests replay. kStagedRule: an optional early-warning step, then the critical one.
// kNeverReadyRule: an absence (no `ready` within 10 minutes of `start`).
inline const std::string kStagedRule = R"(
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
inline const std::string kNeverReadyRule = R"(
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

// Whether a load reported an error at `where` (a file:line:column prefix or part of one) whose message has `text`.
inline bool has_error(const LoadResult& r, const std::string& where, const std::string& text) {
  for (const auto& d : r.diagnostics)
    if (d.str().find(where) != std::string::npos && d.message.find(text) != std::string::npos) return true;
  return false;
}

// A load's diagnostics, one a line (for INFO when a check fails).
inline std::string dump(const LoadResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += d.str() + "\n";
  return s;
}

inline Time at(int seconds) { return Time(std::chrono::seconds(1764410000 + seconds)); }

// A line stamped `seconds` after at(0): "<RFC 3339 time> <msg>".
inline std::string ts(int seconds, const std::string& msg) { return format_time(at(seconds)) + " " + msg; }

// A raw-format stream named `name` (logical and instance alike) with these labels.
inline std::uint32_t add_raw_stream(Pipeline& p, const std::string& name, Fields labels) {
  StreamIdentity id;
  id.name = id.logical = id.instance = name;
  id.labels = std::move(labels);
  DecodeOptions o;
  o.format = ContainerFormat::raw;
  return p.add_stream(id, o);
}

// Feeds lines (each gets "\n") to one stream through a Replay, read at `read_time`. `emitted` holds every revision;
// replay.incidents() the latest of each. `pipeline` is the replay's, for what a test drives by hand.
struct Harness {
  std::vector<Incident> emitted;
  Replay replay;
  Pipeline& pipeline;
  std::uint32_t stream;
  StreamIdentity identity;

  explicit Harness(std::shared_ptr<const CompiledRules> rules, std::string name = "pod-a")
      : replay(std::move(rules), options(emitted)), pipeline(replay.pipeline()) {
    StreamIdentity id;
    id.name = name;
    id.logical = name;
    id.instance = name + "#0";
    identity = id;
    DecodeOptions decode;
    decode.format = ContainerFormat::raw;
    stream = replay.add_stream(id, decode);
  }

  static ReplayOptions options(std::vector<Incident>& emitted) {
    ReplayOptions o;
    o.start = at(0);
    o.on_incident = [&emitted](const Incident& i) { emitted.push_back(i); };
    return o;
  }

  // The stream's identity as a new instance (a restarted container).
  StreamIdentity instance(std::string name) const {
    StreamIdentity id = identity;
    id.instance = std::move(name);
    return id;
  }

  void line(const std::string& text, Time read_time = at(0)) {
    replay.start(read_time);
    replay.line(stream, text);
  }
  void lines(const std::vector<std::string>& texts, Time read_time = at(0)) {
    for (const auto& t : texts) line(t, read_time);
  }
  std::vector<Incident> of(const std::string& rule) const {
    std::vector<Incident> out;
    for (const auto& i : emitted) {
      if (i.rule == rule) out.push_back(i);
    }
    return out;
  }
};

}  // namespace faultline::testing
