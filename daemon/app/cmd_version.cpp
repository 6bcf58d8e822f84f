// `faultline version` (also --version, -V): the version, the commit it was built from and the Hyperscan API.
#include <hs/hs.h>

#include <iostream>

#include <string>

#include "build_info.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "faultline/match.hpp"
#include "faultline/types.hpp"

namespace faultline::app {

int cmd_version(const Args& args) {
  cli::Parser cli("version", "Prints the version of faultline, the git commit it was built from (\"unknown\" when "
                             "it was not built from a git checkout) and the Hyperscan API it is built with.");
  if (auto status = cli.handle(args, std::cout, std::cerr)) return *status;
  std::string hs = hs_version();
  if (auto space = hs.find(' '); space != std::string::npos) hs.resize(space);  // "5.4.9 2023-04-19": the release
  std::cout << "faultline " << faultline_version() << " (commit " << build_commit() << ", Hyperscan API " << hs << ", "
            << hyperscan_engine() << ")\n";
  return 0;
}

}  // namespace faultline::app
