// Matching a path against a source's glob after the fact (which configured source a checkpointed file came from).
// Stateless.
#pragma once

#include <string>

namespace faultline::tail {

// True when expand_glob(pattern) could have produced `path` (the same components, the same matching rules).
bool glob_matches(const std::string& pattern, const std::string& path);

}  // namespace faultline::tail
