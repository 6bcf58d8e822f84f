// Private helpers shared by the decode room's sources (not part of the public API).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "faultline/decode.hpp"

namespace faultline::decode_detail {

// White space within a line: a line of nothing else (or of nothing) makes no record.
inline bool white_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// parse_line_meta with the reference used for year inference given explicitly: `fallback_reference` is used when
// context.reference is unset (the epoch); if that is the epoch too, the wall clock is read.
LineMeta parse_line_meta(std::string_view message, const TimeContext& context, Time fallback_reference);

// Removes ANSI and caret-notation escape sequences from data[0, size) in place; returns the new size.
std::size_t strip_ansi(char* data, std::size_t size);

// One line of the Kubernetes CRI log format: "<RFC3339Nano> <stdout|stderr> <P|F>[:tags] <message>".
struct CriLine {
  Time time{};
  bool is_stderr = false;
  bool partial = false;    // tag 'P': the message continues in the next line of the same stream
  std::size_t message = 0; // index of the message in the line
};

// parse_rfc3339 for the wrapper times of consecutive lines, which mostly share their date and second: the text up to
// the seconds is parsed once per second of log and then compared; what follows it is read here when it is a plain
// fraction and 'Z' (the container runtimes' form), else the whole text goes to parse_rfc3339. Same results.
class WrapperClock {
 public:
  // The time `text` gives, into `out`; false (out untouched) where parse_rfc3339 gives none. (A bool and an out
  // parameter rather than an optional: the optional came back through the stack, and reading its flag there right
  // after it was written stalled every line.)
  bool parse(std::string_view text, Time& out);

  // The time at `d` in the form the container runtimes write, read with no search: this clock's second again, '.',
  // one to nine digits, 'Z'. Its length (up to and with the 'Z'), or 0 for any other text (parse then reads it,
  // which also moves the clock to a new second). Reads d[0, kUsualTimeReads): the caller has those bytes.
  static constexpr std::size_t kUsualTimeReads = 30;
  std::size_t usual_time(const char* d, Time& out) const;

  // The header of a CRI line as the runtimes write it: usual_time, " stdout " or " stderr ", 'F' or 'P', ' '.
  // Fills time, is_stderr and partial as parse_cri does and returns the index of the space before the message; 0
  // for any other line.
  std::size_t usual_cri_header(std::string_view line, CriLine& out) const;

 private:
  static constexpr std::size_t kPrefix = 19;  // "2006-01-02T15:04:05"
  char prefix_[kPrefix] = {};
  bool valid_ = false;
  Time base_{};  // the prefix's time in UTC
};

// ---- The usual CRI header, inline: the block path (feed_cri_plain) reads every line's with these. ----

// The value of 8 decimal digits loaded from memory on a little-endian machine (the first byte the most significant),
// or -1 if any of them is not a digit.
inline std::int64_t eight_digits_loaded(std::uint64_t v) {
  // Each byte 0x30..0x39: its high nibble 3, and adding 6 does not carry into it.
  if (((v & 0xF0F0F0F0F0F0F0F0ull) | (((v + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) !=
      0x3333333333333333ull) {
    return -1;
  }
  v -= 0x3030303030303030ull;
  v = (v * 10) + (v >> 8);  // pairs of digits in every other byte
  v = (((v & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
       (((v >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
  return static_cast<std::int64_t>(v);
}

// The value of the n (1 to 8) decimal digits that end at `end`, with at least 8 bytes before `end` readable (the
// first digit the most significant), or -1 if any of them is not a digit. The bytes before the digits are read and
// set aside as leading zeros: no loop, and no branch per digit.
inline std::int64_t last_digits(const char* end, std::size_t n) {
  if constexpr (std::endian::native != std::endian::little) {
    std::int64_t r = 0;
    for (const char* p = end - n; p < end; ++p) {
      if (*p < '0' || *p > '9') return -1;
      r = r * 10 + (*p - '0');
    }
    return r;
  }
  std::uint64_t v;
  std::memcpy(&v, end - 8, 8);
  // The first 8 - n bytes in memory are the low ones: made '0'.
  const std::uint64_t before = n >= 8 ? 0 : (std::uint64_t{1} << (8 * (8 - n))) - 1;
  return eight_digits_loaded((v & ~before) | (0x3030303030303030ull & before));
}

// Nanoseconds of one unit of an n-digit fraction of a second.
inline constexpr std::int64_t kFractionScale[10] = {0,      100'000'000, 10'000'000, 1'000'000, 100'000,
                                                   10'000, 1'000,       100,        10,        1};

inline std::size_t WrapperClock::usual_time(const char* d, Time& out) const {
  if constexpr (std::endian::native != std::endian::little) return 0;
  if (!valid_ || std::memcmp(d, prefix_, kPrefix) != 0 || d[4] != '-' || d[10] != 'T' || d[kPrefix] != '.') return 0;
  // The fraction's length: the first byte of d[20, 28) that is no digit (each byte outside '0'..'9' gets its high
  // bit; a carry or borrow only runs from such a byte into later ones), else 8 or 9.
  std::uint64_t v;
  std::memcpy(&v, d + kPrefix + 1, 8);
  const std::uint64_t outside =
      ((v + 0x4646464646464646ull) | (v - 0x3030303030303030ull)) & 0x8080808080808080ull;
  std::size_t digits = outside != 0 ? static_cast<std::size_t>(std::countr_zero(outside)) / 8 : 8;
  if (digits == 8 && d[kPrefix + 9] >= '0' && d[kPrefix + 9] <= '9') digits = 9;
  const std::size_t zone = kPrefix + 1 + digits;
  if (digits == 0 || d[zone] != 'Z') return 0;
  // Their value: the last eight (or fewer) at once, a ninth before them by itself.
  std::int64_t value = last_digits(d + zone, std::min<std::size_t>(digits, 8));
  if (digits == 9) value += (d[kPrefix + 1] - '0') * 100'000'000;
  out = base_ + Duration(value * kFractionScale[digits]);
  return zone + 1;
}

inline std::size_t WrapperClock::usual_cri_header(std::string_view line, CriLine& out) const {
  // Enough bytes for every load (usual_time reads 30; the header is at most 30 + 10 bytes).
  if (line.size() < kUsualTimeReads + 10) return 0;
  const char* d = line.data();
  Time t;
  const std::size_t sp = usual_time(d, t);
  if (sp == 0 || d[sp] != ' ') return 0;
  // " stdout " or " stderr ", then the tag and the space before the message.
  std::uint64_t stream;
  std::memcpy(&stream, d + sp, 8);
  constexpr auto word = [](const char (&w)[9]) {
    std::uint64_t r = 0;
    for (int i = 7; i >= 0; --i) r = (r << 8) | static_cast<unsigned char>(w[i]);
    return r;
  };
  constexpr std::uint64_t kStdout = word(" stdout "), kStderr = word(" stderr ");
  const char tag = d[sp + 8];
  if ((stream != kStdout && stream != kStderr) || (tag != 'F' && tag != 'P') || d[sp + 9] != ' ') return 0;
  out.time = t;
  out.is_stderr = stream == kStderr;
  out.partial = tag == 'P';
  return sp + 9;
}

// Sets out.message after the header's closing space at `space` (0: no header; false).
inline bool cri_message_after(std::string_view line, std::size_t space, CriLine& out) {
  if (space == 0) return false;
  out.message = space < line.size() ? space + 1 : line.size();
  return true;
}
// A CRI line's header in any form the format allows (parse_cri less its shortcut for the usual one).
bool parse_cri_general(std::string_view line, CriLine& out, WrapperClock* clock);
// A CRI line's header: with a clock, the usual form is read first with no search (inline: the block path calls this
// for every line).
inline bool parse_cri(std::string_view line, CriLine& out, WrapperClock* clock = nullptr) {
  const std::size_t space = clock != nullptr ? clock->usual_cri_header(line, out) : 0;
  return space != 0 ? cri_message_after(line, space, out) : parse_cri_general(line, out, clock);
}
// Like parse_cri, but succeeds on a line prefix that holds at least the header (used for format detection).
bool looks_like_cri(std::string_view prefix);

// One line of docker's json-file driver: {"log":"...","stream":"stderr","time":"..."}.
struct DockerLine {
  std::optional<Time> time;
  bool is_stderr = false;
  bool partial = false;    // "log" did not end in "\n"
  bool truncated = false;  // the line was cut before the end of "log" (only when `cut` is passed)
  bool has_stream = false;
};
// Decodes `line` into `out` and `log`, the unescaped "log" string without its final '\n': a view into `line` when the
// string holds no other escape, else into `scratch` (which keeps its capacity: no allocation per line). `cut`: the
// line was cut short by the buffer limit, so an unterminated "log" string is accepted as a truncated one.
bool parse_docker(std::string_view line, bool cut, std::string& scratch, std::string_view& log, DockerLine& out,
                  WrapperClock* clock = nullptr);
// A whole line at `p` in the driver's own layout, {"log":"<text>\n","stream":"stdout|stderr","time":"<time>"}
// followed by '\n', whose text is a record as it is once unescaped (no CR, LF, ESC or '^' in it, escapes only of
// quote, backslash, slash, tab, backspace and form feed), read in one pass over the text: returns the line's length
// (the index of its '\n') and fills `log` (a view into the line, or into `scratch` when it held escapes) and `out` as
// parse_docker would; 0 for any other line (parse_docker reads it), for one longer than `cap`, and on a CPU without
// AVX2.
std::size_t docker_plain_line(const char* p, std::size_t len, std::size_t cap, std::string& scratch,
                              std::string_view& log, DockerLine& out, WrapperClock* clock);

// The vector code that finds runs of plain lines (raw and CRI framing): the best this CPU has. Tests pick a lesser one
// to check each against the line-by-line path; a pick the CPU cannot run gives the best it can. Returns the previous.
enum class VectorFraming : std::uint8_t { none = 0, avx2 = 1, avx512 = 2 };
VectorFraming vector_framing();
VectorFraming set_vector_framing(VectorFraming wanted);

}  // namespace faultline::decode_detail
