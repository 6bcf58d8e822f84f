// Container log wrappers: the Kubernetes CRI line format and docker's json-file driver. The docker parser is a
// small dedicated JSON reader (object of strings, other values skipped) so the hot path needs no JSON library.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "decode_internal.hpp"

namespace faultline {

std::string_view to_string(ContainerFormat format) {
  switch (format) {
    case ContainerFormat::auto_detect: return "auto";
    case ContainerFormat::raw: return "raw";
    case ContainerFormat::cri: return "cri";
    case ContainerFormat::docker: return "docker";
  }
  return "auto";
}

std::optional<ContainerFormat> parse_container_format(std::string_view text) {
  if (text == "auto") return ContainerFormat::auto_detect;
  if (text == "raw") return ContainerFormat::raw;
  if (text == "cri") return ContainerFormat::cri;
  if (text == "docker") return ContainerFormat::docker;
  return std::nullopt;
}

namespace decode_detail {
namespace {

// The index of the first ' ' in `line`, or npos: the first 32 bytes looked at at once where the line has them (a
// CRI header's space follows a timestamp of 20 to 35 bytes).
std::size_t first_space(std::string_view line) {
#if defined(__SSE2__)
  if (line.size() >= 32) {
    const __m128i space = _mm_set1_epi8(' ');
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(line.data()));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(line.data() + 16));
    const auto m = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, space))) |
                   (static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(b, space))) << 16);
    if (m != 0) return static_cast<std::size_t>(std::countr_zero(m));
  }
#endif
  return line.find(' ');
}

bool from_rfc3339(std::string_view text, Time& out) {
  const auto t = parse_rfc3339(text);
  if (t) out = *t;
  return t.has_value();
}

// "<time> <stream> <tag>" header; fills `out` and returns the index just after the tag, or 0.
std::size_t cri_header(std::string_view line, CriLine& out, bool parse_time, WrapperClock* clock = nullptr) {
  // The timestamp is RFC 3339 with 'T' and a zone: at least "2006-01-02T15:04:05Z".
  const std::size_t sp = first_space(line);
  if (sp == std::string_view::npos || sp < 20 || sp > 40 || line[4] != '-' || line[10] != 'T') return 0;
  if (parse_time) {
    if (clock != nullptr) {
      if (!clock->parse(line.substr(0, sp), out.time)) return 0;
    } else if (!from_rfc3339(line.substr(0, sp), out.time)) {
      return 0;
    }
  }
  std::size_t p = sp + 1;
  const std::string_view s = line.substr(p, 7);
  if (s == "stdout " || s == "stderr ") {
    out.is_stderr = s[3] == 'e';
  } else {
    return 0;
  }
  p += 7;
  if (p >= line.size() || (line[p] != 'P' && line[p] != 'F')) return 0;
  out.partial = line[p] == 'P';
  ++p;
  // Further tags may follow after ':' ("F:x"); they end at the space before the message.
  if (p < line.size() && line[p] == ':') {
    while (p < line.size() && line[p] != ' ') ++p;
  }
  if (p < line.size() && line[p] != ' ') return 0;
  return p;
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r'; }

struct Json {
  std::string_view s;
  std::size_t p = 0;
  bool cut = false;  // the text was cut short: running off the end inside "log" is allowed

  void ws() {
    while (p < s.size() && is_ws(s[p])) ++p;
  }
  bool lit(char c) {
    ws();
    if (p < s.size() && s[p] == c) {
      ++p;
      return true;
    }
    return false;
  }
  // A string whose raw (still escaped) contents are returned; p ends after the closing quote.
  bool raw_string(std::string_view& out) {
    if (!lit('"')) return false;
    const std::size_t b = p;
    while (p < s.size()) {
      const char c = s[p];
      if (c == '"') {
        out = s.substr(b, p - b);
        ++p;
        return true;
      }
      p += (c == '\\') ? 2 : 1;
    }
    return false;
  }
  // Skips any JSON value (strings, numbers, literals, nested objects/arrays).
  bool skip_value() {
    ws();
    if (p >= s.size()) return false;
    const char c = s[p];
    if (c == '"') {
      std::string_view ignored;
      return raw_string(ignored);
    }
    if (c == '{' || c == '[') {
      int depth = 0;
      while (p < s.size()) {
        const char k = s[p];
        if (k == '"') {
          std::string_view ignored;
          if (!raw_string(ignored)) return false;
          continue;
        }
        if (k == '{' || k == '[') ++depth;
        if (k == '}' || k == ']') {
          if (--depth == 0) {
            ++p;
            return true;
          }
        }
        ++p;
      }
      return false;
    }
    const std::size_t b = p;
    while (p < s.size() && s[p] != ',' && s[p] != '}' && s[p] != ']' && !is_ws(s[p])) ++p;
    return p > b;
  }
};

int hex4(std::string_view s, std::size_t p) {
  if (p + 4 > s.size()) return -1;
  int v = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const char c = s[p + i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

void put_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes the JSON string at j.p into `out`. Returns false on malformed input; with j.cut, running off the end
// is accepted and reported in `ran_off`.
bool decode_string(Json& j, std::string& out, bool& ran_off) {
  ran_off = false;
  if (!j.lit('"')) return false;
  const std::string_view s = j.s;
  std::size_t p = j.p;
  const std::size_t n = s.size();
  while (true) {
    // Copy the plain run up to the next quote or backslash in one go.
    std::size_t q = p;
    while (q < n && s[q] != '"' && s[q] != '\\') ++q;
    out.append(s.data() + p, q - p);
    p = q;
    if (p >= n) {
      if (!j.cut) return false;
      ran_off = true;
      j.p = p;
      return true;
    }
    if (s[p] == '"') {
      j.p = p + 1;
      return true;
    }
    // Escape.
    if (p + 1 >= n) {
      if (!j.cut) return false;
      ran_off = true;
      j.p = n;
      return true;
    }
    const char e = s[p + 1];
    p += 2;
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        const int hi = hex4(s, p);
        if (hi < 0) {
          if (j.cut && p + 4 > n) {
            ran_off = true;
            j.p = n;
            return true;
          }
          return false;
        }
        p += 4;
        std::uint32_t cp = static_cast<std::uint32_t>(hi);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          const int lo = (p + 1 < n && s[p] == '\\' && s[p + 1] == 'u') ? hex4(s, p + 2) : -1;
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<std::uint32_t>(lo) - 0xDC00);
            p += 6;
          } else {
            cp = 0xFFFD;  // lone high surrogate
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;  // lone low surrogate
        }
        put_utf8(out, cp);
        break;
      }
      default:
        return false;
    }
  }
}

}  // namespace

bool WrapperClock::parse(std::string_view text, Time& out) {
  if (text.size() <= kPrefix) return from_rfc3339(text, out);
  if (!valid_ || std::memcmp(text.data(), prefix_, kPrefix) != 0) {
    char whole[kPrefix + 1];
    std::memcpy(whole, text.data(), kPrefix);
    whole[kPrefix] = 'Z';
    const auto base = parse_rfc3339(std::string_view(whole, sizeof whole));
    valid_ = base.has_value();
    if (!valid_) return from_rfc3339(text, out);
    std::memcpy(prefix_, text.data(), kPrefix);
    base_ = *base;
  }
  // The rest: ['.' or ',' digits] then 'Z' or 'z', read as parse_rfc3339 reads it (digits past nanoseconds ignored).
  std::size_t p = kPrefix;
  const char* d = text.data();
  const char sep = d[p];
  // The runtimes' own forms first: one to nine digits and 'Z' (nine, or fewer where Go's RFC3339Nano cut trailing
  // zeros). The last eight digits are read at once, a ninth before them by itself.
  const std::size_t digits = text.size() - kPrefix - 2;
  const char zone = d[text.size() - 1];
  if ((sep == '.' || sep == ',') && digits >= 1 && digits <= 9 && (zone == 'Z' || zone == 'z')) {
    std::int64_t value = last_digits(d + text.size() - 1, std::min<std::size_t>(digits, 8));
    if (digits == 9) {
      const char first = d[p + 1];
      value = value >= 0 && first >= '0' && first <= '9' ? (first - '0') * 100'000'000 + value : -1;
    }
    if (value >= 0) {
      out = base_ + Duration(value * kFractionScale[digits]);
      return true;
    }
  }
  std::int64_t nanos = 0;
  if (sep == '.' || sep == ',') {
    ++p;
    const std::size_t start = p;
    std::int64_t scale = 100'000'000;
    while (p < text.size() && d[p] >= '0' && d[p] <= '9') {
      nanos += (d[p] - '0') * scale;
      scale /= 10;
      ++p;
    }
    if (p == start) return from_rfc3339(text, out);
  }
  if (p + 1 != text.size() || (d[p] != 'Z' && d[p] != 'z')) return from_rfc3339(text, out);
  out = base_ + Duration(nanos);
  return true;
}

bool parse_cri_general(std::string_view line, CriLine& out, WrapperClock* clock) {
  return cri_message_after(line, cri_header(line, out, true, clock), out);
}

bool looks_like_cri(std::string_view prefix) {
  CriLine ignored;
  return cri_header(prefix, ignored, true) != 0;
}

namespace {

// Any layout of the object: keys in any order, white space between tokens, other keys skipped, escapes decoded.
bool parse_docker_general(std::string_view line, bool cut, std::string& log, DockerLine& out) {
  out = DockerLine{};
  log.clear();
  Json j{line, 0, cut};
  if (!j.lit('{')) return false;
  bool have_log = false, have_time = false;
  // The "log" string loses its final '\n'; without one the entry is a partial that continues in the next line.
  const auto finish = [&] {
    if (!log.empty() && log.back() == '\n') {
      log.pop_back();
    } else {
      out.partial = true;
    }
    return true;
  };
  // A line cut by the buffer limit may stop anywhere after the log: what was read still counts.
  const auto cut_short = [&] { return cut && have_log && finish(); };
  if (j.lit('}')) return false;
  while (true) {
    std::string_view key;
    if (!j.raw_string(key) || !j.lit(':')) return cut_short();
    if (key == "log" && !have_log) {
      bool ran_off = false;
      if (!decode_string(j, log, ran_off)) return false;
      have_log = true;
      if (ran_off) {
        out.truncated = true;
        return true;
      }
    } else if (key == "stream" || key == "time") {
      std::string_view v;
      if (!j.raw_string(v)) return cut_short();
      if (key == "stream") {
        out.is_stderr = v == "stderr";
        out.has_stream = true;
      } else {
        out.time = parse_rfc3339(v);
        have_time = out.time.has_value();
      }
    } else if (!j.skip_value()) {
      return cut_short();
    }
    if (j.lit(',')) continue;
    if (j.lit('}')) break;
    return cut_short();
  }
  j.ws();
  if (j.p != line.size() || !have_log || !(have_time || out.has_stream)) return false;
  return finish();
}


// The layout docker's json-file driver writes: its start, and what follows the "log" string for either stream.
constexpr std::string_view kDockerHead = R"({"log":")";
constexpr std::string_view kDockerStdout = R"(","stream":"stdout","time":")";
constexpr std::string_view kDockerStderr = R"(","stream":"stderr","time":")";

// The character a JSON escape of one character stands for ("\\t" -> tab), or -1 for 'u' and anything else.
int one_char_escape(char e) {
  switch (e) {
    case '"': return '"';
    case '\\': return '\\';
    case '/': return '/';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return -1;
  }
}

// A "log" text being unescaped into `scratch`: the plain bytes [from, from + n) before an escape, then the character
// it stands for. The first call (copied false) starts `scratch` afresh.
void append_unescaped(std::string& scratch, bool& copied, const char* from, std::size_t n, char c) {
  if (!copied) {
    scratch.clear();
    copied = true;
  }
  scratch.append(from, n);
  scratch.push_back(c);
}

// Index of the first '"' or '\\' in [p, p + n), or n.
std::size_t find_quote_or_backslash(const char* p, std::size_t n) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
#endif
  for (; i < n; ++i) {
    if (p[i] == '"' || p[i] == '\\') return i;
  }
  return n;
}

// The layout docker's json-file driver writes, {"log":"<text>","stream":"stdout|stderr","time":"<RFC 3339>"}. The
// text is a view into the line when its only escape is the final "\n"; other one-character escapes are undone into
// `scratch` (copied from the first one on). Anything else (a \u escape, another layout) returns false and is left to
// parse_docker_general, which reads the same lines to the same result.
bool parse_docker_plain(std::string_view line, std::string& scratch, std::string_view& log, DockerLine& out,
                        WrapperClock* clock) {
  constexpr std::string_view kHead = kDockerHead, kStdout = kDockerStdout, kStderr = kDockerStderr;
  if (line.size() < kHead.size() + kStdout.size() + 2 || line.substr(0, kHead.size()) != kHead) return false;
  const char* d = line.data();
  const std::size_t n = line.size();
  std::size_t run = kHead.size();  // start of the bytes not yet copied
  std::size_t end = 0;             // end of the text in the line (when not copied)
  std::size_t q = 0;               // the closing quote
  bool copied = false, partial = true;
  while (true) {
    const std::size_t k = run + find_quote_or_backslash(d + run, n - run);
    if (k >= n) return false;
    if (d[k] == '"') {
      end = q = k;
      break;
    }
    if (k + 2 >= n) return false;
    const char e = d[k + 1];
    if (e == 'n' && d[k + 2] == '"') {  // the final "\n": the entry is whole
      end = k;
      q = k + 2;
      partial = false;
      break;
    }
    const int c = one_char_escape(e);
    if (c < 0) return false;  // \u (or a bad escape): the general reader
    append_unescaped(scratch, copied, d + run, k - run, static_cast<char>(c));
    run = k + 2;
  }
  if (copied) scratch.append(d + run, end - run);
  std::size_t p = q;
  bool is_stderr = false;
  if (line.substr(p, kStdout.size()) == kStdout) {
  } else if (line.substr(p, kStderr.size()) == kStderr) {
    is_stderr = true;
  } else {
    return false;
  }
  p += kStdout.size();
  const void* tq = std::memchr(d + p, '"', n - p);
  if (tq == nullptr) return false;
  const auto t_end = static_cast<std::size_t>(static_cast<const char*>(tq) - d);
  if (t_end + 2 != n || d[t_end + 1] != '}') return false;
  const std::string_view time = line.substr(p, t_end - p);
  if (time.find('\\') != std::string_view::npos) return false;
  out = DockerLine{};
  Time t;
  if (clock != nullptr ? clock->parse(time, t) : from_rfc3339(time, t)) out.time = t;
  out.is_stderr = is_stderr;
  out.has_stream = true;
  out.partial = partial;
  log = copied ? std::string_view(scratch) : line.substr(kHead.size(), end - kHead.size());
  return true;
}

}  // namespace

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
const bool kCpuHasAvx2 = __builtin_cpu_supports("avx2");

// Index of the first '"', '\\', '\n', '\r', ESC or '^' in [p + i, p + n), or n. Their low nibbles (2, C, A, D, B, E)
// differ, so one table lookup per byte tells them (see plain_lines_avx2 in decoder.cpp): the table holds each at its
// nibble and 1 at nibble 0 (equal to no byte whose nibble is 0); bytes >= 0x80 look up 0, equal to none of them.
__attribute__((target("avx2"))) std::size_t find_log_end_avx2(const char* p, std::size_t i, std::size_t n) {
  const __m256i table = _mm256_setr_epi8(1, 0, '"', 0, 0, 0, 0, 0, 0, 0, '\n', '\x1b', '\\', '\r', '^', 0,  //
                                         1, 0, '"', 0, 0, 0, 0, 0, 0, 0, '\n', '\x1b', '\\', '\r', '^', 0);
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const auto mask = static_cast<unsigned>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_shuffle_epi8(table, v))));
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(mask));
  }
  for (; i < n; ++i) {
    const char c = p[i];
    if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\x1b' || c == '^') return i;
  }
  return n;
}

#endif

}  // namespace

std::size_t docker_plain_line(const char* p, std::size_t len, std::size_t cap, std::string& scratch,
                              std::string_view& log, DockerLine& out, WrapperClock* clock) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (!kCpuHasAvx2) return 0;
  const std::size_t n = std::min(len, cap + 1);
  if (n < kDockerHead.size() + kDockerStdout.size() + 4 || std::memcmp(p, kDockerHead.data(), kDockerHead.size()) != 0)
    return 0;
  // The text ends at the final "\n"; escapes of characters a record may hold as they are (quote, backslash, slash,
  // tab, backspace, form feed) are undone into `scratch` on the way, copied from the first one on.
  std::size_t run = kDockerHead.size();  // the first byte not yet copied
  bool copied = false;
  std::size_t k = find_log_end_avx2(p, run, n);
  for (;;) {
    if (k + 2 + kDockerStdout.size() >= n || p[k] != '\\') return 0;
    if (p[k + 1] == 'n' && p[k + 2] == '"') break;
    const int c = p[k + 1] == 'n' || p[k + 1] == 'r' ? -1 : one_char_escape(p[k + 1]);
    if (c < 0) return 0;  // "\n" or "\r" inside the text, \u, a bad escape: parse_docker
    append_unescaped(scratch, copied, p + run, k - run, static_cast<char>(c));
    run = k + 2;
    k = find_log_end_avx2(p, run, n);
  }
  if (copied) scratch.append(p + run, k - run);
  std::size_t at = k + 2;
  bool is_stderr = false;
  if (std::memcmp(p + at, kDockerStdout.data(), kDockerStdout.size()) == 0) {
  } else if (std::memcmp(p + at, kDockerStderr.data(), kDockerStderr.size()) == 0) {
    is_stderr = true;
  } else {
    return 0;
  }
  at += kDockerStdout.size();
  // The time, then "}" and the line's end. The runtimes' form is read with no search where the clock knows its
  // second; else the end is found as the text's end was (a time holding any of those bytes is left to parse_docker,
  // which reads it to the same result).
  Time t;
  const std::size_t usual =
      clock != nullptr && at + WrapperClock::kUsualTimeReads <= n ? clock->usual_time(p + at, t) : 0;
  const std::size_t t_end = usual != 0 ? at + usual : find_log_end_avx2(p, at, n);
  if (t_end + 2 >= n || p[t_end] != '"' || p[t_end + 1] != '}' || p[t_end + 2] != '\n') return 0;
  if (usual != 0) {
    out.time = t;
  } else {
    const std::string_view time(p + at, t_end - at);
    if (clock != nullptr ? clock->parse(time, t) : from_rfc3339(time, t)) out.time = t;
    else out.time.reset();
  }
  // Each field set on its own: assigning a whole DockerLine{} cleared it with a slow string store on every line.
  out.is_stderr = is_stderr;
  out.partial = false;
  out.truncated = false;
  out.has_stream = true;
  log = copied ? std::string_view(scratch) : std::string_view(p + kDockerHead.size(), k - kDockerHead.size());
  return t_end + 2;
#else
  (void)p, (void)len, (void)cap, (void)scratch, (void)log, (void)out, (void)clock;
  return 0;
#endif
}

bool parse_docker(std::string_view line, bool cut, std::string& scratch, std::string_view& log, DockerLine& out,
                  WrapperClock* clock) {
  if (!cut && parse_docker_plain(line, scratch, log, out, clock)) return true;
  if (!parse_docker_general(line, cut, scratch, out)) return false;
  log = scratch;
  return true;
}

}  // namespace decode_detail
}  // namespace faultline
