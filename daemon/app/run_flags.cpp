// `faultline run`'s flag parser (run_flags.hpp).
#include "run_flags.hpp"

#include <filesystem>
#include <iostream>

#include "faultline/sinks.hpp"

namespace faultline::app {

namespace fs = std::filesystem;

namespace {

// --webhook and --alertmanager URLs become sinks named "webhook", "webhook-2", … in the order given.
std::optional<std::string> add_url_sinks(const std::vector<std::string>& urls, WebhookFormat format,
                                         std::vector<SinkConfig>& out) {
  const char* flag = format == WebhookFormat::json ? "--webhook" : "--alertmanager";
  const char* base = format == WebhookFormat::json ? "webhook" : "alertmanager";
  for (std::size_t i = 0; i < urls.size(); ++i) {
    std::string name = std::string(base) + (i ? "-" + std::to_string(i + 1) : "");
    std::string error;
    auto sink = sink_from_url(urls[i], format, name, &error);
    if (!sink) return std::string(flag) + ": " + error;
    out.push_back(std::move(*sink));
  }
  return std::nullopt;
}

// A flag whose value is any text (a path, an address, a name): taken as it is.
std::optional<std::string> any_text(std::string_view text) { return std::string(text); }

std::optional<std::string> log_format_name(std::string_view text) {
  if (!parse_log_format(text)) return std::nullopt;
  return std::string(text);
}

std::optional<std::string> log_level_name(std::string_view text) {
  if (!valid_log_level(std::string(text))) return std::nullopt;
  return std::string(text);
}

}  // namespace

std::optional<RunFlags> parse_run_flags(const Args& args, int& status) {
  RunFlags f;
  std::vector<std::string> positionals, webhooks, alertmanagers;
  cli::Parser cli("run",
                  "Follows log files (globs, Kubernetes pod logs, docker json-file logs), standard input ('-') and "
                  "the kernel log, and raises incidents: JSON lines on standard output (or --output), the HTTP API "
                  "and metrics on --listen, and the webhooks of the config file. Reloads rules on SIGHUP or when the "
                  "rule files change; drains and checkpoints on SIGTERM/SIGINT.");
  cli.option("--config", "FILE", f.config, "YAML config (reference: docs/config.md); default: built-in defaults");
  cli.alias("-c");
  cli.option("--source", "GLOB", f.sources,
             "a file or glob to follow (repeatable; replaces the config's sources; '-' is standard input)");
  cli.option("--rules", "PATH", f.rules, "rule file or directory (repeatable; replaces the config's rules.paths)");
  cli.option("--state-dir", "DIR", f.state_dir, any_text,
             "a directory", "checkpoints and spools (default $STATE_DIRECTORY or /var/lib/faultline)");
  cli.option("--listen", "ADDR", f.listen, any_text,
             "host:port", "HTTP host:port (default 127.0.0.1:9464; \"off\": no server)");
  cli.option("--webhook", "URL", webhooks,
             "also POST every incident as signed-JSON webhook to URL (sink \"webhook\"; repeatable)");
  cli.option("--alertmanager", "URL", alertmanagers,
             "also send incidents to this Alertmanager as alerts (sink \"alertmanager\"; repeatable)");
  cli.option("--output", "FILE", f.output, any_text,
             "a file", "incident JSON lines: \"-\" standard output (default; without --output, a terminal gets "
             "the text blocks scan prints), a file, or \"off\"");
  cli.option("--format", "F", f.format, parse_container_format, "auto, raw, cri or docker",
             "container format of the sources: auto, raw, cri, docker");
  cli.option("--start-at", "WHERE", f.start_at, parse_start_at, "beginning or end",
             "beginning | end: where to start in files that exist at the very first start (once a checkpoint "
             "exists it decides; the log says, per file, where reading starts)");
  cli.option("--node-name", "NAME", f.node_name, any_text,
             "a name", "the `node` label (default $NODE_NAME or the host name)");
  cli.option("--log-format", "F", f.log_format, log_format_name, "text or json",
             "text | json (faultline's own log, on standard error)");
  cli.option("--log-level", "L", f.log_level, log_level_name, "trace, debug, info, warn, error, critical or off",
             "trace | debug | info | warn | error | critical | off");
  cli.flag("--check-config", f.check_only,
           "the pre-flight: fail (exit 2) on everything run would refuse, creating nothing; 0: it would start");
  cli.positionals("-", positionals);
  cli.footer("'-' (or --source -) follows standard input; it may be combined with --source.");
  if (auto done = cli.handle(args, std::cout, std::cerr)) {
    status = *done;
    return std::nullopt;
  }
  auto fail = [&](const std::string& why) -> std::optional<RunFlags> {
    std::cerr << "faultline run: " << why << " ('faultline run --help' lists the flags)\n";
    status = 2;
    return std::nullopt;
  };
  if (f.listen) {
    if (auto problem = listen_address_problem(*f.listen)) return fail("--listen: " + *problem);
  }
  for (const auto& p : positionals) {
    if (p != "-") return fail("unexpected argument '" + p + "'");
    f.use_stdin = true;
  }
  std::erase_if(f.sources, [&](const std::string& s) { return s == "-" ? (f.use_stdin = true) : false; });
  if (auto bad = add_url_sinks(webhooks, WebhookFormat::json, f.url_sinks)) return fail(*bad);
  if (auto bad = add_url_sinks(alertmanagers, WebhookFormat::alertmanager, f.url_sinks)) return fail(*bad);
  status = 0;
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
