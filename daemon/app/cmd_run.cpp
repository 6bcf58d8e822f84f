// `faultline run` (cmd_run.hpp): flags → Config → Service, then the loop until a signal or the end of the input.
#include "cmd_run.hpp"

#include <spdlog/spdlog.h>

#include <iostream>

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

  Duration grace = config.shutdown_timeout;
  Service service(ServiceOptions{std::move(config)});
  if (flags->check_only) {
    auto rules = service.check();
    if (!rules) {
      spdlog::error("{}; nothing started", rules.error().message);
      return 2;
    }
    spdlog::info("config and {} rule(s) are valid", *rules);
    return 0;
  }

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
