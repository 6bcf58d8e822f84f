// secrets: tokens and keys kept in files (the API token, a sink's bearer token, an HMAC secret), read when needed so
// a rotated secret takes effect without a restart. Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "faultline/result.hpp"

namespace faultline {

// `text` without leading and trailing whitespace.
std::string trim(std::string_view text);

// The file's content, trimmed. An unreadable or (after trimming) empty file is an Error.
Result<std::string> read_secret_file(const std::string& path);

}  // namespace faultline
