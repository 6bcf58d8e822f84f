// Secret files: read whole, whitespace trimmed (a trailing newline is not part of a token).
#include "faultline/secrets.hpp"

#include <cctype>

#include "faultline/durable_file.hpp"

namespace faultline {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

Result<std::string> read_secret_file(const std::string& path) {
  auto content = read_file(path);
  if (!content) return content.error();
  std::string s = trim(*content);
  if (s.empty()) return Error{path + " is empty"};
  return s;
}

}  // namespace faultline
