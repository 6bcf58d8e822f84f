// `faultline run`'s flags: declared on the commands' one CLI parser (cli.hpp), then laid over the config. Internal to
// the app.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "faultline/config.hpp"

namespace faultline::app {

struct RunFlags {
  std::string config;
  std::vector<std::string> sources;
  bool use_stdin = false;
  std::vector<std::string> rules;
  std::optional<std::string> state_dir, listen, output, node_name, log_format, log_level;
  std::vector<SinkConfig> url_sinks;  // --webhook / --alertmanager, added to the config's sinks
  std::optional<ContainerFormat> format;
  std::optional<StartAt> start_at;
  bool check_only = false;
};

// The flags of `args` (the arguments after "run"). nullopt: the command is over — its usage was printed (status 0)
// or a flag was wrong (the message went to standard error, status 2); `status` says which.
std::optional<RunFlags> parse_run_flags(const Args& args, int& status);
// The flags over the config: sources, rules, state dir, listen, sinks, output, node name, logging.
void apply_run_flags(const RunFlags& flags, Config& config);

}  // namespace faultline::app
