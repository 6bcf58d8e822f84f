// The character and word tests both halves of the fingerprint room read lines with (normalise.cpp, signature.cpp).
// Private to the room.
#pragma once

#include <algorithm>
#include <string_view>

namespace faultline::fingerprint_detail {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
inline bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline bool is_space_or_tab(char c) { return c == ' ' || c == '\t'; }

// glog's severity and date: I1201, E0420, F0420.
inline bool glog_head(std::string_view w) {
  return w.size() == 5 && (w[0] == 'I' || w[0] == 'W' || w[0] == 'E' || w[0] == 'F') &&
         std::all_of(w.begin() + 1, w.end(), is_digit);
}

// The text up to the first blank.
inline std::string_view next_word(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && !is_space_or_tab(s[n])) ++n;
  return s.substr(0, n);
}

}  // namespace faultline::fingerprint_detail
