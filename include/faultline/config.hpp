// config: the daemon's one YAML file (reference: docs/config.md), decoded once into typed structs. Every problem —
// unknown key, wrong type, bad duration or size, bad enum value — is reported with its 1-based file:line:column, all
// of them at once, and nothing starts. Also: the built-in defaults (no config file). Rule overrides are read here and
// applied by the catalog (catalog.hpp).
// Plain values; the functions are thread-safe (they read the file and the environment, nothing else). Includes no
// metrics or HTTP headers: a sink's configuration is sink_config.hpp, not sinks.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/catalog.hpp"
#include "faultline/decode.hpp"
#include "faultline/pipeline.hpp"
#include "faultline/rules.hpp"
#include "faultline/sink_config.hpp"
#include "faultline/tail.hpp"
#include "faultline/types.hpp"

namespace faultline {

enum class LogFormat : std::uint8_t { text, json };
std::optional<LogFormat> parse_log_format(std::string_view text);  // text | json

struct LogSettings {
  std::string level = "info";  // trace | debug | info | warn | error | critical | off
  LogFormat format = LogFormat::text;
};
bool valid_log_level(std::string_view level);

struct RulesSettings {
  std::vector<std::string> paths;   // files or directories; empty: the shipped catalog (default_rules_dir())
  std::string cache_dir;            // compiled databases; empty: <state_dir>/cache
  bool watch = true;                // reload when the rule files change (besides SIGHUP)
  Duration reload_delay = std::chrono::milliseconds(500);  // settle time after a change before reloading
  std::vector<RuleOverride> overrides;
};

// The HTTP server besides its listen address.
struct ServerSettings {
  std::string api_token_file;  // required as a bearer token by /api and the page; empty: open
  std::string external_url;    // base URL for links; empty: http://<listen>
};

// Where the config file gave the values that are checked only after decoding (pre-flight, start-up): the state dir
// and the listen address. A position with line 0: the value was not in the file (a default or a flag).
struct ConfigPositions {
  Position state_dir;
  Position listen;
};

// A rule id the config names outside `rules.overrides` (a sink's `rules:` filter), where it names it.
struct RuleReference {
  std::string rule;
  std::string where;  // "sinks[0].rules"
  Position pos;
};

struct Config {
  std::string file;        // where it came from; empty: built-in defaults
  std::string node_name;   // `node` label; default $NODE_NAME, else the host name
  std::chrono::seconds utc_offset{0};  // zone of times that logs print without one (vLLM, SGLang, Python logging)
  std::string state_dir;   // default $STATE_DIRECTORY (its first entry), else /var/lib/faultline
  std::string listen = "127.0.0.1:9464";  // HTTP (metrics, API); "" or "off": no server
  std::string output = "-";               // incident JSON lines: "-" stdout, "" none, else a file (appended)
  LogSettings log;
  RulesSettings rules;
  std::vector<SourceSpec> sources;
  TailOptions tail;
  std::size_t max_line_bytes = 64 * 1024;
  PipelineOptions pipeline;
  Duration checkpoint_interval = std::chrono::seconds(5);
  Duration shutdown_timeout = std::chrono::seconds(10);  // for sinks to flush at SIGTERM
  ServerSettings server;
  std::vector<SinkConfig> sinks;        // webhooks (json, alertmanager)
  RedactionOptions redaction;
  std::size_t queue_capacity = 1024;    // incidents waiting for the sinks before reading pauses
  std::size_t max_incidents = 1000;     // kept for the API
  std::size_t max_incident_bytes = 2u << 20;  // and the memory they may hold
  // `run` only: incidents on standard output as the text blocks `scan` prints (a terminal), not JSON lines.
  bool output_text = false;
  ConfigPositions positions;
  std::vector<RuleReference> rule_references;
};

struct ConfigResult {
  Config config;
  std::vector<Diagnostic> diagnostics;
  bool ok() const;
};

// Built-in defaults: shipped rules, state dir from the environment, Kubernetes pod logs and the kernel log.
Config default_config();
ConfigResult load_config(const std::string& path);
ConfigResult load_config_from_string(std::string_view yaml, std::string_view file_name);

// The listen address's form: "host:port", "[v6]:port", or "" / "off" (no server). The problem, with a hint for a bare
// port ("9464": did you mean 127.0.0.1:9464?); nullopt when it is well formed.
std::optional<std::string> listen_address_problem(std::string_view listen);

// Rule ids the config names — `rules.overrides` and the sinks' `rules:` filters — that `loaded` does not hold, as
// errors at their position with the nearest known id ("did you mean"). `loaded`: the rules after the overrides;
// `disabled`: the ids an override removed from it (still known).
std::vector<Diagnostic> check_rule_references(const Config& config, const RuleSet& loaded,
                                              const std::vector<std::string>& disabled);

// The candidate nearest to `word` by edit distance, when near enough to be a likely typo; empty otherwise.
std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates);

// "64KiB", "1MiB", "2GiB", "10MB", "512", "512B". No sign, no fraction.
std::optional<std::uint64_t> parse_size(std::string_view text);

}  // namespace faultline
