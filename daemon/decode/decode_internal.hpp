// Private helpers shared by the decode room's sources (not part of the public API).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "faultline/decode.hpp"

namespace faultline::decode_detail {

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
