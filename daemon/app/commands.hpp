// app: the command line. Each command is a function over its own arguments (after the command name), parsed by the
// one CLI parser (cli.hpp). Internal to the binary and the tests; the rooms below know nothing of it.
#pragma once

#include "cli.hpp"

namespace faultline::app {

int cmd_scan(const Args& args);
int cmd_fingerprints(const Args& args);
int cmd_check(const Args& args);
int cmd_test(const Args& args);
int cmd_rules(const Args& args);
int cmd_rules_draft(const Args& args);  // `rules draft` (cmd_rules_draft.cpp)
int cmd_version(const Args& args);

}  // namespace faultline::app
