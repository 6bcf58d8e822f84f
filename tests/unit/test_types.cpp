// Unit tests for the shared vocabulary (include/faultline/types.hpp) and the file helpers beside it
// (include/faultline/durable_file.hpp).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <random>
#include <string>

#include "faultline/durable_file.hpp"
#include "faultline/types.hpp"
#include "sinks_support.hpp"

using namespace faultline;
using namespace std::chrono_literals;

namespace {

Time at_seconds(std::int64_t s, std::int64_t extra_ns = 0) { return Time(Duration(s * 1'000'000'000 + extra_ns)); }

// An independent UTF-8 validity check (the standard table, written differently from the one under test).
bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::uint32_t cp;
    std::size_t len;
    if (c < 0x80) { cp = c; len = 1; }
    else if ((c >> 5) == 0x6) { cp = c & 0x1F; len = 2; }
    else if ((c >> 4) == 0xE) { cp = c & 0x0F; len = 3; }
    else if ((c >> 3) == 0x1E) { cp = c & 0x07; len = 4; }
    else return false;
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b >> 6) != 0x2) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return false;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

const std::string kFFFD = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("Level and Severity names round-trip", "[types]") {
  for (Level l : {Level::unknown, Level::trace, Level::debug, Level::info, Level::warning, Level::error,
                  Level::critical}) {
    REQUIRE(parse_level(to_string(l)) == l);
  }
  CHECK(to_string(Level::warning) == "warning");
  CHECK(to_string(Level::critical) == "critical");
  for (Severity s : {Severity::info, Severity::warning, Severity::critical}) {
    REQUIRE(parse_severity(to_string(s)) == s);
  }
  CHECK(to_string(Severity::critical) == "critical");
}

TEST_CASE("parse_level accepts the common spellings, case-insensitively", "[types]") {
  struct Case {
    const char* text;
    Level level;
  };
  const Case cases[] = {
      {"I", Level::info},        {"i", Level::info},         {"INFO", Level::info},       {"Info", Level::info},
      {"notice", Level::info},   {"NOTICE", Level::info},    {"W", Level::warning},       {"WARN", Level::warning},
      {"warning", Level::warning}, {"WARNING", Level::warning}, {"E", Level::error},       {"ERROR", Level::error},
      {"err", Level::error},     {"F", Level::critical},     {"FATAL", Level::critical},  {"CRITICAL", Level::critical},
      {"crit", Level::critical}, {"D", Level::debug},        {"DEBUG", Level::debug},     {"TRACE", Level::trace},
      {"V", Level::trace},       {"panic", Level::critical},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    REQUIRE(parse_level(c.text) == c.level);
  }
  CHECK_FALSE(parse_level(""));
  CHECK_FALSE(parse_level("warnings"));
  CHECK_FALSE(parse_level("INFO "));
  CHECK_FALSE(parse_level("X"));
}

TEST_CASE("parse_severity accepts only the three severities", "[types]") {
  CHECK(parse_severity("info") == Severity::info);
  CHECK(parse_severity("Warning") == Severity::warning);
  CHECK(parse_severity("CRITICAL") == Severity::critical);
  CHECK_FALSE(parse_severity("error"));
  CHECK_FALSE(parse_severity("warn"));
  CHECK_FALSE(parse_severity(""));
}

TEST_CASE("Position::str shows file:line:column", "[types]") {
  CHECK(Position{"rules/vllm.yaml", 12, 5}.str() == "rules/vllm.yaml:12:5");
  CHECK(Position{"rules/vllm.yaml", 12, 0}.str() == "rules/vllm.yaml:12");
  CHECK(Position{"rules/vllm.yaml", 0, 0}.str() == "rules/vllm.yaml");
}

TEST_CASE("find_field and set_field keep insertion order and replace in place", "[types]") {
  Fields f;
  CHECK(find_field(f, "gpu") == nullptr);
  set_field(f, "gpu", "0");
  set_field(f, "xid", "79");
  set_field(f, "gpu", "3");
  REQUIRE(f.size() == 2);
  CHECK(f[0].first == "gpu");
  CHECK(f[0].second == "3");
  CHECK(f[1].first == "xid");
  REQUIRE(find_field(f, "xid") != nullptr);
  CHECK(*find_field(f, "xid") == "79");
  CHECK(find_field(f, "XID") == nullptr);
  set_field(f, "", "empty key");
  CHECK(*find_field(f, "") == "empty key");
}

TEST_CASE("parse_duration reads unit sequences", "[types]") {
  CHECK(parse_duration("250ms") == Duration(250ms));
  CHECK(parse_duration("5s") == Duration(5s));
  CHECK(parse_duration("10m") == Duration(10min));
  CHECK(parse_duration("2h") == Duration(2h));
  CHECK(parse_duration("1d") == Duration(24h));
  CHECK(parse_duration("1h30m") == Duration(90min));
  CHECK(parse_duration("0s") == Duration(0));
  CHECK(parse_duration("1m30s500ms") == Duration(90500ms));
  CHECK(parse_duration("7ns") == Duration(7));
  CHECK(parse_duration("3us") == Duration(3000));
  CHECK(parse_duration("007s") == Duration(7s));
}

TEST_CASE("parse_duration rejects bare numbers, signs and junk", "[types]") {
  for (const char* bad : {"", "5", "-5s", "+5s", "5 s", " 5s", "5s ", "5x", "s", "ms", "1.5s", "5S", "1h30",
                          "1h 30m", "5sec", "99999999999999999999s", "300000d", "1e3s", "5s\n"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad));
  }
}

TEST_CASE("format_duration writes the canonical form parse_duration reads", "[types]") {
  CHECK(format_duration(Duration(0)) == "0s");
  CHECK(format_duration(250ms) == "250ms");
  CHECK(format_duration(90min) == "1h30m");
  CHECK(format_duration(24h) == "1d");
  CHECK(format_duration(Duration(90061001000001)) == "1d1h1m1s1ms1ns");
  CHECK(format_duration(-5s) == "-5s");
  for (const char* s : {"250ms", "5s", "10m", "2h", "1d", "1h30m", "1d2h3m4s5ms6us7ns"}) {
    INFO(s);
    auto d = parse_duration(s);
    REQUIRE(d);
    CHECK(format_duration(*d) == s);
  }
  // Non-canonical input normalizes.
  CHECK(format_duration(*parse_duration("90s")) == "1m30s");
}

TEST_CASE("format_time writes RFC 3339 UTC with milliseconds", "[types]") {
  CHECK(format_time(Time{}) == "1970-01-01T00:00:00.000Z");
  CHECK(format_time(at_seconds(1795946881, 123'999'999)) == "2026-11-29T10:08:01.123Z");  // truncates, no rounding
  CHECK(format_time(at_seconds(1709251199)) == "2024-02-29T23:59:59.000Z");
  CHECK(format_time(at_seconds(951868800)) == "2000-03-01T00:00:00.000Z");
  CHECK(format_time(at_seconds(-1)) == "1969-12-31T23:59:59.000Z");
  CHECK(format_time(Time(Duration(-1))) == "1969-12-31T23:59:59.999Z");
  CHECK(format_time(Time(Duration(std::numeric_limits<std::int64_t>::min()))) == "1677-09-21T00:12:43.145Z");
  CHECK(format_time(Time(Duration(std::numeric_limits<std::int64_t>::max()))) == "2262-04-11T23:47:16.854Z");
  // Every field at every width: each time read back is the time written, to the millisecond.
  std::mt19937_64 rng(3339);
  for (int i = 0; i < 20000; ++i) {
    const auto ms = static_cast<std::int64_t>(rng() % 18'000'000'000'000ull) - 9'000'000'000'000;  // ±285 years
    const Time t = Time(std::chrono::milliseconds(ms));
    const std::string text = format_time(t);
    INFO(text);
    REQUIRE(text.size() == 24);
    REQUIRE(parse_rfc3339(text) == t);
  }
}

TEST_CASE("parse_rfc3339 reads fractions, zones and separators", "[types]") {
  const Time base = at_seconds(1795946881);  // 2026-11-29T10:08:01Z
  CHECK(parse_rfc3339("2026-11-29T10:08:01Z") == base);
  CHECK(parse_rfc3339("2026-11-29t10:08:01z") == base);
  CHECK(parse_rfc3339("2026-11-29 10:08:01Z") == base);
  CHECK(parse_rfc3339("2026-11-29T10:08:01") == base);  // no zone: UTC
  CHECK(parse_rfc3339("2026-11-29T10:08:01.1Z") == base + 100ms);
  CHECK(parse_rfc3339("2026-11-29T10:08:01.123Z") == base + 123ms);
  CHECK(parse_rfc3339("2026-11-29T10:08:01.123456789Z") == base + Duration(123456789));
  CHECK(parse_rfc3339("2026-11-29T10:08:01.1234567891Z") == base + Duration(123456789));  // beyond ns: ignored
  CHECK(parse_rfc3339("2026-11-29T10:08:01,5Z") == base + 500ms);
  CHECK(parse_rfc3339("2026-11-29T11:08:01+01:00") == base);
  CHECK(parse_rfc3339("2026-11-29T04:38:01-0530") == base);
  CHECK(parse_rfc3339("2026-11-29T12:08:01+02") == base);
  CHECK(parse_rfc3339("2026-11-29T10:08:01.000000001+00:00") == base + Duration(1));
  CHECK(parse_rfc3339("2024-02-29T23:59:59Z") == at_seconds(1709251199));
  CHECK(parse_rfc3339("1969-12-31T23:59:59Z") == at_seconds(-1));
}

TEST_CASE("parse_rfc3339 rejects malformed times", "[types]") {
  for (const char* bad : {"", "2026-11-29", "2026-11-29T10:08", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z",
                          "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-11-29T24:00:00Z",
                          "2026-11-29T10:60:00Z", "2026-11-29T10:08:01Zjunk", "2026-11-29T10:08:01.Z",
                          "2026-11-29T10:08:01+1", "2026-11-29T10:08:01+01:0", "2026-11-29T10:08:01+25:00",
                          "2026-11-29X10:08:01Z", "26-11-29T10:08:01Z", "2026/11/29T10:08:01Z",
                          "2026-11-29T10:08:01 Z", " 2026-11-29T10:08:01Z",
                          // beyond what a Time holds (the nanosecond count overflowed: found by fuzzing)
                          "2525-07-02T07:41:58Z", "9999-12-31T23:59:59Z", "1600-01-01T00:00:00Z"}) {
    INFO(bad);
    CHECK_FALSE(parse_rfc3339(bad));
  }
}

TEST_CASE("format_time and parse_rfc3339 agree", "[types]") {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::int64_t> dist(-2'000'000'000'000'000'000, 4'000'000'000'000'000'000);
  for (int i = 0; i < 2000; ++i) {
    const std::int64_t ns = dist(rng) / 1'000'000 * 1'000'000;  // milliseconds survive the round trip
    const Time t{Duration(ns)};
    const std::string s = format_time(t);
    INFO(s);
    REQUIRE(parse_rfc3339(s) == t);
  }
}

TEST_CASE("days_from_civil counts days since 1970-01-01", "[types]") {
  CHECK(days_from_civil(1970, 1, 1) == 0);
  CHECK(days_from_civil(1969, 12, 31) == -1);
  CHECK(days_from_civil(2000, 3, 1) == 11017);
  CHECK(days_from_civil(2024, 2, 29) == 19782);
  CHECK(days_from_civil(2026, 11, 29) == 20786);
  CHECK(days_from_civil(2025, 1, 1) - days_from_civil(2024, 1, 1) == 366);
  CHECK(days_from_civil(2101, 1, 1) - days_from_civil(2100, 1, 1) == 365);
  CHECK(days_from_civil(2001, 1, 1) - days_from_civil(2000, 1, 1) == 366);
}

TEST_CASE("sanitize_utf8 keeps valid text untouched", "[types]") {
  CHECK(sanitize_utf8("") == "");
  CHECK(sanitize_utf8("plain ascii\tline") == "plain ascii\tline");
  const std::string nul("a\0b", 3);
  CHECK(sanitize_utf8(nul) == nul);
  for (const char* ok : {"h\xC3\xA9llo", "\xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\x98\x80 emoji", "\xE2\x94\x82 frame",
                         "\xEF\xBF\xBD", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"}) {
    INFO(ok);
    CHECK(sanitize_utf8(ok) == ok);
  }
}

TEST_CASE("sanitize_utf8 replaces invalid sequences with U+FFFD", "[types]") {
  CHECK(sanitize_utf8("\xFF") == kFFFD);
  CHECK(sanitize_utf8("a\xFFz") == "a" + kFFFD + "z");
  CHECK(sanitize_utf8("\xC0\xAF") == kFFFD + kFFFD);                  // overlong '/'
  CHECK(sanitize_utf8("\xE0\x80\xAF") == kFFFD + kFFFD + kFFFD);      // overlong, 3 bytes
  CHECK(sanitize_utf8("\xF0\x80\x80\xAF") == kFFFD + kFFFD + kFFFD + kFFFD);
  CHECK(sanitize_utf8("\xED\xA0\x80") == kFFFD + kFFFD + kFFFD);      // surrogate D800
  CHECK(sanitize_utf8("\xF4\x90\x80\x80") == kFFFD + kFFFD + kFFFD + kFFFD);  // above U+10FFFF
  CHECK(sanitize_utf8("\xE2\x82") == kFFFD);                          // truncated at the end: one replacement
  CHECK(sanitize_utf8("\xE2\x82x") == kFFFD + "x");
  CHECK(sanitize_utf8("\xF0\x9F\x98") == kFFFD);
  CHECK(sanitize_utf8("\x80\x80") == kFFFD + kFFFD);                  // lone continuation bytes
  CHECK(sanitize_utf8("ok \xC3\xA9 \xC3 end") == "ok \xC3\xA9 " + kFFFD + " end");
}

TEST_CASE("sanitize_utf8 output is always valid UTF-8 and idempotent", "[types]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 3000; ++i) {
    std::string s(static_cast<std::size_t>(i % 40), '\0');
    for (auto& c : s) c = static_cast<char>(byte(rng));
    const std::string out = sanitize_utf8(s);
    REQUIRE(valid_utf8(out));
    REQUIRE(sanitize_utf8(out) == out);
    if (valid_utf8(s)) REQUIRE(out == s);
  }
}

TEST_CASE("map_file maps a whole file read-only and outlives a rename over it", "[types][durable_file]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("faultline-map-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "entry.bin").string();

  // Larger than a page, with every byte value, so that an offset or length mistake shows.
  std::string content;
  for (int i = 0; i < 3 * 4096 + 17; ++i) content.push_back(static_cast<char>(i * 7 % 256));
  REQUIRE(write_file_atomic(path, content).ok());
  auto mapped = map_file(path);
  REQUIRE(mapped.ok());
  CHECK(mapped->bytes() == content);

  // An entry replaced by a rename (as the caches are) leaves the mapping of the old one intact.
  REQUIRE(write_file_atomic(path, "new").ok());
  CHECK(mapped->bytes() == content);
  auto again = map_file(path);
  REQUIRE(again.ok());
  CHECK(again->bytes() == "new");

  // Moved: the view goes along, the source is empty.
  ReadOnlyMapping moved = std::move(*mapped);
  CHECK(moved.bytes() == content);
  CHECK(mapped->bytes().empty());

  REQUIRE(write_file_atomic(path, "").ok());
  auto empty = map_file(path);
  REQUIRE(empty.ok());
  CHECK(empty->bytes().empty());

  auto missing = map_file((dir / "absent.bin").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("absent.bin") != std::string::npos);
  auto directory = map_file(dir.string());
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.error().message.find("not a regular file") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("AtomicFileWriter writes its pieces in order and replaces the file only on commit", "[types][durable_file]") {
  namespace fs = std::filesystem;
  const sinkstest::TempDir tmp("writer");  // removed however the test ends
  const fs::path dir = tmp.path;
  const std::string path = (dir / "log.jsonl").string();
  REQUIRE(write_file_atomic(path, "old\n").ok());
  auto only_target = [&] {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename() == "log.jsonl" ? 1 : 100;
    return n == 1;
  };

  // Small pieces that fill the buffer many times over, with pieces larger than it between them, so that a piece
  // written out of turn, twice or not at all shows.
  std::string expected;
  {
    auto writer = AtomicFileWriter::create(path);
    REQUIRE(writer.ok());
    for (int i = 0; i < 20000; ++i) {
      std::string piece = "line " + std::to_string(i) + "\n";
      if (i % 5000 == 4999) piece = std::string(100000 + static_cast<std::size_t>(i), static_cast<char>('a' + i % 26));
      writer->append(piece);
      expected += piece;
    }
    CHECK(writer->size() == expected.size());
    CHECK(read_file(path).value() == "old\n");  // nothing replaced before commit
    REQUIRE(writer->commit().ok());
    CHECK_FALSE(writer->commit().ok());  // once only
  }
  CHECK(read_file(path).value() == expected);
  CHECK(only_target());

  {  // abandoned: the file stays as it was and the temporary file is gone
    auto writer = AtomicFileWriter::create(path);
    REQUIRE(writer.ok());
    writer->append("half-written");
  }
  CHECK(read_file(path).value() == expected);
  CHECK(only_target());

  auto nowhere = AtomicFileWriter::create((dir / "absent" / "log.jsonl").string());
  REQUIRE_FALSE(nowhere.ok());
  CHECK(nowhere.error().message.find("absent/log.jsonl.tmp.") != std::string::npos);
}

TEST_CASE("hex16 writes a hash as 16 lower-case hex digits, leading zeros kept", "[types]") {
  CHECK(hex16(0) == "0000000000000000");
  CHECK(hex16(0x1d1ea17175195942ull) == "1d1ea17175195942");
  CHECK(hex16(0xabcdefull) == "0000000000abcdef");
  CHECK(hex16(~std::uint64_t{0}) == "ffffffffffffffff");
  // The FNV-1a 64 of "a", as every id and fingerprint is written.
  CHECK(hex16(fnv1a64("a")) == "af63dc4c8601ec8c");
}
