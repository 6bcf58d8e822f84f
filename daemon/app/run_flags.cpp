// `faultline run`'s flag parser (run_flags.hpp).
#include "run_flags.hpp"

#include "faultline/sinks.hpp"

#include <filesystem>
#include <iostream>

namespace faultline::app {

namespace fs = std::filesystem;

const char* const kRunUsage = R"(usage: faultline run [options] [-]

Follows log files (globs, Kubernetes pod logs, docker json-file logs), standard input ('-') and the kernel log,
and raises incidents: JSON lines on standard output (or --output), the HTTP API and metrics on --listen, and the
webhooks of the config file. Reloads rules on SIGHUP or when the rule files change; drains and checkpoints on
SIGTERM/SIGINT.

  --config FILE        YAML config (reference: docs/config.md); default: built-in defaults
  --source GLOB        a file or glob to follow (repeatable; replaces the config's sources)
  -                    follow standard input (replaces the config's sources; may be combined with --source)
  --rules PATH         rule file or directory (repeatable; replaces the config's rules.paths)
  --state-dir DIR      checkpoints and spools (default $STATE_DIRECTORY or /var/lib/faultline)
  --listen ADDR        HTTP host:port (default 127.0.0.1:9464; "off": no server)
  --webhook URL        also POST every incident as signed-JSON webhook to URL (sink "webhook"; repeatable)
  --alertmanager URL   also send incidents to this Alertmanager as alerts (sink "alertmanager"; repeatable)
  --output FILE        incident JSON lines: "-" standard output (default), a file, or "off"
  --format F           container format of the sources: auto, raw, cri, docker
  --start-at WHERE     beginning | end: where to start in files that exist at the very first start
  --node-name NAME     the `node` label (default $NODE_NAME or the host name)
  --log-format F       text | json (faultline's own log, on standard error)
  --log-level L        trace | debug | info | warn | error | critical | off
  --check-config       validate the config and the rules, then exit (0: valid)
)";

std::optional<RunFlags> parse_run_flags(int argc, char** argv) {
  RunFlags f;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    bool inline_value = false;
    if (a.rfind("--", 0) == 0) {
      if (auto eq = a.find('='); eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        inline_value = true;
      }
    }
    auto need = [&]() -> bool {
      if (inline_value) return true;
      if (i + 1 >= argc) {
        std::cerr << "faultline run: " << a << " needs a value\n";
        return false;
      }
      value = argv[++i];
      return true;
    };
    if (a == "-") {
      f.use_stdin = true;
    } else if (a == "-h" || a == "--help") {
      f.help = true;
    } else if (a == "--check-config") {
      f.check_only = true;
    } else if (a == "--config" || a == "-c") {
      if (!need()) return std::nullopt;
      f.config = value;
    } else if (a == "--source") {
      if (!need()) return std::nullopt;
      if (value == "-") f.use_stdin = true;
      else f.sources.push_back(value);
    } else if (a == "--rules") {
      if (!need()) return std::nullopt;
      f.rules.push_back(value);
    } else if (a == "--state-dir") {
      if (!need()) return std::nullopt;
      f.state_dir = value;
    } else if (a == "--listen") {
      if (!need()) return std::nullopt;
      f.listen = value;
    } else if (a == "--webhook" || a == "--alertmanager") {
      if (!need()) return std::nullopt;
      auto fmt = a == "--webhook" ? WebhookFormat::json : WebhookFormat::alertmanager;
      std::size_t same = 0;
      for (const auto& s : f.url_sinks) same += s.format == fmt;
      std::string name = std::string(fmt == WebhookFormat::json ? "webhook" : "alertmanager") +
                         (same ? "-" + std::to_string(same + 1) : "");
      std::string error;
      auto sink = sink_from_url(value, fmt, name, &error);
      if (!sink) {
        std::cerr << "faultline run: " << a << ": " << error << "\n";
        return std::nullopt;
      }
      f.url_sinks.push_back(std::move(*sink));
    } else if (a == "--output") {
      if (!need()) return std::nullopt;
      f.output = value;
    } else if (a == "--node-name") {
      if (!need()) return std::nullopt;
      f.node_name = value;
    } else if (a == "--format") {
      if (!need()) return std::nullopt;
      f.format = parse_container_format(value);
      if (!f.format) {
        std::cerr << "faultline run: --format: expected auto, raw, cri or docker, got '" << value << "'\n";
        return std::nullopt;
      }
    } else if (a == "--start-at") {
      if (!need()) return std::nullopt;
      f.start_at = parse_start_at(value);
      if (!f.start_at) {
        std::cerr << "faultline run: --start-at: expected beginning or end, got '" << value << "'\n";
        return std::nullopt;
      }
    } else if (a == "--log-format") {
      if (!need()) return std::nullopt;
      if (!parse_log_format(value)) {
        std::cerr << "faultline run: --log-format: expected text or json, got '" << value << "'\n";
        return std::nullopt;
      }
      f.log_format = value;
    } else if (a == "--log-level") {
      if (!need()) return std::nullopt;
      if (!valid_log_level(value)) {
        std::cerr << "faultline run: --log-level: expected trace, debug, info, warn, error, critical or off, got '"
                  << value << "'\n";
        return std::nullopt;
      }
      f.log_level = value;
    } else {
      std::cerr << "faultline run: unknown argument '" << argv[i] << "'\n" << kRunUsage;
      return std::nullopt;
    }
  }
  return f;
}

void apply_run_flags(const RunFlags& f, Config& c) {
  if (!f.sources.empty() || f.use_stdin) {
    c.sources.clear();
    if (!f.sources.empty()) {
      SourceSpec s;
      std::error_code ec;
      std::string cwd = fs::current_path(ec).string();
      for (const auto& p : f.sources) s.paths.push_back(p.front() == '/' || cwd.empty() ? p : cwd + "/" + p);
      c.sources.push_back(std::move(s));
    }
    if (f.use_stdin) {
      SourceSpec s;
      s.kind = SourceKind::stdin_stream;
      c.sources.push_back(std::move(s));
    }
  }
  for (auto& s : c.sources) {
    if (f.format) s.format = *f.format;
    if (f.start_at) s.start_at = *f.start_at;
  }
  if (!f.rules.empty()) c.rules.paths = f.rules;
  if (f.state_dir) c.state_dir = *f.state_dir;
  if (f.listen) c.listen = *f.listen;
  for (const auto& s : f.url_sinks) c.sinks.push_back(s);
  if (f.output) c.output = *f.output;
  if (f.node_name) c.node_name = *f.node_name;
  if (f.log_format) c.log.format = *parse_log_format(*f.log_format);
  if (f.log_level) c.log.level = *f.log_level;
  if (c.listen == "off") c.listen.clear();
  if (c.output == "off") c.output.clear();
}

}  // namespace faultline::app
