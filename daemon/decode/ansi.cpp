// Removal of terminal escape sequences (colours, titles, charset switches) and of their caret-notation copies
// ("^[[1;36m", as shown by `cat -v` and pasted into issues), so rules see the words the program printed.
#include <cstring>

#include "decode_internal.hpp"

namespace faultline {
namespace {

constexpr char kEsc = '\x1b';
constexpr char kBel = '\x07';
constexpr std::size_t kMaxOsc = 1024;  // an unterminated OSC longer than this is not taken as one

// CSI body from `i` (after the introducer): parameters, intermediates, one final byte. Returns the index after the
// final byte, or 0 when the body is not a complete CSI sequence.
std::size_t csi_end(const char* d, std::size_t n, std::size_t i) {
  while (i < n && d[i] >= 0x30 && d[i] <= 0x3F) ++i;
  while (i < n && d[i] >= 0x20 && d[i] <= 0x2F) ++i;
  if (i < n && d[i] >= 0x40 && d[i] <= 0x7E) return i + 1;
  return 0;
}

// String body (OSC, DCS, ...) from `i` up to BEL, ESC '\', or their caret forms "^G" and "^[\". 0 if unterminated.
std::size_t string_end(const char* d, std::size_t n, std::size_t i) {
  const std::size_t stop = n < i + kMaxOsc ? n : i + kMaxOsc;
  for (; i < stop; ++i) {
    const char c = d[i];
    if (c == kBel) return i + 1;
    if (c == kEsc && i + 1 < n && d[i + 1] == '\\') return i + 2;
    if (c == '^' && i + 1 < n) {
      if (d[i + 1] == 'G') return i + 2;
      if (d[i + 1] == '[' && i + 2 < n && d[i + 2] == '\\') return i + 3;
    }
  }
  return 0;
}

// Length of the escape sequence starting with a real ESC at `r` (at least 1: a stray ESC is dropped too).
std::size_t esc_len(const char* d, std::size_t n, std::size_t r) {
  if (r + 1 >= n) return 1;
  const char k = d[r + 1];
  if (k == '[') {
    const std::size_t e = csi_end(d, n, r + 2);
    if (e != 0) return e - r;
    // Cut-off CSI: drop the parameter bytes that belong to it.
    std::size_t i = r + 2;
    while (i < n && d[i] >= 0x20 && d[i] <= 0x3F) ++i;
    return i - r;
  }
  if (k == ']' || k == 'P' || k == 'X' || k == '^' || k == '_') {
    const std::size_t e = string_end(d, n, r + 2);
    return e != 0 ? e - r : 2;
  }
  if (k == '(' || k == ')' || k == '*' || k == '+') return r + 2 < n ? 3 : 2;
  if (k >= 0x30 && k <= 0x7E) return 2;
  return 1;
}

// Length of a caret-notation sequence at `r` ("^[[...m", "^[]...^G", "^[(B"), 0 if there is none.
std::size_t caret_len(const char* d, std::size_t n, std::size_t r) {
  if (r + 2 >= n || d[r + 1] != '[') return 0;
  const char k = d[r + 2];
  if (k == '[') {
    // Parameters and a final byte only: "^[[" is also plain text often enough ("^[[ x" is not a sequence).
    std::size_t i = r + 3;
    while (i < n && d[i] >= 0x30 && d[i] <= 0x3F) ++i;
    return i < n && d[i] >= 0x40 && d[i] <= 0x7E ? i + 1 - r : 0;
  }
  if (k == ']') {
    const std::size_t e = string_end(d, n, r + 3);
    return e != 0 ? e - r : 0;
  }
  if ((k == '(' || k == ')') && r + 3 < n && d[r + 3] >= 0x30 && d[r + 3] <= 0x7E) return 4;
  return 0;
}

}  // namespace

namespace decode_detail {

std::size_t strip_ansi(char* d, std::size_t n) {
  std::size_t r = 0;
  // Skip the clean prefix quickly.
  while (r < n && d[r] != kEsc && d[r] != '^') ++r;
  std::size_t w = r;
  while (r < n) {
    const char c = d[r];
    if (c == kEsc) {
      r += esc_len(d, n, r);
      continue;
    }
    if (c == '^') {
      const std::size_t len = caret_len(d, n, r);
      if (len != 0) {
        r += len;
        continue;
      }
    }
    d[w++] = c;
    ++r;
  }
  return w;
}

}  // namespace decode_detail

void strip_ansi(std::string& text) { text.resize(decode_detail::strip_ansi(text.data(), text.size())); }

}  // namespace faultline
