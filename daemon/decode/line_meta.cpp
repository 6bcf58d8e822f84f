// Time and level of one log message, for the shapes that inference-serving stacks print (vLLM, TensorRT-LLM,
// SGLang, Python logging, uvicorn, glog/torch, RFC 3339 CI logs, kernel/syslog). Hand-written scanners: each shape
// is tried only when the first byte fits, nothing allocates, no regex. Pure functions; thread-safe.
// Why one file of ~600 lines: every shape reader works on one cursor type (Cur) and one civil-time value (Stamp) that
// exist only for these scanners; keeping them in one translation unit keeps those types private and lets the
// compiler inline the readers into the three start-byte dispatchers, which run for every line that is looked at.
#include <algorithm>
#include <array>
#include <cstring>

#include "decode_internal.hpp"

namespace faultline {
namespace {

constexpr std::int64_t kNsPerSec = 1'000'000'000;

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
inline bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
inline bool is_space(char c) { return c == ' ' || c == '\t'; }

// A small cursor over the message; every reader fails without moving on a mismatch only where noted.
struct Cur {
  std::string_view s;
  std::size_t p = 0;

  bool end() const { return p >= s.size(); }
  char peek(std::size_t k = 0) const { return p + k < s.size() ? s[p + k] : '\0'; }
  bool lit(char c) {
    if (peek() != c || end()) return false;
    ++p;
    return true;
  }
  bool lit(std::string_view t) {
    if (s.substr(p, t.size()) != t) return false;
    p += t.size();
    return true;
  }
  // Exactly n digits.
  bool num(int n, int& out) {
    if (p + static_cast<std::size_t>(n) > s.size()) return false;
    int v = 0;
    for (int i = 0; i < n; ++i) {
      const char c = s[p + static_cast<std::size_t>(i)];
      if (!is_digit(c)) return false;
      v = v * 10 + (c - '0');
    }
    p += static_cast<std::size_t>(n);
    out = v;
    return true;
  }
  // 1..max digits.
  bool num_upto(int max, int& out) {
    int v = 0, n = 0;
    while (n < max && is_digit(peek())) {
      v = v * 10 + (s[p] - '0');
      ++p;
      ++n;
    }
    if (n == 0) return false;
    out = v;
    return true;
  }
  void skip_spaces() {
    while (!end() && is_space(s[p])) ++p;
  }
};

// A civil time read from a message; year < 0 means "not printed".
struct Stamp {
  int year = -1, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  std::int64_t nanos = 0;
  bool has_zone = false;
  std::int64_t zone_s = 0;  // offset east of UTC
};

// A year not printed (y < 0) admits February 29th: the year is inferred later.
unsigned max_day(int y, int m) {
  return (m == 2 && y < 0) ? 29u : days_in_month(y, static_cast<unsigned>(m));
}

// A Time (int64 nanoseconds) holds 1677-09-21 .. 2262-04-11: a printed year outside 1678..2261 is no timestamp.
bool valid_clock(const Stamp& t) {
  return (t.year < 0 || (t.year >= 1678 && t.year <= 2261)) && t.month >= 1 && t.month <= 12 && t.day >= 1 && static_cast<unsigned>(t.day) <= max_day(t.year, t.month) &&
         t.hour <= 23 && t.minute <= 59 && t.second <= 60;
}

// Optional ".123" or ",123" (1..9 digits kept, more ignored).
void read_fraction(Cur& c, Stamp& t) {
  if ((c.peek() == '.' || c.peek() == ',') && is_digit(c.peek(1))) {
    ++c.p;
    std::int64_t scale = 100'000'000;
    while (is_digit(c.peek())) {
      t.nanos += (c.s[c.p] - '0') * scale;
      scale /= 10;
      ++c.p;
    }
  }
}

// Optional zone right after the time: Z, +hh:mm, -hhmm, +hh.
void read_zone(Cur& c, Stamp& t) {
  const char z = c.peek();
  if (z == 'Z' || z == 'z') {
    ++c.p;
    t.has_zone = true;
    return;
  }
  if ((z == '+' || z == '-') && is_digit(c.peek(1)) && is_digit(c.peek(2))) {
    Cur d = c;
    ++d.p;
    int oh = 0, om = 0;
    d.num(2, oh);
    if (d.peek() == ':') {
      if (!is_digit(d.peek(1))) return;
      ++d.p;
      if (!d.num(2, om)) return;
    } else if (is_digit(d.peek())) {
      if (!d.num(2, om)) return;
    }
    if (is_digit(d.peek()) || oh > 23 || om > 59) return;
    t.has_zone = true;
    t.zone_s = (oh * 3600 + om * 60) * (z == '-' ? -1 : 1);
    c = d;
  }
}

// HH:MM:SS
bool read_hms(Cur& c, Stamp& t) { return c.num(2, t.hour) && c.lit(':') && c.num(2, t.minute) && c.lit(':') && c.num(2, t.second); }

// YYYY-MM-DD[T ]HH:MM:SS[.frac][zone]
bool read_iso(Cur& c, Stamp& t) {
  Cur d = c;
  if (!(d.num(4, t.year) && d.lit('-') && d.num(2, t.month) && d.lit('-') && d.num(2, t.day))) return false;
  const char sep = d.peek();
  if (sep != 'T' && sep != ' ' && sep != 't') return false;
  ++d.p;
  if (!read_hms(d, t)) return false;
  read_fraction(d, t);
  read_zone(d, t);
  if (!valid_clock(t)) return false;
  c = d;
  return true;
}

// Everything the scanners need to turn a Stamp into a Time.
struct Ctx {
  const TimeContext& tc;
  Time fallback;
  mutable std::optional<Time> ref;

  Time reference() const {
    if (!ref) {
      if (tc.reference != Time{}) ref = tc.reference;
      else if (fallback != Time{}) ref = fallback;
      else ref = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
    }
    return *ref;
  }
};

// Consecutive lines nearly always print the same date: remember the last date's day number (per thread; pure
// functions otherwise).
std::int64_t civil_days(int year, int month, int day) {
  struct Last {
    int year = 0, month = 0, day = 0;
    std::int64_t days = 0;
  };
  thread_local Last last;
  if (last.month != 0 && last.year == year && last.month == month && last.day == day) return last.days;
  last = {year, month, day, days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day))};
  return last.days;
}

std::int64_t stamp_ns(int year, const Stamp& t, std::int64_t offset_s) {
  const std::int64_t secs = civil_days(year, t.month, t.day) * 86400 + t.hour * 3600 + t.minute * 60 + t.second - offset_s;
  return secs * kNsPerSec + t.nanos;
}

// No year printed: the latest year that puts the time no more than a day after the reference.
int infer_year(const Stamp& t, std::int64_t ref, std::int64_t offset_s, bool& found) {
  const std::int64_t limit = ref + 86400 * kNsPerSec;
  std::int64_t local_days = (ref + offset_s * kNsPerSec) / (86400 * kNsPerSec);
  if ((ref + offset_s * kNsPerSec) % (86400 * kNsPerSec) < 0) --local_days;
  const auto ref_year = static_cast<int>(civil_from_days(local_days).year);
  found = true;
  for (int y = ref_year + 1; y >= ref_year - 8; --y) {
    if (t.month == 2 && t.day == 29 && !is_leap_year(y)) continue;
    if (stamp_ns(y, t, offset_s) <= limit) return y;
  }
  found = false;
  return ref_year;
}

Time to_time(const Stamp& t, const Ctx& ctx) {
  const std::int64_t offset_s = t.has_zone ? t.zone_s : ctx.tc.utc_offset.count();
  if (t.year >= 0) return Time(Duration(stamp_ns(t.year, t, offset_s)));
  const std::int64_t ref = ctx.reference().time_since_epoch().count();
  // The year depends on the date and, only near the reference, on the time of day. A date whose first and last
  // instants get the same year gets it at every instant (the choice is monotonic in time), so it is remembered.
  struct Last {
    std::int64_t ref = 0, offset_s = 0;
    int month = 0, day = 0, year = 0;
  };
  thread_local Last last;
  if (last.month != 0 && last.ref == ref && last.offset_s == offset_s && last.month == t.month && last.day == t.day) {
    return Time(Duration(stamp_ns(last.year, t, offset_s)));
  }
  bool found = false;
  const int year = infer_year(t, ref, offset_s, found);
  if (found) {
    Stamp first = t, end = t;
    first.hour = first.minute = first.second = 0;
    first.nanos = 0;
    end.hour = 23;
    end.minute = 59;
    end.second = 60;
    end.nanos = kNsPerSec - 1;
    bool f1 = false, f2 = false;
    if (infer_year(first, ref, offset_s, f1) == year && f1 && infer_year(end, ref, offset_s, f2) == year && f2) {
      last = {ref, offset_s, t.month, t.day, year};
    }
  }
  return Time(Duration(stamp_ns(year, t, offset_s)));
}

// Upper-case level words as printed by Python logging, vLLM, uvicorn, TensorRT-LLM.
std::optional<Level> level_word(std::string_view w) {
  switch (w.size()) {
    case 4:
      if (w == "INFO") return Level::info;
      if (w == "WARN") return Level::warning;
      break;
    case 5:
      if (w == "ERROR") return Level::error;
      if (w == "DEBUG") return Level::debug;
      if (w == "TRACE") return Level::trace;
      if (w == "FATAL") return Level::critical;
      break;
    case 6:
      if (w == "NOTICE") return Level::info;
      break;
    case 7:
      if (w == "WARNING") return Level::warning;
      if (w == "VERBOSE") return Level::trace;
      break;
    case 8:
      if (w == "CRITICAL") return Level::critical;
      break;
    default: break;
  }
  return std::nullopt;
}

std::optional<Level> lower_level_word(std::string_view w) {
  if (w.size() < 4 || w.size() > 8) return std::nullopt;
  char up[8];
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (!is_lower(w[i])) return std::nullopt;
    up[i] = static_cast<char>(w[i] - 'a' + 'A');
  }
  return level_word(std::string_view(up, w.size()));
}

// glog / TensorRT single letters.
std::optional<Level> level_letter(char c) {
  switch (c) {
    case 'V': return Level::trace;
    case 'D': return Level::debug;
    case 'I': return Level::info;
    case 'W': return Level::warning;
    case 'E': return Level::error;
    case 'F': return Level::critical;
    default: return std::nullopt;
  }
}

// After a leading time: the level is one of the next few tokens ("- name - ERROR -", "xinference.core 1234 ERROR",
// "| ERROR |", "INFO 1234 [file.py:12]"). The first token may be lower case ("info"); later ones must be upper case.
Level scan_level_tokens(Cur c) {
  int tokens = 0;
  for (int guard = 0; guard < 8 && tokens < 3; ++guard) {
    c.skip_spaces();
    if (c.end()) break;
    const char f = c.peek();
    if ((f == '-' || f == '|') && (c.p + 1 >= c.s.size() || is_space(c.peek(1)))) {
      ++c.p;
      continue;
    }
    std::size_t b = c.p;
    while (!c.end() && !is_space(c.s[c.p])) ++c.p;
    std::string_view tok = c.s.substr(b, c.p - b);
    if (!tok.empty() && tok.front() == '[') tok.remove_prefix(1);
    while (!tok.empty() && (tok.back() == ']' || tok.back() == ':')) tok.remove_suffix(1);
    if (auto l = level_word(tok)) return *l;
    if (tokens == 0) {
      if (auto l = lower_level_word(tok)) return *l;
    }
    ++tokens;
  }
  return Level::unknown;
}

// "[TRT-LLM] [RANK 0] [E]", "[TRT] [I]", "[TensorRT-LLM][ERROR]": a chain of bracketed tags ending in a level.
bool read_trt_tags(Cur& c, Level& level) {
  Cur d = c;
  bool product = false;
  for (int i = 0; i < 4; ++i) {
    if (!d.lit('[')) return false;
    const std::size_t b = d.p;
    const void* close = std::memchr(d.s.data() + b, ']', std::min<std::size_t>(d.s.size() - b, 24));
    if (close == nullptr) return false;
    const std::size_t e = static_cast<std::size_t>(static_cast<const char*>(close) - d.s.data());
    const std::string_view tag = d.s.substr(b, e - b);
    d.p = e + 1;
    if (tag == "TRT-LLM" || tag == "TRT" || tag == "TensorRT-LLM") {
      product = true;
    } else if (tag.size() > 5 && tag.substr(0, 5) == "RANK ") {
      // rank tag, keep going
    } else if (product && tag.size() == 1 && level_letter(tag[0])) {
      level = *level_letter(tag[0]);
      c = d;
      return true;
    } else if (product && level_word(tag)) {
      level = *level_word(tag);
      c = d;
      return true;
    } else {
      return false;
    }
    if (d.peek() == ' ') ++d.p;
  }
  return false;
}

constexpr std::array<std::string_view, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

int month_abbrev(std::string_view s) {
  if (s.size() < 3) return 0;
  for (std::size_t i = 0; i < kMonths.size(); ++i) {
    if (s.substr(0, 3) == kMonths[i]) return static_cast<int>(i) + 1;
  }
  return 0;
}

// "Nov 29 10:08:01" / "Nov  2 10:08:01" (syslog, no year).
bool read_syslog_stamp(Cur& c, Stamp& t) {
  Cur d = c;
  t.month = month_abbrev(d.s.substr(d.p));
  if (t.month == 0) return false;
  d.p += 3;
  if (!d.lit(' ')) return false;
  if (d.peek() == ' ') ++d.p;
  if (!d.num_upto(2, t.day) || !d.lit(' ') || !read_hms(d, t)) return false;
  read_fraction(d, t);
  if (!valid_clock(t)) return false;
  c = d;
  return true;
}

enum class Shape { none, matched };

// Level word at line start: vLLM "INFO 11-29 10:08:01 [f.py:1]", uvicorn "INFO:     ...", glog "E1129 10:08:01.1",
// syslog "Nov 29 10:08:01 host kernel:".
Shape upper_start(Cur c, const Ctx& ctx, LineMeta& out) {
  const char c0 = c.peek();
  // glog / abseil: E1129 10:08:01.123456 12345 file.cc:12]
  if (auto l = level_letter(c0); l && is_digit(c.peek(1))) {
    Cur d = c;
    ++d.p;
    Stamp t;
    if (d.num(2, t.month) && d.num(2, t.day) && d.lit(' ') && read_hms(d, t)) {
      read_fraction(d, t);
      if (valid_clock(t) && (d.end() || is_space(d.peek()) || d.peek() == ']')) {
        out.level = *l;
        out.time = to_time(t, ctx);
        return Shape::matched;
      }
    }
  }
  std::size_t e = c.p;
  while (e < c.s.size() && is_upper(c.s[e])) ++e;
  const std::string_view word = c.s.substr(c.p, e - c.p);
  if (auto l = level_word(word)) {
    Cur d = c;
    d.p = e;
    if (d.peek() == ':') {  // uvicorn "ERROR:    Exception in ASGI application", Python "WARNING:root:"
      out.level = *l;
      return Shape::matched;
    }
    if (d.lit(' ') && is_digit(d.peek())) {
      Stamp t;
      if (d.num(2, t.month) && d.lit('-') && d.num(2, t.day) && d.lit(' ') && read_hms(d, t)) {
        read_fraction(d, t);
        if (valid_clock(t)) {
          out.level = *l;
          out.time = to_time(t, ctx);
          return Shape::matched;
        }
      }
    }
    return Shape::none;
  }
  if (word.size() == 1) {
    Stamp t;
    Cur d = c;
    if (read_syslog_stamp(d, t)) {
      out.time = to_time(t, ctx);
      return Shape::matched;
    }
  }
  return Shape::none;
}

// Time at line start: Python logging, xinference, FastChat, RFC 3339 CI logs; llama.cpp relative "0.04.466.952 I".
Shape digit_start(Cur c, const Ctx& ctx, LineMeta& out) {
  Stamp t;
  if (read_iso(c, t)) {
    out.time = to_time(t, ctx);
    out.level = scan_level_tokens(c);
    return Shape::matched;
  }
  // llama.cpp server: "M.SS.mmm.uuu L component:" (time relative to start: level only).
  Cur d = c;
  int v = 0;
  if (d.num_upto(4, v) && d.lit('.') && d.num(2, v) && d.lit('.') && d.num(3, v) && d.lit('.') && d.num(3, v) &&
      d.lit(' ')) {
    if (auto l = level_letter(d.peek()); l && d.peek(1) == ' ') {
      out.level = *l;
      return Shape::matched;
    }
  }
  return Shape::none;
}

// Bracketed starts: TensorRT-LLM, SGLang, bracketed RFC 3339, glog inside brackets (torch), kernel uptime, dmesg -T.
Shape bracket_start(Cur c, const Ctx& ctx, LineMeta& out) {
  const char c1 = c.peek(1);
  if (is_digit(c1)) {
    Cur d = c;
    ++d.p;
    Stamp t;
    // TensorRT-LLM: [11/29/2026-10:08:01] [TRT-LLM] [W]
    if (d.peek(2) == '/') {
      if (d.num(2, t.month) && d.lit('/') && d.num(2, t.day) && d.lit('/') && d.num(4, t.year) && d.lit('-') &&
          read_hms(d, t) && valid_clock(t) && d.lit(']')) {
        out.time = to_time(t, ctx);
        d.skip_spaces();
        Level l = Level::unknown;
        if (read_trt_tags(d, l)) out.level = l;
        return Shape::matched;
      }
      return Shape::none;
    }
    // SGLang [2026-09-21 13:38:19 TP1], Buildkite [2026-01-31T04:40:19Z]
    if (read_iso(d, t)) {
      std::size_t close = std::string_view::npos;
      if (d.peek() == ']') {
        close = d.p;
      } else if (d.peek() == ' ') {
        // SGLang rank tags: " TP1", " DP0 TP3", " PP0 TP1 EP2"
        for (std::size_t i = d.p; i < d.s.size() && i < d.p + 40; ++i) {
          const char ch = d.s[i];
          if (ch == ']') {
            close = i;
            break;
          }
          if (!(is_upper(ch) || is_digit(ch) || ch == ' ' || ch == '_' || ch == '-' || is_lower(ch))) break;
        }
      }
      if (close == std::string_view::npos) return Shape::none;
      out.time = to_time(t, ctx);
      d.p = close + 1;
      if (d.peek() == ' ') {
        // "[time] LEVEL msg" is taken only for an explicit upper-case level word.
        d.skip_spaces();
        std::size_t e = d.p;
        while (e < d.s.size() && is_upper(d.s[e])) ++e;
        if (e == d.s.size() || d.s[e] == ' ' || d.s[e] == ':') {
          if (auto l = level_word(d.s.substr(d.p, e - d.p))) out.level = *l;
        }
      }
      return Shape::matched;
    }
    return Shape::none;  // kernel uptime "[12345.678901]" and anything else: no absolute time
  }
  if (c1 == 'T') {
    Cur d = c;
    Level l = Level::unknown;
    if (read_trt_tags(d, l)) {
      out.level = l;
      return Shape::matched;
    }
  }
  // glog inside brackets (torch c10d): [E1129 10:08:01.123456 ...] or [E ProcessGroupNCCL.cpp:563]; TRT-style [W]
  if (auto l = level_letter(c1)) {
    const char c2 = c.peek(2);
    if (is_digit(c2)) {
      Cur d = c;
      ++d.p;
      LineMeta m;
      if (upper_start(d, ctx, m) == Shape::matched && m.time) {
        out = m;
        return Shape::matched;
      }
    } else if (c2 == ']' && c.peek(3) == ' ') {
      out.level = *l;
      return Shape::matched;
    } else if (c2 == ' ') {
      // "[E file.cpp:563]": a source location then ']'
      std::size_t i = c.p + 3, n = c.s.size();
      const std::size_t b = i;
      while (i < n && i < b + 64 && c.s[i] != ']' && c.s[i] != ' ') ++i;
      const std::string_view loc = c.s.substr(b, i - b);
      const std::size_t colon = loc.rfind(':');
      if (i < n && c.s[i] == ']' && colon != std::string_view::npos && colon + 1 < loc.size() &&
          is_digit(loc[colon + 1])) {
        out.level = *l;
        return Shape::matched;
      }
    }
  }
  // dmesg -T: [Wed Jun 24 15:44:42 2026]
  if (is_upper(c1) && c.peek(4) == ' ') {
    Cur d = c;
    d.p += 5;
    Stamp t;
    if (read_syslog_stamp(d, t) && d.lit(' ') && d.num(4, t.year) && d.lit(']') && valid_clock(t)) {
      out.time = to_time(t, ctx);
      return Shape::matched;
    }
  }
  return Shape::none;
}

// Prefixes that wrap a line without being its shape: process tags "(EngineCore_DP0 pid=88) ", torch "[rank0]: ",
// docker compose "sglang-1  | ", CI gutters "  | ", TUI frames "│ ". Returns true and moves on if one is there.
bool skip_prefix(Cur& c) {
  const std::size_t start = c.p;
  c.skip_spaces();
  const char c0 = c.peek();
  if (c0 == '(') {
    // "(name pid=N)" within 96 bytes, nothing nested.
    const char* b = c.s.data() + c.p + 1;
    const std::size_t span = std::min<std::size_t>(c.s.size() - c.p - 1, 95);
    const auto* close = static_cast<const char*>(std::memchr(b, ')', span));
    if (close == nullptr) return c.p != start;
    const std::string_view inside(b, static_cast<std::size_t>(close - b));
    if (inside.find('(') != std::string_view::npos || inside.find('\n') != std::string_view::npos) return c.p != start;
    if (inside.find("pid=") != std::string_view::npos) {
      c.p = static_cast<std::size_t>(close - c.s.data()) + 1;
      c.skip_spaces();
      return true;
    }
  } else if (c0 == '[' && c.s.substr(c.p, 5) == "[rank") {
    Cur d = c;
    d.p += 5;
    int r = 0;
    if (d.num_upto(6, r) && d.lit(']') && d.lit(':')) {
      d.skip_spaces();
      c = d;
      return true;
    }
  } else if (c0 == '|' && (is_space(c.peek(1)) || c.p + 1 == c.s.size())) {
    ++c.p;
    c.skip_spaces();
    return true;
  } else if (c0 == '\xE2' && c.peek(1) == '\x94' && (c.peek(2) == '\x82' || c.peek(2) == '\x83')) {  // │ ┃
    c.p += 3;
    c.skip_spaces();
    return true;
  } else if (is_lower(c0) || is_upper(c0) || is_digit(c0)) {
    // docker compose: "<service>-<n>  | "
    std::size_t i = c.p;
    const std::size_t n = c.s.size();
    while (i < n && i < c.p + 64 && (is_lower(c.s[i]) || is_upper(c.s[i]) || is_digit(c.s[i]) || c.s[i] == '-' ||
                                     c.s[i] == '_' || c.s[i] == '.')) {
      ++i;
    }
    if (i < n && c.s[i] == ' ') {
      std::size_t j = i;
      while (j < n && c.s[j] == ' ') ++j;
      if (j < n && c.s[j] == '|' && (j + 1 == n || c.s[j + 1] == ' ')) {
        c.p = j + 1;
        c.skip_spaces();
        return true;
      }
    }
  }
  return c.p != start;
}

}  // namespace

namespace decode_detail {

LineMeta parse_line_meta(std::string_view message, const TimeContext& context, Time fallback_reference) {
  LineMeta out;
  const Ctx ctx{context, fallback_reference, std::nullopt};
  Cur c{message, 0};
  for (int round = 0; round < 6 && !c.end(); ++round) {
    const char c0 = c.peek();
    Shape s = Shape::none;
    if (c0 == '[') s = bracket_start(c, ctx, out);
    else if (is_upper(c0)) s = upper_start(c, ctx, out);
    else if (is_digit(c0)) s = digit_start(c, ctx, out);
    if (s == Shape::matched) return out;
    out = LineMeta{};
    if (!skip_prefix(c)) break;
  }
  return out;
}

}  // namespace decode_detail

LineMeta parse_line_meta(std::string_view message, const TimeContext& context) {
  return decode_detail::parse_line_meta(message, context, Time{});
}

}  // namespace faultline
