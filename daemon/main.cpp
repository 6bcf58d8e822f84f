// faultline: log fingerprinting for GPU inference serving. This file only dispatches to the commands.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <iostream>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/cmd_run.hpp"

namespace {

using faultline::app::Args;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args&);
};

constexpr std::array kCommands{
    Command{"run", "follow logs and raise incidents (the daemon)", faultline::app::run_command},
    Command{"scan", "scan files or standard input once and print the incidents found", faultline::app::cmd_scan},
    Command{"fingerprints", "list the failure stories found in files, by fingerprint, and which rule claims them",
            faultline::app::cmd_fingerprints},
    Command{"check", "validate rule files and compile their patterns", faultline::app::cmd_check},
    Command{"test", "run the tests of rule files", faultline::app::cmd_test},
    Command{"rules", "list the loaded rules (rules list [--markdown]), show one (rules show ID), or draft one from a failure (rules draft --from ...)",
            faultline::app::cmd_rules},
    Command{"version", "print the version", faultline::app::cmd_version},
};

std::string usage() {
  std::string out = "usage: faultline <command> [options]\n\ncommands:\n";
  for (const auto& c : kCommands) {
    std::string name = c.name;
    name.resize(14, ' ');
    out += "  " + name + c.summary + "\n";
  }
  out += "\n'faultline <command> --help' describes a command.\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("faultline");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  if (argc < 2) {
    std::cerr << usage();
    return 2;
  }
  std::string command = argv[1];
  if (command == "--version" || command == "-V") command = "version";
  if (command == "-h" || command == "--help" || command == "help") {
    std::cout << usage();
    return 0;
  }
  const Args args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (command != c.name) continue;
    try {
      return c.run(args);
    } catch (const std::exception& e) {
      std::cerr << "faultline " << command << ": " << e.what() << "\n";
      return 2;
    }
  }
  std::cerr << "faultline: unknown command '" << command << "'\n" << usage();
  return 2;
}
