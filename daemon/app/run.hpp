// `faultline run`: the daemon. Tails the configured sources into the pipeline, writes incidents as JSON lines and
// hands them to the outputs (HTTP API, metrics, webhooks), checkpoints read offsets with the correlator state,
// reloads rules on SIGHUP or when the rule files change, and drains on SIGTERM/SIGINT.
#pragma once

namespace faultline::app {

// `argv` holds the arguments after "run". Returns the process exit status.
int run_command(int argc, char** argv);

}  // namespace faultline::app
