// The command line's pieces: the input reader (mapped regular files a window at a time, pipes read into a buffer,
// files that shrink while being read end early instead of faulting) and the rule-test engine.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>

#include "app/input.hpp"
#include "app/rule_tests.hpp"
#include "support.hpp"

using faultline::app::ScanInput;

namespace {

std::string temp_file(const std::string& name, const std::string& content) {
  auto dir = std::filesystem::temp_directory_path() / ("faultline-app-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::string read_all(ScanInput& in, std::size_t* pieces = nullptr) {
  std::string out;
  std::string_view piece;
  std::size_t n = 0;
  while (in.next(piece)) {
    out.append(piece);
    ++n;
  }
  if (pieces != nullptr) *pieces = n;
  return out;
}

}  // namespace

TEST_CASE("a regular file is mapped a window at a time and read whole", "[app]") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::string content;
  for (int i = 0; content.size() < 5 * page + 123; ++i) content += "INFO line " + std::to_string(i) + "\n";
  const auto path = temp_file("mapped.log", content);
  ScanInput in(path, 2 * page);
  REQUIRE(in.ok());
  CHECK(in.mapped());
  std::size_t pieces = 0;
  CHECK(read_all(in, &pieces) == content);
  CHECK(pieces == 3);  // 2 + 2 + 1.x pages
  CHECK(in.ok());
}

TEST_CASE("a file that shrinks after it was opened ends early, without a fault", "[app]") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::string content(8 * page, 'x');
  const auto path = temp_file("shrinks.log", content);
  ScanInput in(path, 2 * page);
  std::string_view piece;
  REQUIRE(in.next(piece));
  CHECK(piece.size() == 2 * page);
  // copytruncate-style: another process truncates it to 3 pages.
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(3 * page)) == 0);
  std::string rest;
  while (in.next(piece)) rest.append(piece);
  CHECK(rest.size() == page);
  CHECK(in.ok());
}

TEST_CASE("standard input and pipes are read, not mapped; empty and missing files", "[app]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string text = "one\ntwo\n";
  REQUIRE(::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  const int saved = ::dup(STDIN_FILENO);
  REQUIRE(::dup2(fds[0], STDIN_FILENO) >= 0);
  ::close(fds[0]);
  {
    ScanInput in("-");
    CHECK_FALSE(in.mapped());
    CHECK(read_all(in) == text);
    CHECK(in.ok());
  }
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);

  ScanInput empty(temp_file("empty.log", ""));
  CHECK(empty.ok());
  CHECK(read_all(empty).empty());

  ScanInput missing("/nonexistent/faultline.log");
  CHECK_FALSE(missing.ok());
  CHECK(missing.error().find("No such file") != std::string::npos);
  std::string_view piece;
  CHECK_FALSE(missing.next(piece));
}

TEST_CASE("a rule test replays its lines on a virtual clock and compares the incidents it expects", "[app]") {
  auto compiled = faultline::testing::compile_yaml(faultline::testing::kNeverReadyRule + R"(tests:
  - name: fires once the window has passed
    lines:
      - "2026-01-01T00:00:00Z Starting server"
    advance: 11m
    expect:
      - severity: warning
  - name: expects the wrong severity
    lines:
      - "2026-01-01T00:00:00Z Starting server"
      - after: 11m
        text: "2026-01-01T00:11:00Z still starting"
    expect:
      - severity: critical
)");
  const auto& tests = compiled->rule_set().rules[0].tests;
  REQUIRE(tests.size() == 2);
  CHECK(faultline::app::replay_test(compiled, tests[0], "").size() == 1);
  CHECK(faultline::app::replay_test(compiled, tests[1], "").size() == 1);  // `after:` ran the clock past the window

  std::ostringstream out;
  auto summary = faultline::app::run_rule_tests(compiled, out, /*verbose=*/true);
  CHECK(summary.passed == 1);
  CHECK(summary.failed == 1);
  CHECK(out.str().find("ok   never-ready: fires once the window has passed\n") != std::string::npos);
  CHECK(out.str().find("FAIL never-ready: expects the wrong severity") != std::string::npos);
  CHECK(out.str().find("rule never-ready incident 1: severity differs") != std::string::npos);
}

namespace {

std::string gzip_of(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string zstd_of(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  REQUIRE(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::string many_lines(std::size_t bytes) {
  std::string content;
  for (int i = 0; content.size() < bytes; ++i) content += "INFO line " + std::to_string(i) + " of a rotated log\n";
  return content;
}

}  // namespace

TEST_CASE("gzip and zstd inputs are told by their first bytes and read decompressed", "[app]") {
  const std::string content = many_lines(9u << 20);  // more than one decompressed piece
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  for (const auto& [name, stored, encoding] :
       {std::tuple{"rotated.log.1", gzip_of(content), faultline::app::InputEncoding::gzip},
        std::tuple{"rotated.zst", zstd_of(content), faultline::app::InputEncoding::zstd},
        std::tuple{"two-members.gz", gzip_of(content.substr(0, 1000)) + gzip_of(content.substr(1000)),
                   faultline::app::InputEncoding::gzip}}) {
    INFO(name);
    const auto path = temp_file(name, stored);
    ScanInput in(path, 4 * page);  // small windows: the compressed bytes come in many pieces
    CHECK(read_all(in) == content);
    CHECK(in.ok());
    CHECK(in.encoding() == encoding);
    CHECK(in.consumed() == stored.size());
  }
  ScanInput plain(temp_file("plain.log", "abc\n"));
  CHECK(read_all(plain) == "abc\n");
  CHECK(plain.encoding() == faultline::app::InputEncoding::plain);
}

TEST_CASE("scan's whole files: a small one read into memory, a large one mapped; the same bytes either way", "[app]") {
  using faultline::app::MappedFile;
  std::string small;
  for (int i = 0; small.size() < 17000; ++i) small += "INFO small line " + std::to_string(i) + "\n";
  std::string large;
  for (int i = 0; large.size() < MappedFile::kReadWholeBelow + 4321; ++i)
    large += "INFO large line " + std::to_string(i) + "\n";
  for (const auto& [name, content] : {std::pair{"small.log", small}, std::pair{"large.log", large},
                                      std::pair{"just-below.log", large.substr(0, MappedFile::kReadWholeBelow - 1)},
                                      std::pair{"one-line.log", std::string("x\n")}}) {
    INFO(name);
    const auto path = temp_file(name, content);
    MappedFile file(path);
    REQUIRE(file.ok());
    CHECK(file.bytes() == content);
    // Parts read elsewhere than in place: any range, and none past the end.
    std::string part(content.size() / 3, '\0');
    CHECK(file.copy(content.size() / 2, part.data(), part.size()));
    CHECK(part == content.substr(content.size() / 2, part.size()));
    CHECK_FALSE(file.copy(content.size() - 1, part.data(), 2));
    // The time it is read at: its modification time, as stat says.
    const auto mtime = std::filesystem::last_write_time(path);
    const auto since_epoch = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::file_clock::to_sys(mtime).time_since_epoch());
    CHECK(file.modified().time_since_epoch() == since_epoch);
    file.release(0, content.size());  // a small file's bytes stay; a mapped file's pages come back when read again
    CHECK(file.bytes() == content);
  }
  MappedFile empty(temp_file("empty-whole.log", ""));
  CHECK(empty.ok());
  CHECK(empty.bytes().empty());
  // A small compressed file is not taken as bytes: it is read decompressed, piece by piece.
  MappedFile gz(temp_file("small.gz", gzip_of("abc\n")));
  CHECK_FALSE(gz.ok());
  CHECK(gz.not_regular());
  MappedFile missing("/nonexistent/faultline-whole.log");
  CHECK_FALSE(missing.ok());
  CHECK_FALSE(missing.not_regular());
}

TEST_CASE("a compressed input cut short, corrupt, or in a format scan cannot read is an error", "[app]") {
  const std::string gz = gzip_of(many_lines(100000));
  const std::string zst = zstd_of(many_lines(100000));
  for (const auto& [name, stored, why] :
       {std::tuple{"cut.gz", gz.substr(0, gz.size() / 2), "gzip input ends in the middle"},
        std::tuple{"cut.zst", zst.substr(0, zst.size() - 3), "zstd input ends in the middle"},
        std::tuple{"bad.gz", gz.substr(0, 10) + std::string(64, '\xff') + gz.substr(74), "corrupt gzip data"},
        std::tuple{"x.xz", std::string("\xfd" "7zXZ\0\0\0\0", 10), "xz-compressed input"},
        std::tuple{"x.bz2", std::string("BZh91AY&SY"), "bzip2-compressed input"}}) {
    INFO(name);
    ScanInput in(temp_file(name, stored));
    read_all(in);
    CHECK(!in.ok());
    CHECK(in.error().find(why) != std::string::npos);
  }
}

TEST_CASE("the progress line: bytes of the size, lines per second, time left", "[app]") {
  using faultline::app::ScanProgress;
  CHECK(ScanProgress::line("pod.log.gz", 512u << 20, 2048u << 20, 3000000, 4.0) ==
        "scan pod.log.gz: 512.0 MiB of 2.0 GiB (25%), 750.0k lines/s, 12 s left");
  CHECK(ScanProgress::line("stdin", 100, 0, 10, 2.0) == "scan stdin: 100 B, 5 lines/s");
}

TEST_CASE("a file's first time: the first line among its first 1000 that prints one, read piece by piece", "[app]") {
  using faultline::app::first_time_in;
  using faultline::parse_rfc3339;
  faultline::DecodeOptions raw;
  raw.format = faultline::ContainerFormat::raw;
  raw.time.reference = *parse_rfc3339("2026-11-29T00:00:00Z");
  const auto read_time = *parse_rfc3339("2026-11-30T00:00:00Z");
  const std::string timed = "2026-11-29T10:08:01.500Z INFO engine started\n";
  // Untimed lines first, enough of them to cross several pieces (16 KiB each), then a timed line.
  std::string untimed;
  for (int i = 0; i < 900; ++i) untimed += "warning: banner line " + std::to_string(i) + " of the motd, nothing to see here\n";
  REQUIRE(untimed.size() > 3 * 16 * 1024);
  CHECK(first_time_in(untimed + timed, raw, read_time) == parse_rfc3339("2026-11-29T10:08:01.500Z"));
  // A line cut by a piece's end is read whole: the timed line starts 5 bytes before the first piece ends.
  const std::string across = std::string(16 * 1024 - 6, 'y') + "\n";
  CHECK(first_time_in(across + timed, raw, read_time) == parse_rfc3339("2026-11-29T10:08:01.500Z"));
  // The last line without its newline still counts.
  CHECK(first_time_in(untimed + timed.substr(0, timed.size() - 1), raw, read_time) ==
        parse_rfc3339("2026-11-29T10:08:01.500Z"));
  // Past the first 1000 lines, or in none: no time.
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "plain " + std::to_string(i) + "\n";
  CHECK_FALSE(first_time_in(many + timed, raw, read_time).has_value());
  CHECK_FALSE(first_time_in(untimed, raw, read_time).has_value());
  CHECK_FALSE(first_time_in("", raw, read_time).has_value());
  // A CRI file: the wrapper's time is the line's.
  faultline::DecodeOptions autod = raw;
  autod.format = faultline::ContainerFormat::auto_detect;
  CHECK(first_time_in("2026-11-29T10:08:02.25Z stdout F no time in the message\n", autod, read_time) ==
        parse_rfc3339("2026-11-29T10:08:02.25Z"));
}
