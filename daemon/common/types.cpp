// The shared vocabulary: levels, severities, positions, fields, durations, RFC 3339 times, UTF-8 repair.
// Every function here is pure (no state) and safe to call from any thread.
#include "faultline/types.hpp"

#include <array>
#include <cstdio>
#include <cstring>
#include <limits>

namespace faultline {

namespace {

char lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower_ascii(a[i]) != lower_ascii(b[i])) return false;
  }
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly `n` decimal digits at `s[pos]`.
bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (!is_digit(c)) return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

struct UnitSpec {
  std::string_view suffix;
  std::int64_t nanos;
};

// Longest suffixes first so "ms" is not read as "m" followed by junk.
constexpr std::array<UnitSpec, 7> kUnits{{
    {"ns", 1},
    {"us", 1'000},
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
    {"d", 86'400'000'000'000},
}};

}  // namespace

bool is_leap_year(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned days_in_month(std::int64_t y, unsigned m) {
  static constexpr std::array<unsigned, 12> kDays{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return (m == 2 && is_leap_year(y)) ? 29u : kDays[m - 1];
}

std::optional<std::chrono::seconds> parse_utc_offset(std::string_view s) {
  if (s == "Z" || s == "UTC") return std::chrono::seconds(0);
  if (s.size() != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':') return std::nullopt;
  for (std::size_t i : {1u, 2u, 4u, 5u}) {
    if (!is_digit(s[i])) return std::nullopt;
  }
  int h = (s[1] - '0') * 10 + (s[2] - '0');
  int m = (s[4] - '0') * 10 + (s[5] - '0');
  if (h > 23 || m > 59) return std::nullopt;
  auto total = std::chrono::seconds(h * 3600 + m * 60);
  return s[0] == '-' ? -total : total;
}

std::string Diagnostic::str() const {
  std::string where = pos.str();
  if (!where.empty()) where += ": ";
  return where + (kind == Kind::error ? "error: " : "warning: ") + message;
}

std::string_view faultline_version() { return FAULTLINE_VERSION; }

// Inverse of days_from_civil (H. Hinnant's algorithm).
CivilDate civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return CivilDate{m <= 2 ? y + 1 : y, m, d};
}

std::string_view to_string(Level level) {
  switch (level) {
    case Level::unknown: return "unknown";
    case Level::trace: return "trace";
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warning: return "warning";
    case Level::error: return "error";
    case Level::critical: return "critical";
  }
  return "unknown";
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::info: return "info";
    case Severity::warning: return "warning";
    case Severity::critical: return "critical";
  }
  return "info";
}

std::optional<Level> parse_level(std::string_view text) {
  struct Spelling {
    std::string_view word;
    Level level;
  };
  // Spellings seen in serving stacks: Python logging, glog/abseil letters, TensorRT(-LLM) letters, syslog names.
  static constexpr std::array<Spelling, 31> kSpellings{{
      {"unknown", Level::unknown},
      {"t", Level::trace},        {"trace", Level::trace},       {"v", Level::trace},
      {"verbose", Level::trace},  {"d", Level::debug},           {"debug", Level::debug},
      {"dbg", Level::debug},      {"i", Level::info},            {"info", Level::info},
      {"information", Level::info}, {"n", Level::info},          {"notice", Level::info},
      {"w", Level::warning},      {"warn", Level::warning},      {"warning", Level::warning},
      {"e", Level::error},        {"err", Level::error},         {"error", Level::error},
      {"c", Level::critical},     {"crit", Level::critical},     {"critical", Level::critical},
      {"f", Level::critical},     {"fatal", Level::critical},    {"panic", Level::critical},
      {"emerg", Level::critical}, {"emergency", Level::critical}, {"alert", Level::critical},
      {"severe", Level::critical}, {"internal_error", Level::critical}, {"exception", Level::error},
  }};
  for (const auto& s : kSpellings) {
    if (iequals(text, s.word)) return s.level;
  }
  return std::nullopt;
}

std::optional<Severity> parse_severity(std::string_view text) {
  if (iequals(text, "info")) return Severity::info;
  if (iequals(text, "warning")) return Severity::warning;
  if (iequals(text, "critical")) return Severity::critical;
  return std::nullopt;
}

std::string Position::str() const {
  // A position without a line (e.g. a file that failed to open) is shown as the bare file name.
  std::string out = file;
  if (line == 0) return out;
  out += ':';
  out += std::to_string(line);
  if (column != 0) {
    out += ':';
    out += std::to_string(column);
  }
  return out;
}

const std::string* find_field(const Fields& fields, std::string_view name) {
  for (const auto& [key, value] : fields) {
    if (key == name) return &value;
  }
  return nullptr;
}

void set_field(Fields& fields, std::string_view name, std::string_view value) {
  for (auto& [key, old] : fields) {
    if (key == name) {
      old.assign(value);
      return;
    }
  }
  fields.emplace_back(std::string(name), std::string(value));
}

std::optional<Duration> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!is_digit(text[pos])) return std::nullopt;
    std::int64_t n = 0;
    while (pos < text.size() && is_digit(text[pos])) {
      const int d = text[pos] - '0';
      if (n > (kMax - d) / 10) return std::nullopt;
      n = n * 10 + d;
      ++pos;
    }
    const UnitSpec* unit = nullptr;
    for (const auto& u : kUnits) {
      if (text.substr(pos, u.suffix.size()) == u.suffix) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) return std::nullopt;  // bare number or unknown unit
    pos += unit->suffix.size();
    if (n > kMax / unit->nanos) return std::nullopt;
    const std::int64_t part = n * unit->nanos;
    if (total > kMax - part) return std::nullopt;
    total += part;
  }
  return Duration(total);
}

std::string format_duration(Duration d) {
  std::int64_t n = d.count();
  if (n == 0) return "0s";
  std::string out;
  // Work on the magnitude as unsigned so the most negative value does not overflow.
  std::uint64_t u = n < 0 ? static_cast<std::uint64_t>(-(n + 1)) + 1 : static_cast<std::uint64_t>(n);
  if (n < 0) out += '-';
  for (auto it = kUnits.rbegin(); it != kUnits.rend(); ++it) {
    const auto unit = static_cast<std::uint64_t>(it->nanos);
    if (u >= unit) {
      out += std::to_string(u / unit);
      out += it->suffix;
      u %= unit;
    }
  }
  return out;
}

std::string format_time(Time t) {
  const std::int64_t ns = t.time_since_epoch().count();
  constexpr std::int64_t kNsPerDay = 86'400'000'000'000;
  std::int64_t days = ns / kNsPerDay;
  std::int64_t rem = ns % kNsPerDay;
  if (rem < 0) {
    rem += kNsPerDay;
    --days;
  }
  const CivilDate c = civil_from_days(days);
  const std::int64_t secs = rem / 1'000'000'000;
  const auto ms = static_cast<int>((rem % 1'000'000'000) / 1'000'000);
  // Nanoseconds in 64 bits reach the years 1677 to 2262: always four digits. Written directly (snprintf cost ~3,600
  // instructions a call, and every evidence line of every incident revision has a time).
  char out[] = "0000-00-00T00:00:00.000Z";
  auto put = [&out](std::size_t at, std::size_t width, std::uint64_t v) {
    for (std::size_t k = at + width; k > at; v /= 10) out[--k] = static_cast<char>('0' + v % 10);
  };
  put(0, 4, static_cast<std::uint64_t>(c.year));
  put(5, 2, c.month);
  put(8, 2, c.day);
  put(11, 2, static_cast<std::uint64_t>(secs / 3600));
  put(14, 2, static_cast<std::uint64_t>(secs / 60 % 60));
  put(17, 2, static_cast<std::uint64_t>(secs % 60));
  put(20, 3, static_cast<std::uint64_t>(ms));
  return std::string(out, sizeof out - 1);
}

std::optional<Time> parse_rfc3339(std::string_view s) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(s, 0, 4, year) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, month) || s[7] != '-' ||
      !digits(s, 8, 2, day)) {
    return std::nullopt;
  }
  const char sep = s[10];
  if (sep != 'T' && sep != 't' && sep != ' ') return std::nullopt;
  if (!digits(s, 11, 2, hour) || s[13] != ':' || !digits(s, 14, 2, minute) || s[16] != ':' ||
      !digits(s, 17, 2, second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || static_cast<unsigned>(day) > days_in_month(year, month) || hour > 23 ||
      minute > 59 || second > 60) {
    return std::nullopt;
  }
  if (year < 1678 || year > 2261) return std::nullopt;  // beyond what a Time (int64 nanoseconds) holds
  std::size_t pos = 19;
  std::int64_t nanos = 0;
  if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
    ++pos;
    const std::size_t start = pos;
    std::int64_t scale = 100'000'000;
    while (pos < s.size() && is_digit(s[pos])) {
      nanos += (s[pos] - '0') * scale;  // digits beyond nanoseconds are ignored (scale reaches 0)
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  std::int64_t offset_s = 0;
  if (pos < s.size()) {
    const char z = s[pos];
    if (z == 'Z' || z == 'z') {
      ++pos;
    } else if (z == '+' || z == '-') {
      int oh = 0, om = 0;
      ++pos;
      if (!digits(s, pos, 2, oh)) return std::nullopt;
      pos += 2;
      if (pos < s.size()) {
        if (s[pos] == ':') ++pos;
        if (!digits(s, pos, 2, om)) return std::nullopt;
        pos += 2;
      }
      if (oh > 23 || om > 59) return std::nullopt;
      offset_s = (oh * 3600 + om * 60) * (z == '-' ? -1 : 1);
    } else {
      return std::nullopt;
    }
  }
  if (pos != s.size()) return std::nullopt;
  const std::int64_t secs = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 +
                            hour * 3600 + minute * 60 + second - offset_s;
  return Time(Duration(secs * 1'000'000'000 + nanos));
}

std::int64_t days_from_civil(int year, unsigned month, unsigned day) {
  // H. Hinnant, "chrono-Compatible Low-Level Date Algorithms".
  const std::int64_t y = static_cast<std::int64_t>(year) - (month <= 2 ? 1 : 0);
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there do not start one (RFC 3629: no overlongs,
// no surrogates, nothing above U+10FFFF). `bad_len` receives the length of the maximal invalid subpart, so that
// each such subpart becomes one U+FFFD (the Unicode "best practice" for replacement).
std::size_t utf8_sequence(const unsigned char* s, std::size_t n, std::size_t i, std::size_t& bad_len) {
  const unsigned char c = s[i];
  bad_len = 1;
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;        // overlong
    else if (c == 0xED) hi = 0x9F;   // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;        // overlong
    else if (c == 0xF4) hi = 0x8F;   // above U+10FFFF
  } else {
    return 0;  // continuation byte, C0/C1 overlong lead, or F5..FF
  }
  for (std::size_t k = 1; k <= need; ++k) {
    bad_len = k;  // the lead byte plus the continuation bytes accepted so far
    if (i + k >= n) return 0;
    const unsigned char b = s[i + k];
    const unsigned char l = (k == 1) ? lo : 0x80;
    const unsigned char h = (k == 1) ? hi : 0xBF;
    if (b < l || b > h) return 0;
  }
  return need + 1;
}

}  // namespace

namespace {
// Where the first invalid sequence of `text` starts; its size when there is none.
std::size_t first_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  // Fast path: find the first byte that is not ASCII; most log text never has one.
  std::size_t i = 0;
  while (i < n && s[i] < 0x80) ++i;
  while (i < n) {
    std::size_t bad = 0;
    const std::size_t len = utf8_sequence(s, n, i, bad);
    if (len == 0) return i;
    i += len;
  }
  return n;
}
}  // namespace

bool is_valid_utf8(std::string_view text) { return first_invalid_utf8(text) == text.size(); }

std::string sanitize_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t j = first_invalid_utf8(text);
  if (j == n) return std::string(text);
  std::string out;
  out.reserve(n + 8);
  out.append(text.data(), j);
  while (j < n) {
    std::size_t bad = 0;
    const std::size_t len = utf8_sequence(s, n, j, bad);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      j += bad;
    } else {
      out.append(text.data() + j, len);
      j += len;
    }
  }
  return out;
}

}  // namespace faultline
