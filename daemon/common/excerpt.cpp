// excerpt (types.hpp): the bounded echo of user input in messages.
#include <string>

#include "faultline/types.hpp"

namespace faultline {

std::string excerpt(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 sequence
  std::string out(text.substr(0, n));
  out += "\u2026 (";
  out += std::to_string(text.size());
  out += " bytes)";
  return out;
}

}  // namespace faultline
