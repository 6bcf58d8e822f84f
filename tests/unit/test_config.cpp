// config: decoding into typed structs; every error path reported with its 1-based position.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "faultline/config.hpp"

using namespace faultline;

namespace {

ConfigResult load(const std::string& yaml) { return load_config_from_string(yaml, "cfg.yaml"); }

// The single error of a result, as "line:column: message".
std::string only_error(const ConfigResult& r) {
  std::vector<std::string> errors;
  for (const auto& d : r.diagnostics)
    if (d.kind == Diagnostic::Kind::error)
      errors.push_back(std::to_string(d.pos.line) + ":" + std::to_string(d.pos.column) + ": " + d.message);
  INFO("errors: " << errors.size());
  for (const auto& e : errors) INFO(e);
  REQUIRE(errors.size() == 1);
  return errors.front();
}

bool has_error_at(const ConfigResult& r, std::uint32_t line, std::uint32_t column, const std::string& text) {
  for (const auto& d : r.diagnostics) {
    if (d.kind == Diagnostic::Kind::error && d.pos.line == line && d.pos.column == column &&
        d.message.find(text) != std::string::npos && d.pos.file == "cfg.yaml")
      return true;
  }
  return false;
}

}  // namespace

TEST_CASE("defaults without a config file") {
  ::setenv("STATE_DIRECTORY", "/run/state/faultline:/other", 1);
  ::setenv("NODE_NAME", "gpu-node-1", 1);
  Config c = default_config();
  CHECK(c.state_dir == "/run/state/faultline");
  CHECK(c.node_name == "gpu-node-1");
  CHECK(c.listen == "127.0.0.1:9464");
  CHECK(c.output == "-");
  CHECK(c.rules.paths.empty());  // the shipped catalog
  REQUIRE(c.sources.size() == 2);
  CHECK(c.sources[0].paths == std::vector<std::string>{"/var/log/pods/*/*/*.log"});
  CHECK(c.sources[1].kind == SourceKind::kmsg);
  CHECK(c.sources[1].optional);
  CHECK(c.tail.exclude_self == std::vector<std::string>{"faultline", "faultline-*"});
  ::unsetenv("STATE_DIRECTORY");
  CHECK(default_config().state_dir == "/var/lib/faultline");
  ::unsetenv("NODE_NAME");
  CHECK(!default_config().node_name.empty());  // the host name
}

TEST_CASE("an empty file gives the defaults") {
  auto r = load("");
  CHECK(r.ok());
  CHECK(r.config.listen == "127.0.0.1:9464");
  CHECK(r.config.file == "cfg.yaml");
}

TEST_CASE("a full config decodes into typed values") {
  auto r = load(R"YAML(
node_name: n1
state_dir: /tmp/st
listen: 0.0.0.0:9000
output: /tmp/incidents.jsonl
log: {level: debug, format: json}
rules:
  paths: [/etc/rules, local]
  cache_dir: /tmp/cache
  watch: false
  reload_delay: 2s
  overrides:
    cuda-oom: {enabled: false}
    nccl-timeout:
      severity: critical
      labels: {team: infra}
sources:
  - paths: /var/log/a.log
    exclude: ["*.gz"]
    format: cri
    start_at: beginning
    name: "app/{stem}"
    source: apps
    labels: {cluster: c1}
  - type: stdin
  - type: kmsg
tail:
  rescan_interval: 250ms
  partial_line_timeout: 3s
  rotate_wait: 0s
  read_chunk: 64KiB
  max_read_per_poll: 1MiB
  max_open_files: 100
  fingerprint_bytes: 512
  max_line_bytes: 1MiB
  exclude_self: []
  inotify: false
pipeline: {batch_bytes: 128KiB, max_stories: 5000, max_open_incident_bytes: 4MiB}
checkpoint_interval: 1m
shutdown_timeout: 3s
server: {api_token_file: /etc/token, external_url: "http://x"}
redaction: {defaults: false, patterns: ["secret=(\\S+)"], max_evidence_lines: 5}
queue_capacity: 50
max_incidents: 20
max_incident_bytes: 2MiB
sinks:
  - name: am
    format: alertmanager
    url: http://127.0.0.1:9093
    min_severity: warning
    timeout: 3s
    headers: {X-Team: infra}
    tls: {verify: false}
)YAML");
  for (const auto& d : r.diagnostics) INFO(d.str());
  REQUIRE(r.ok());
  const Config& c = r.config;
  CHECK(c.node_name == "n1");
  CHECK(c.state_dir == "/tmp/st");
  CHECK(c.listen == "0.0.0.0:9000");
  CHECK(c.output == "/tmp/incidents.jsonl");
  CHECK(c.log.level == "debug");
  CHECK(c.log.format == LogFormat::json);
  REQUIRE(c.rules.paths.size() == 2);
  CHECK(c.rules.paths[0] == "/etc/rules");
  CHECK(c.rules.paths[1].ends_with("/local"));  // relative to the config file
  CHECK(c.rules.paths[1].front() == '/');
  CHECK(c.rules.cache_dir == "/tmp/cache");
  CHECK(!c.rules.watch);
  CHECK(c.rules.reload_delay == std::chrono::seconds(2));
  REQUIRE(c.rules.overrides.size() == 2);
  CHECK(c.rules.overrides[0].rule == "cuda-oom");
  CHECK(c.rules.overrides[0].enabled == std::optional<bool>(false));
  CHECK(c.rules.overrides[0].pos.line == 13);  // line 1 is the empty one after R"YAML(
  CHECK(c.rules.overrides[1].severity == Severity::critical);
  REQUIRE(c.sources.size() == 3);
  CHECK(c.sources[0].paths == std::vector<std::string>{"/var/log/a.log"});
  CHECK(c.sources[0].exclude == std::vector<std::string>{"*.gz"});
  CHECK(c.sources[0].format == ContainerFormat::cri);
  CHECK(c.sources[0].start_at == StartAt::beginning);
  CHECK(c.sources[0].name == "app/{stem}");
  CHECK(c.sources[0].source == "apps");
  CHECK(c.sources[1].kind == SourceKind::stdin_stream);
  CHECK(c.sources[2].kind == SourceKind::kmsg);
  CHECK(c.sources[2].paths == std::vector<std::string>{"/dev/kmsg"});
  CHECK(c.tail.rescan_interval == std::chrono::milliseconds(250));
  CHECK(c.tail.partial_timeout == std::chrono::seconds(3));
  CHECK(c.tail.rotate_wait == Duration{0});
  CHECK(c.tail.read_chunk_bytes == 64 * 1024);
  CHECK(c.tail.max_bytes_per_poll == 1024 * 1024);
  CHECK(c.tail.max_open_files == 100);
  CHECK(c.tail.fingerprint_bytes == 512);
  CHECK(c.max_line_bytes == 1024 * 1024);
  CHECK(c.tail.exclude_self.empty());
  CHECK(!c.tail.use_inotify);
  CHECK(c.pipeline.batch_bytes == 128 * 1024);
  CHECK(c.pipeline.correlator.max_stories == 5000);
  CHECK(c.pipeline.correlator.max_open_incident_bytes == 4u << 20);
  CHECK(c.checkpoint_interval == std::chrono::minutes(1));
  CHECK(c.shutdown_timeout == std::chrono::seconds(3));
  CHECK(c.server.api_token_file == "/etc/token");
  CHECK(!c.redaction.defaults);
  CHECK(c.redaction.max_evidence_lines == 5);
  CHECK(c.queue_capacity == 50);
  CHECK(c.max_incidents == 20);
  CHECK(c.max_incident_bytes == 2u << 20);
  REQUIRE(c.sinks.size() == 1);
  CHECK(c.sinks[0].name == "am");
  CHECK(c.sinks[0].format == WebhookFormat::alertmanager);
  CHECK(c.sinks[0].min_severity == Severity::warning);
  CHECK(c.sinks[0].timeout == std::chrono::seconds(3));
  CHECK(!c.sinks[0].tls.verify);
}

TEST_CASE("a sink's problems are reported at its own entry, whichever entry it is") {
  // Replaces Config::sink_positions: the position travels with the diagnostic, not beside the sinks.
  auto r = load("listen: a:1\nsinks:\n  - name: good\n    url: http://a\n  - name: bad\n    url: ftp://x\n");
  CHECK(!r.ok());
  CHECK(has_error_at(r, 5, 5, "sinks[1]: "));
  CHECK(!has_error_at(r, 3, 5, "sinks[0]"));
  REQUIRE(r.config.sinks.size() == 2);
}

TEST_CASE("unknown keys are errors at the key, at every level") {
  CHECK(only_error(load("colour: blue\n")) == "1:1: config: unknown key 'colour' (known: node_name, utc_offset, state_dir, "
                                              "listen, output, log, rules, sources, tail, pipeline, fingerprints, "
                                              "checkpoint_interval, shutdown_timeout, server, redaction, "
                                              "queue_capacity, max_incidents, max_incident_bytes, sinks)");
  CHECK(has_error_at(load("log:\n  lvl: info\n"), 2, 3, "log: unknown key 'lvl'"));
  CHECK(has_error_at(load("tail:\n  rescan: 1s\n"), 2, 3, "tail: unknown key 'rescan'"));
  CHECK(has_error_at(load("sources:\n  - paths: [a]\n    formt: raw\n"), 3, 5, "sources[0]: unknown key 'formt'"));
  CHECK(has_error_at(load("rules:\n  overrides:\n    x: {enable: false}\n"), 3, 9,
                     "rules.overrides.x: unknown key 'enable'"));
  CHECK(has_error_at(load("sinks:\n  - url: http://a\n    retries: 3\n"), 3, 5, "sinks[0]: unknown key 'retries'"));
  CHECK(has_error_at(load("sinks:\n  - url: http://a\n    tls: {verfy: true}\n"), 3, 11, "unknown key 'verfy'"));
}

TEST_CASE("duplicate keys are errors") {
  CHECK(has_error_at(load("listen: a:1\nlisten: b:2\n"), 2, 1, "duplicate key 'listen'"));
}

TEST_CASE("a repeated key in any mapping names both positions") {
  CHECK(only_error(load("listen: a:1\nlisten: b:2\n")) == "2:1: duplicate key 'listen' (first at cfg.yaml:1:1)");
  CHECK(only_error(load("tail:\n  inotify: true\n  inotify: false\n")) ==
        "3:3: duplicate key 'inotify' (first at cfg.yaml:2:3)");
  CHECK(only_error(load("sources:\n  - paths: [a]\n    labels: {team: x, team: y}\n")) ==
        "3:23: duplicate key 'team' (first at cfg.yaml:3:14)");
  CHECK(only_error(load("rules:\n  overrides:\n    a: {enabled: false}\n    a: {enabled: true}\n")) ==
        "4:5: duplicate key 'a' (first at cfg.yaml:3:5)");
  // The first value is not silently kept: nothing starts.
  CHECK(!load("sinks:\n  - url: http://a\n    url: http://b\n").ok());
}

TEST_CASE("booleans are true or false; YAML 1.1's yes/no/on/off are rejected by name") {
  CHECK(load("rules:\n  watch: false\n").ok());
  CHECK(!load("rules:\n  watch: false\n").config.rules.watch);
  for (const char* word : {"yes", "no", "on", "off", "TRUE"}) {
    auto r = load(std::string("rules:\n  watch: ") + word + "\n");
    INFO(word);
    CHECK(has_error_at(r, 2, 10, std::string("rules.watch: expected true or false, got '") + word + "'"));
    CHECK(has_error_at(r, 2, 10, "yes/no/on/off"));
  }
  CHECK(!has_error_at(load("rules:\n  watch: maybe\n"), 2, 10, "yes/no/on/off"));
}

TEST_CASE("wrong types are errors at the value") {
  CHECK(has_error_at(load("listen: [a, b]\n"), 1, 9, "listen: expected a scalar, got a list"));
  CHECK(has_error_at(load("log: text\n"), 1, 6, "log: expected a mapping, got a scalar"));
  CHECK(has_error_at(load("sources: {paths: a}\n"), 1, 10, "sources: expected a list"));
  CHECK(has_error_at(load("sources:\n  - paths: {a: b}\n"), 2, 12, "paths: expected a list of strings"));
  CHECK(has_error_at(load("sources:\n  - paths: [a]\n    labels: [x]\n"), 3, 13, "labels: expected a mapping"));
  CHECK(has_error_at(load("rules:\n  watch: yes please\n"), 2, 10, "rules.watch: expected true or false"));
  CHECK(has_error_at(load("tail:\n  max_open_files: -3\n"), 2, 19, "tail.max_open_files: expected a whole number"));
  CHECK(has_error_at(load("tail:\n  max_open_files: 0\n"), 2, 19, "must be at least 1"));
  CHECK(has_error_at(load("queue_capacity: 1.5\n"), 1, 17, "expected a whole number"));
  CHECK(has_error_at(load("rules:\n  overrides: [a]\n"), 2, 14, "rules.overrides: expected a mapping of rule ids"));
  CHECK(has_error_at(load("sinks: {}\n"), 1, 8, "sinks: expected a list"));
}

TEST_CASE("bad durations and sizes are errors at the value") {
  CHECK(has_error_at(load("checkpoint_interval: 5 seconds\n"), 1, 22, "bad duration '5 seconds'"));
  CHECK(has_error_at(load("checkpoint_interval: 5\n"), 1, 22, "bad duration '5'"));
  CHECK(has_error_at(load("checkpoint_interval: 0s\n"), 1, 22, "must be longer than 0s"));
  CHECK(has_error_at(load("tail:\n  partial_line_timeout: -1s\n"), 2, 25, "bad duration"));
  CHECK(has_error_at(load("tail:\n  read_chunk: 64 KB\n"), 2, 15, "bad size '64 KB'"));
  CHECK(has_error_at(load("tail:\n  read_chunk: 100\n"), 2, 15, "must be at least 4096 bytes"));
  CHECK(has_error_at(load("max_incident_bytes: 1KiB\n"), 1, 21, "must be at least 65536 bytes"));
  CHECK(has_error_at(load("pipeline:\n  max_open_incident_bytes: 4KiB\n"), 2, 28,
                     "pipeline.max_open_incident_bytes: must be at least 65536 bytes"));
  CHECK(has_error_at(load("sinks:\n  - url: http://a\n    timeout: soon\n"), 3, 14, "bad duration 'soon'"));
  CHECK(load("shutdown_timeout: 0s\n").ok());  // zero allowed where it means "none"
}

TEST_CASE("bad enum values are errors") {
  CHECK(has_error_at(load("log: {level: loud}\n"), 1, 14, "log.level: expected trace, debug"));
  CHECK(has_error_at(load("log: {format: xml}\n"), 1, 15, "log.format: expected text or json"));
  CHECK(has_error_at(load("sources:\n  - paths: [a]\n    format: json\n"), 3, 13, "expected auto, raw, cri or docker"));
  CHECK(has_error_at(load("sources:\n  - paths: [a]\n    start_at: middle\n"), 3, 15, "expected beginning or end"));
  CHECK(has_error_at(load("sources:\n  - type: socket\n"), 2, 11, "sources[0].type: expected file, stdin or kmsg"));
  CHECK(has_error_at(load("rules:\n  overrides:\n    x: {severity: fatal}\n"), 3, 19,
                     "expected info, warning or critical"));
  CHECK(has_error_at(load("sinks:\n  - url: http://a\n    format: slack\n"), 3, 13, "expected json or alertmanager"));
}

TEST_CASE("missing required values") {
  CHECK(has_error_at(load("sources:\n  - format: raw\n"), 2, 5, "a file source needs `paths`"));
}

TEST_CASE("an invalid sink is reported at its entry") {
  auto r = load("sinks:\n  - name: bad\n    url: ftp://x\n");
  CHECK(!r.ok());
  bool found = false;
  for (const auto& d : r.diagnostics) found |= d.pos.line == 2 && d.pos.column == 5 && d.message.find("sinks[0]") == 0;
  CHECK(found);
}

TEST_CASE("every error is reported, not only the first") {
  auto r = load("a: 1\nb: 2\ntail: {rescan_interval: x, read_chunk: y}\n");
  std::size_t errors = 0;
  for (const auto& d : r.diagnostics) errors += d.kind == Diagnostic::Kind::error;
  CHECK(errors == 4);
}

TEST_CASE("YAML syntax errors carry a 1-based position") {
  auto r = load("sources:\n  - paths: [a\n  b: c\n");
  REQUIRE(!r.ok());
  CHECK(r.diagnostics[0].pos.line >= 2);
  CHECK(r.diagnostics[0].pos.column >= 1);
  CHECK(r.diagnostics[0].str().rfind("cfg.yaml:", 0) == 0);
}

TEST_CASE("a file that cannot be read") {
  auto r = load_config("/nonexistent/faultline.yaml");
  CHECK(!r.ok());
  CHECK(r.diagnostics[0].pos.file == "/nonexistent/faultline.yaml");
}

TEST_CASE("parse_size") {
  CHECK(parse_size("512") == 512u);
  CHECK(parse_size("512B") == 512u);
  CHECK(parse_size("64KiB") == 65536u);
  CHECK(parse_size("16MiB") == 16u << 20);
  CHECK(parse_size("2GiB") == 2ull << 30);
  CHECK(parse_size("10MB") == 10000000u);
  CHECK(!parse_size(""));
  CHECK(!parse_size("KiB"));
  CHECK(!parse_size("-1"));
  CHECK(!parse_size("1.5MiB"));
  CHECK(!parse_size("64 KiB"));
  CHECK(!parse_size("99999999999999999999"));
}

TEST_CASE("rule overrides: disable, severity, labels; unknown rule is a warning") {
  RuleSet set;
  Rule a;
  a.id = "a";
  a.severity = Severity::warning;
  Rule b;
  b.id = "b";
  b.labels = {{"team", "x"}};
  set.rules = {a, b};
  std::vector<RuleOverride> overrides(3);
  overrides[0].rule = "a";
  overrides[0].enabled = false;
  overrides[1].rule = "b";
  overrides[1].severity = Severity::critical;
  overrides[1].labels = {{"team", "y"}, {"tier", "1"}};
  overrides[2].rule = "zzz";
  overrides[2].pos = Position{"cfg.yaml", 9, 5};
  std::vector<Diagnostic> diags;
  apply_rule_overrides(set, overrides, diags);
  REQUIRE(set.rules.size() == 1);
  CHECK(set.rules[0].id == "b");
  CHECK(set.rules[0].severity == Severity::critical);
  CHECK(*find_field(set.rules[0].labels, "team") == "y");
  CHECK(*find_field(set.rules[0].labels, "tier") == "1");
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].kind == Diagnostic::Kind::warning);
  CHECK(diags[0].pos.line == 9);
}

TEST_CASE("utc_offset reads the zone of unzoned log times") {
  auto ok = load("utc_offset: \"+08:00\"\n");
  REQUIRE(ok.ok());
  CHECK(ok.config.utc_offset == std::chrono::hours(8));
  auto west = load("utc_offset: \"-05:30\"\n");
  REQUIRE(west.ok());
  CHECK(west.config.utc_offset == -(std::chrono::hours(5) + std::chrono::minutes(30)));
  auto bad = load("utc_offset: CET\n");
  CHECK_FALSE(bad.ok());
}

TEST_CASE("a sink URL with credentials is refused without printing them") {
  auto r = load("sinks:\n  - name: a\n    url: http://user:URLPASSWORD99@127.0.0.1:18099/hook\n");
  CHECK(!r.ok());
  std::string all;
  for (const auto& d : r.diagnostics) all += d.str() + "\n";
  INFO(all);
  CHECK(all.find("URLPASSWORD99") == std::string::npos);
  CHECK(all.find("http://user:***@127.0.0.1:18099/hook") != std::string::npos);
  CHECK(has_error_at(r, 2, 5, "credentials in the URL are not supported"));
}

TEST_CASE("config values are bounded: long values are errors, echoes are excerpts, huge files are refused") {
  auto long_value = load("log:\n  level: " + std::string(100'000, 'x') + "\n");
  CHECK(has_error_at(long_value, 2, 10, "a value of 100000 bytes"));
  for (const auto& d : long_value.diagnostics) CHECK(d.str().size() < 400);
  auto long_echo = load("log:\n  level: " + std::string(10'000, 'x') + "\n");
  CHECK(has_error_at(long_echo, 2, 10, "log.level: expected"));
  for (const auto& d : long_echo.diagnostics) CHECK(d.str().size() < 400);

  auto path = std::filesystem::temp_directory_path() / ("faultline-config-" + std::to_string(::getpid()) + ".yaml");
  { std::ofstream(path) << "listen: 127.0.0.1:0\n"; }
  std::filesystem::resize_file(path, 200'000'000);  // sparse
  auto huge = load_config(path.string());
  std::filesystem::remove(path);
  REQUIRE(huge.diagnostics.size() == 1);
  CHECK(huge.diagnostics[0].str() == path.string() + ":1:1: error: the file is 200000000 bytes; a rule or config "
                                                     "file may have at most 4 MiB");
  auto missing = load_config(path.string());
  REQUIRE(missing.diagnostics.size() == 1);
  CHECK(missing.diagnostics[0].unreadable);
}

TEST_CASE("fingerprints: per-fingerprint severity and silence, a silence needs its reason") {
  auto r = load(R"(
fingerprints:
  enabled: true
  overrides:
    3f9a0c1d2b4e5f60: {severity: info}
    a1b2c3d4e5f60718: {silence: true, why: "the warm-up probe fails once at start"}
)");
  REQUIRE(r.ok());
  const auto& o = r.config.pipeline.fingerprint.overrides;
  REQUIRE(o.size() == 2);
  CHECK(o[0].fingerprint == "3f9a0c1d2b4e5f60");
  CHECK(o[0].severity == Severity::info);
  CHECK(o[1].silence);
  CHECK(o[1].why == "the warm-up probe fails once at start");

  auto bad = load("fingerprints:\n  overrides:\n    nothex: {severity: info}\n    a1b2c3d4e5f60718: {silence: true}\n");
  CHECK_FALSE(bad.ok());
  std::string all;
  for (const auto& d : bad.diagnostics) all += d.str() + "\n";
  CHECK(all.find("16 hex digits") != std::string::npos);
  CHECK(all.find("needs `why`") != std::string::npos);
}

TEST_CASE("a bare port as listen address is an error at the value, with the address meant") {
  auto r = load("listen: 9464\n");
  CHECK(only_error(r) == "1:9: listen: expected host:port, got '9464' (did you mean 127.0.0.1:9464? 0.0.0.0:9464 "
                         "listens on every interface)");
  CHECK(load("listen: off\n").ok());
  CHECK(load("listen: '[::1]:9464'\n").ok());
  CHECK(load("listen: 0.0.0.0:0\n").ok());
  CHECK(!load("listen: localhost\n").ok());
}

TEST_CASE("rule ids in sink filters keep their positions; unknown ones are found with the nearest id") {
  auto r = load("sinks:\n  - url: http://127.0.0.1:9/hook\n    rules: [cuda-oom, nccl-watchdog-timeout]\n");
  REQUIRE(r.ok());
  REQUIRE(r.config.rule_references.size() == 2);
  CHECK(r.config.rule_references[0].rule == "cuda-oom");
  CHECK(r.config.rule_references[0].pos.line == 3);
  CHECK(r.config.rule_references[0].pos.column == 13);
  CHECK(r.config.rule_references[1].pos.column == 23);
  CHECK(r.config.rule_references[0].where == "sinks[0].rules");

  RuleSet set;
  for (const char* id : {"cuda-out-of-memory", "nccl-watchdog-timeout", "gpu-xid-error"}) {
    Rule rule;
    rule.id = id;
    set.rules.push_back(rule);
  }
  auto problems = check_rule_references(r.config, set, {});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].pos.line == 3);
  CHECK(problems[0].message ==
        "sinks[0].rules: no loaded rule has the id 'cuda-oom' (did you mean 'cuda-out-of-memory'?)");
  // A rule an override disabled is still known.
  CHECK(check_rule_references(r.config, RuleSet{}, {"cuda-oom", "nccl-watchdog-timeout"}).empty());
}

TEST_CASE("the nearest name: typos and abbreviations, nothing when far") {
  const std::vector<std::string> ids = {"cuda-out-of-memory", "nccl-watchdog-timeout", "gpu-xid-error",
                                        "engine-dead"};
  CHECK(nearest_name("nccl-watchdog-timout", ids) == "nccl-watchdog-timeout");
  CHECK(nearest_name("gpu-xid-eror", ids) == "gpu-xid-error");
  CHECK(nearest_name("cuda-oom", ids) == "cuda-out-of-memory");
  CHECK(nearest_name("nccl-watch-time", ids) == "nccl-watchdog-timeout");
  CHECK(nearest_name("fell-off-the-bus", ids).empty());
  CHECK(nearest_name("x", ids).empty());
}
