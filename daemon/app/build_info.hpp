// What the binary was built from, baked in when the build tree was configured (CMakeLists.txt, build_info.cpp.in).
// Internal to the app.
#pragma once

#include <string_view>

namespace faultline::app {

// The git commit of the source tree (12 hex digits, "-dirty" when it had uncommitted changes), or "unknown" when it
// was not a git checkout.
std::string_view build_commit();

}  // namespace faultline::app
