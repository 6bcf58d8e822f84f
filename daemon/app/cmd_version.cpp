// `faultline version`: the version and the Hyperscan API it was built against.
#include <hs/hs.h>

#include <iostream>

#include "cli.hpp"
#include "commands.hpp"
#include "faultline/types.hpp"

namespace faultline::app {

int cmd_version(const Args& args) {
  cli::Parser cli("version", "Prints the version of faultline and of the Hyperscan API it is built with.");
  if (auto status = cli.handle(args, std::cout, std::cerr)) return *status;
  std::cout << "faultline " << faultline_version() << " (Hyperscan API: " << hs_version() << ")\n";
  return 0;
}

}  // namespace faultline::app
