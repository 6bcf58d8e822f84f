// `faultline run`: the daemon. Flags and the config file become a Config; a Service (service.hpp) does the rest —
// tails the sources into the pipeline, emits incidents, checkpoints, reloads rules on SIGHUP or when the rule files
// change, and drains on SIGTERM/SIGINT.
#pragma once

#include "cli.hpp"

namespace faultline::app {

// `args`: the arguments after "run". Returns the process exit status.
int run_command(const Args& args);

}  // namespace faultline::app
