// `faultline run`'s flags: parsed as they always were, then laid over the config. (The commands' shared CLI parser
// replaces this file.) Internal to the app.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "faultline/config.hpp"

namespace faultline::app {

extern const char* const kRunUsage;

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
  bool help = false;
};

// `argv` holds the arguments after "run". nullopt: a bad flag (the message went to standard error).
std::optional<RunFlags> parse_run_flags(int argc, char** argv);
// The flags over the config: sources, rules, state dir, listen, sinks, output, node name, logging.
void apply_run_flags(const RunFlags& flags, Config& config);

}  // namespace faultline::app
