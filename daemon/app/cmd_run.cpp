// `faultline run` (cmd_run.hpp): flags → Config → Service, then the loop until a signal or the end of the input.
#include "cmd_run.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <iostream>
#include <string>

#include "faultline/config.hpp"
#include "faultline/service.hpp"
#include "run_flags.hpp"

namespace faultline::app {

int run_command(const Args& args) {
  int status = 0;
  auto flags = parse_run_flags(args, status);
  if (!flags) return status;

  // Config: the file (every problem reported with its position), then the flags over it.
  ConfigResult loaded;
  if (flags->config.empty()) {
    loaded.config = default_config();
  } else {
    loaded = load_config(flags->config);
  }
  Config config = std::move(loaded.config);
  apply_run_flags(*flags, config);
  setup_logging(config.log);
  log_diagnostics(loaded.diagnostics);
  if (!loaded.ok()) {
    spdlog::error("{} error(s) in the config; nothing started", error_count(loaded.diagnostics));
    return 2;
  }
  if (config.sources.empty()) {
    spdlog::error("no sources: give --source, '-' or `sources:` in the config");
    return 2;
  }

  if (flags->check_only) {
    // The pre-flight: what the start would refuse, with no side effects; plain lines, as `faultline check` prints.
    Preflight checked = preflight(config);
    for (const auto& d : checked.diagnostics) std::cerr << d.str() << "\n";
    if (!checked.ok()) {
      std::cerr << error_count(checked.diagnostics) << " error(s); faultline run would not start\n";
      return 2;
    }
    std::cerr << (config.file.empty() ? std::string("the built-in config") : config.file) << " and " << checked.rules
              << (checked.rules == 1 ? " rule are" : " rules are") << " valid\n";
    return 0;
  }

  // Incidents on a terminal read as `scan` prints them; JSON lines when piped or with --output.
  if (!flags->output && config.output == "-" && ::isatty(STDOUT_FILENO) != 0) config.output_text = true;
  Duration grace = config.shutdown_timeout;
  Service service(ServiceOptions{std::move(config), nullptr, flags->start_at});

  // Signals are blocked before any thread starts (the outputs' and the reloader's inherit the mask) and read from a
  // signalfd in the loop.
  block_signals();
  if (auto started = service.start(); !started) {
    spdlog::error("{}; nothing started", started.error().message);
    return 2;
  }
  run_service_loop(service);
  service.stop(grace);
  return 0;
}

}  // namespace faultline::app
