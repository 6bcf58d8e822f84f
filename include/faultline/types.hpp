// The small vocabulary every room shares: event time, log levels, severities, positions.
// Plain values only; no room-specific behaviour lives here. Thread-safe (no state).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace faultline {

// Event time: nanoseconds since the Unix epoch, UTC.
using Duration = std::chrono::nanoseconds;
using Time = std::chrono::time_point<std::chrono::system_clock, Duration>;

enum class Level : std::uint8_t { unknown, trace, debug, info, warning, error, critical };

enum class Severity : std::uint8_t { info, warning, critical };

std::string_view to_string(Level level);
std::string_view to_string(Severity severity);
std::optional<Level> parse_level(std::string_view text);       // "info", "WARN", "E", ...
std::optional<Severity> parse_severity(std::string_view text);  // "info" | "warning" | "critical"

// A place in a file shown to people: 1-based line and column.
struct Position {
  std::string file;
  std::uint32_t line = 0;
  std::uint32_t column = 0;

  std::string str() const;  // "file:line:column"
  bool operator==(const Position&) const = default;
};

// A problem with user input (a rule file, the config, a command-line value), shown to people with its position.
struct Diagnostic {
  enum class Kind : std::uint8_t { error, warning };
  Kind kind = Kind::error;
  Position pos;
  std::string message;
  // The input could not be read at all (no such file, no permission, not a regular file, no rules anywhere in the
  // paths given), as opposed to what it says being wrong: commands exit 2 for the first, 1 for the second.
  bool unreadable = false;

  std::string str() const;  // "file:line:column: error: message"; "error: message" when there is no file
  bool operator==(const Diagnostic&) const = default;
};

// Named values captured from log lines (and static values set by rules), in insertion order.
using Fields = std::vector<std::pair<std::string, std::string>>;

const std::string* find_field(const Fields& fields, std::string_view name);
void set_field(Fields& fields, std::string_view name, std::string_view value);

// "250ms", "5s", "10m", "2h", "1d", "1h30m". No sign, no bare numbers.
std::optional<Duration> parse_duration(std::string_view text);
std::string format_duration(Duration d);

// RFC 3339 with milliseconds, UTC: 2026-11-29T10:08:01.123Z
std::string format_time(Time t);
// RFC 3339 / ISO 8601 with optional fraction and zone (Z, +hh:mm); no zone means UTC.
std::optional<Time> parse_rfc3339(std::string_view text);

// Days since 1970-01-01 for a civil date (proleptic Gregorian), and back.
std::int64_t days_from_civil(int year, unsigned month, unsigned day);
struct CivilDate {
  std::int64_t year;
  unsigned month;
  unsigned day;
};
CivilDate civil_from_days(std::int64_t days);
bool is_leap_year(std::int64_t year);
unsigned days_in_month(std::int64_t year, unsigned month);  // month 1..12

// "+HH:MM", "-HH:MM", "Z" or "UTC" → offset east of UTC (the form of `utc_offset` and `--utc-offset`).
std::optional<std::chrono::seconds> parse_utc_offset(std::string_view text);

// FNV-1a 64: content hashes (rule bodies, file fingerprints, incident ids, cache keys). Chain by passing the previous
// hash as `seed`. Stable across versions and machines: ids and checkpoints depend on it.
inline constexpr std::uint64_t kFnv1a64Offset = 14695981039346656037ull;
constexpr std::uint64_t fnv1a64(std::string_view data, std::uint64_t seed = kFnv1a64Offset) {
  std::uint64_t h = seed;
  for (char c : data) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// A hash as the 16 lower-case hex digits ids, fingerprints and cache keys are written with.
inline std::string hex16(std::uint64_t h) {
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = "0123456789abcdef"[h & 0xf];
  return out;
}

// The product's version ("0.1.0"), as built.
std::string_view faultline_version();

// Replace invalid UTF-8 sequences with U+FFFD so text can go into JSON.
std::string sanitize_utf8(std::string_view text);
// Whether sanitize_utf8 would return `text` unchanged.
bool is_valid_utf8(std::string_view text);

// The heap memory a string holds beyond its own object (its buffer and terminator); 0 while it fits the small-string
// buffer. For byte bounds on what a container keeps.
inline std::size_t heap_bytes(const std::string& s) {
  return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0;
}
// The same of fields: the vector's buffer and each name's and value's.
inline std::size_t heap_bytes(const Fields& fields) {
  std::size_t n = fields.capacity() * sizeof(Fields::value_type);
  for (const auto& [key, value] : fields) n += heap_bytes(key) + heap_bytes(value);
  return n;
}

// What a message may echo of a value the user gave (a pattern, a key, a URL): the text itself when it is at most
// `max` bytes, else its first `max` bytes (cut at a UTF-8 boundary) and "… (N bytes)". Every diagnostic and error
// that repeats user input goes through this, so a 1 MB pattern never becomes 1 MB of error text.
inline constexpr std::size_t kExcerptBytes = 120;
std::string excerpt(std::string_view text, std::size_t max = kExcerptBytes);

}  // namespace faultline
