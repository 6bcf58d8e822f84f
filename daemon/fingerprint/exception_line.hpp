// The one reading of "is this the last line of an exception": shared by the detector (may a line open a story?) and
// the signature (which line is the terminal one). Private to the fingerprint room.
#pragma once

#include <cctype>
#include <string_view>
#include <vector>

namespace faultline {
struct FailureSignature;
}

namespace faultline::fingerprint_detail {

// signature_of for lines whose logger prefixes the caller already removed: `stripped[i]` is
// strip_log_prefix(raw[i]) (the detector strips each line once, as it reads it).
FailureSignature signature_of_stripped(const std::vector<std::string_view>& raw,
                                       const std::vector<std::string_view>& stripped);

// The exception class at the start of `t` ("torch.distributed.DistStoreError: ..." → its class), or empty: a dotted
// identifier followed by ": " that ends in Error or Exception, or whose last part is a class name under a module
// path (triton.runtime.errors.OutOfResources, torch._dynamo.exc.BackendCompilerFailed); a class ending in Error or
// Exception also when ":" ends the line (the message printed on the lines below).
inline std::string_view exception_class(std::string_view t) {
  std::size_t i = 0;
  while (i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_' || t[i] == '.')) ++i;
  if (i == 0 || i >= t.size() || t[i] != ':') return {};
  // "pkg.SomeError:" ending the line: its message follows on the next lines (torch elastic's ChildFailedError).
  const bool message_below = i + 1 == t.size();
  if (!message_below && t[i + 1] != ' ') return {};
  if (!std::isalpha(static_cast<unsigned char>(t[0]))) return {};
  std::string_view type = t.substr(0, i);
  if (type.ends_with("Error") || type.ends_with("Exception")) return type;
  if (message_below) return {};
  const auto dot = type.rfind('.');
  if (dot == std::string_view::npos || dot + 1 >= type.size() || dot == 0) return {};
  if (!std::isupper(static_cast<unsigned char>(type[dot + 1]))) return {};
  // The module path is lower case (a package), not a sentence's "Mr.Smith".
  for (std::size_t k = 0; k < dot; ++k) {
    if (std::isupper(static_cast<unsigned char>(type[k]))) return {};
  }
  return type;
}

}  // namespace faultline::fingerprint_detail
