// faultline: log fingerprinting for GPU inference serving. This file only dispatches to the commands.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/cmd_run.hpp"

namespace {

constexpr const char* kUsage = R"(usage: faultline <command> [options]

commands:
  run      follow logs and raise incidents (the daemon)
  scan     scan files or standard input once and print the incidents found
  check    validate rule files and compile their patterns
  test     run the tests of rule files
  rules    list the loaded rules (rules list [--markdown])
  version  print the version

'faultline <command> --help' describes a command.
)";

}  // namespace

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("faultline");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  using namespace faultline::app;
  try {
    if (command == "scan") return cmd_scan(args);
    if (command == "check") return cmd_check(args);
    if (command == "test") return cmd_test(args);
    if (command == "rules") return cmd_rules(args);
    if (command == "version" || command == "--version") return cmd_version(args);
    if (command == "run") return run_command(argc - 2, argv + 2);
    if (command == "-h" || command == "--help" || command == "help") {
      std::cout << kUsage;
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "faultline " << command << ": " << e.what() << "\n";
    return 2;
  }
  std::cerr << "faultline: unknown command '" << command << "'\n" << kUsage;
  return 2;
}
