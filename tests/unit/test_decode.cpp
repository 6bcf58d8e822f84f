// Decode room, framing: line splitting (LF, CRLF, bare CR), partial lines, chunking, truncation, bounded memory and
// allocation-free steady state. RecordBatch and records decoded in place: test_decode_batch.cpp.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "faultline/decode.hpp"

using namespace faultline;
using namespace std::chrono_literals;
#include "decode_support.hpp"

using namespace decode_test;

// ---- allocation counting (for the "no allocation per line" and "bounded memory" tests) ----------------------------

namespace {
std::atomic<bool> g_counting{false};
std::atomic<std::size_t> g_allocs{0};
std::atomic<std::size_t> g_alloc_bytes{0};
}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
void* counted_alloc(std::size_t n) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    g_alloc_bytes.fetch_add(n, std::memory_order_relaxed);
  }
  return std::malloc(n == 0 ? 1 : n);
}
void* counted_alloc_or_throw(std::size_t n) {
  void* p = counted_alloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

// Every non-aligned form is replaced, so each allocation and its release go through malloc/free.
void* operator new(std::size_t n) { return counted_alloc_or_throw(n); }
void* operator new[](std::size_t n) { return counted_alloc_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

struct AllocCounter {
  AllocCounter() {
    g_allocs = 0;
    g_alloc_bytes = 0;
    g_counting = true;
  }
  ~AllocCounter() { g_counting = false; }
  std::size_t allocs() const { return g_allocs.load(); }
  std::size_t bytes() const { return g_alloc_bytes.load(); }
};

}  // namespace

TEST_CASE("ContainerFormat names", "[decode]") {
  for (auto f : {ContainerFormat::auto_detect, ContainerFormat::raw, ContainerFormat::cri, ContainerFormat::docker}) {
    CHECK(parse_container_format(to_string(f)) == f);
  }
  CHECK(to_string(ContainerFormat::auto_detect) == "auto");
  CHECK_FALSE(parse_container_format("json"));
  CHECK_FALSE(parse_container_format("CRI"));
}

// ---- framing ---------------------------------------------------------------------------------------------------------

TEST_CASE("lines split on LF with line numbers and offsets; empty lines make no record", "[decode]") {
  DecodeStats st;
  const auto r = decode("first\n\nthird line\n\n\nsixth\n", options(), &st);
  REQUIRE(r.size() == 3);
  CHECK(r[0].text == "first");
  CHECK(r[0].line == 1);
  CHECK(r[0].offset == 0);
  CHECK(r[1].text == "third line");
  CHECK(r[1].line == 3);
  CHECK(r[1].offset == 7);
  CHECK(r[2].text == "sixth");
  CHECK(r[2].line == 6);
  CHECK(r[2].offset == 20);
  CHECK(r[0].stream == 7);
  CHECK(st.lines == 3);
  CHECK(st.bytes == 26);
}

TEST_CASE("CRLF loses its CR; blank and whitespace-only lines are dropped", "[decode]") {
  const auto r = decode("one\r\ntwo\r\n\r\n   \t\r\nthree\n");
  REQUIRE(texts(r) == std::vector<std::string>{"one", "two", "three"});
  CHECK(r[1].line == 2);
  CHECK(r[2].line == 5);
}

TEST_CASE("a bare CR splits a line into records with the same line number", "[decode]") {
  const auto r = decode("x\nbar  0%\rbar 50%\r\rbar 100%\rERROR 11-29 10:08:01 [a.py:1] boom\n");
  REQUIRE(texts(r) == std::vector<std::string>{"x", "bar  0%", "bar 50%", "bar 100%",
                                               "ERROR 11-29 10:08:01 [a.py:1] boom"});
  for (std::size_t i = 1; i < r.size(); ++i) CHECK(r[i].line == 2);
  CHECK(r[1].offset == 2);
  CHECK(r[2].offset == 10);
  CHECK(r[3].offset == 19);
  CHECK(r[4].offset == 28);
  CHECK(r[4].level == Level::error);
}

TEST_CASE("a partial last line waits for more bytes or flush", "[decode]") {
  Decoder d(0, options());
  RecordBatch b;
  d.feed("complete\nparti", kRead, b);
  REQUIRE(b.size() == 1);
  CHECK(d.has_partial());
  CHECK(d.committed_offset() == 9);
  d.feed("al", kRead, b);
  CHECK(b.size() == 1);
  d.feed(" line\nnext", kRead, b);
  REQUIRE(b.size() == 2);
  CHECK(b.text(1) == "partial line");
  CHECK(b[1].line == 2);
  CHECK(b[1].offset == 9);
  CHECK(d.committed_offset() == 22);
  d.flush(kRead, b);
  REQUIRE(b.size() == 3);
  CHECK(b.text(2) == "next");
  CHECK(b[2].line == 3);
  CHECK_FALSE(d.has_partial());
  CHECK(d.committed_offset() == 26);
  // Flushing again emits nothing.
  d.flush(kRead, b);
  CHECK(b.size() == 3);
}

TEST_CASE("feeding byte by byte or in random chunks gives exactly the same records", "[decode]") {
  std::string raw = realistic_raw_log();
  for (const auto& f : corpus_files()) raw += read_file(f);

  std::string cri_log;
  cri_log += cri("2026-11-29T10:08:01.123456789Z", "stdout", 'F', "INFO 11-29 10:08:01 [a.py:1] hello");
  cri_log += cri("2026-11-29T10:08:02.000000001Z", "stdout", 'P', "part one ");
  cri_log += cri("2026-11-29T10:08:02.5Z", "stderr", 'F', "ERROR:    Exception in ASGI application");
  cri_log += cri("2026-11-29T10:08:03Z", "stdout", 'P', "part two\r50%");
  cri_log += "not a cri line at all\n";
  cri_log += cri("2026-11-29T10:08:04+01:00", "stdout", 'F', "part three \x1b[31mred\x1b[0m");
  for (int i = 0; i < 50; ++i) cri_log += cri("2026-11-29T10:09:00Z", "stderr", 'F', "line " + std::to_string(i));

  std::string docker_log;
  docker_log += docker("INFO 11-29 10:08:01 [a.py:1] hello\n", "stdout", "2026-11-29T10:08:01.123456789Z");
  docker_log += docker(std::string(300, 'a'), "stderr", "2026-11-29T10:08:02Z");
  docker_log += docker("b\n", "stderr", "2026-11-29T10:08:02Z");
  docker_log += docker("tab\there \"quoted\" \\ caf\xC3\xA9\n", "stdout", "2026-11-29T10:08:03Z");

  for (const auto* input : {&raw, &cri_log, &docker_log}) {
    for (std::size_t max_line : {std::size_t{64 * 1024}, std::size_t{40}}) {
      const auto o = options(ContainerFormat::auto_detect, max_line);
      const auto whole = decode(*input, o);
      REQUIRE(whole.size() >= 3);
      const auto bytewise = decode_chunked(*input, o, {1});
      REQUIRE(bytewise.size() == whole.size());
      for (std::size_t i = 0; i < whole.size(); ++i) REQUIRE(bytewise[i] == whole[i]);
      std::mt19937 rng(static_cast<unsigned>(input->size() + max_line));
      for (int round = 0; round < 8; ++round) {
        std::vector<std::size_t> sizes;
        std::uniform_int_distribution<std::size_t> len(1, round < 4 ? 7 : 4096);
        for (int k = 0; k < 64; ++k) sizes.push_back(len(rng));
        const auto chunked = decode_chunked(*input, o, sizes);
        REQUIRE(chunked.size() == whole.size());
        for (std::size_t i = 0; i < whole.size(); ++i) REQUIRE(chunked[i] == whole[i]);
      }
    }
  }
}

TEST_CASE("in place, plain lines taken many at a time give the records that copying them gives", "[decode]") {
  // Raw text with every byte the fast path must leave to the line-by-line path somewhere: CR, CRLF, ESC codes,
  // caret codes ("^[[31m", "^M"), blank and white-space lines, NUL and high bytes, lines near and over max_line, and
  // runs of plain lines of every length across 64-byte blocks.
  std::mt19937 rng(20261202);
  std::string text;
  const std::string odd[] = {"\r", "\x1b[31m", "^[[0m", "^M", "^Mixtral", "   ", "\t", std::string("\0", 1), "\xc3\xa9",
                             "\xff"};
  for (int i = 0; i < 6000; ++i) {
    std::uniform_int_distribution<int> len(0, i % 50 == 0 ? 300 : 130);
    std::string line;
    const int n = len(rng);
    for (int k = 0; k < n; ++k) line.push_back(static_cast<char>('a' + (k * 7 + i) % 26));
    if (i % 17 == 3) line.insert(line.size() / 2, odd[(i / 17) % 10]);
    if (i % 31 == 0) line += "\r";
    text += line + "\n";
    if (i % 97 == 5) text += "\n\n";
  }
  text += "a last line without its newline";
  // With each vector code this CPU runs.
  for_each_vector_framing([&](decode_detail::VectorFraming framing) {
    for (std::size_t max_line : {std::size_t{64 * 1024}, std::size_t{100}, std::size_t{63}, std::size_t{64}}) {
      INFO("framing " << static_cast<int>(framing) << ", max_line " << max_line);
      const auto o = options(ContainerFormat::raw, max_line);
      DecodeStats copied_stats;
      const auto copied = decode(text, o, &copied_stats);
      for (std::size_t piece : {std::size_t{1} << 20, std::size_t{4096}, std::size_t{333}, std::size_t{65}}) {
        INFO("piece " << piece);
        Decoder d(7, o);
        RecordBatch b;
        std::vector<Rec> in_place;
        for (std::size_t at = 0; at < text.size(); at += piece) {
          d.feed(std::string_view(text).substr(at, piece), kRead, b, /*in_place=*/true);
          collect(b, in_place);
          b.clear();
        }
        d.flush(kRead, b);
        collect(b, in_place);
        REQUIRE(in_place.size() == copied.size());
        for (std::size_t i = 0; i < copied.size(); ++i) REQUIRE(in_place[i] == copied[i]);
        CHECK(d.stats().lines == copied_stats.lines);
        CHECK(d.stats().truncated == copied_stats.truncated);
        CHECK(d.committed_offset() == text.size());
      }
    }
  });
}

TEST_CASE("lines longer than max_line_bytes are cut, flagged and counted", "[decode]") {
  DecodeStats st;
  const std::string long_line(250, 'x');
  const auto r = decode("short\n" + long_line + "\nafter\n", options(ContainerFormat::raw, 100), &st);
  REQUIRE(r.size() == 3);
  CHECK(r[1].text == std::string(100, 'x'));
  CHECK(r[1].truncated);
  CHECK(r[1].line == 2);
  CHECK_FALSE(r[0].truncated);
  CHECK(r[2].text == "after");
  CHECK(r[2].line == 3);
  CHECK(r[2].offset == 6 + 251);
  CHECK(st.truncated == 1);
  // Exactly max_line_bytes is not truncated.
  const auto exact = decode(std::string(100, 'y') + "\n", options(ContainerFormat::raw, 100), &st);
  REQUIRE(exact.size() == 1);
  CHECK_FALSE(exact[0].truncated);
  CHECK(st.truncated == 0);
}

TEST_CASE("truncation cuts at a UTF-8 boundary", "[decode]") {
  std::string line;
  for (int i = 0; i < 100; ++i) line += "\xC3\xA9";  // é, 2 bytes each
  const auto r = decode(line + "\n", options(ContainerFormat::raw, 101));
  REQUIRE(r.size() == 1);
  CHECK(r[0].truncated);
  CHECK(r[0].text.size() == 100);
  CHECK(r[0].text.substr(98) == "\xC3\xA9");
  std::string emoji;
  for (int i = 0; i < 10; ++i) emoji += "\xF0\x9F\x98\x80";
  const auto e = decode(emoji + "\n", options(ContainerFormat::raw, 10));
  REQUIRE(e.size() == 1);
  CHECK(e[0].text.size() == 8);
}

TEST_CASE("a 50 MB line without newline keeps memory bounded", "[decode]") {
  const std::size_t max_line = 64 * 1024;
  Decoder d(0, options(ContainerFormat::auto_detect, max_line));
  RecordBatch b;
  const std::string chunk(1 << 20, 'z');
  std::size_t allocated = 0;
  {
    AllocCounter count;
    for (int i = 0; i < 50; ++i) d.feed(chunk, kRead, b);
    allocated = count.bytes();
  }
  CHECK(allocated < 8 * max_line);  // everything allocated is a few times max_line_bytes, not the line
  REQUIRE(b.size() == 1);                  // emitted as soon as it was known to be too long
  CHECK(b[0].truncated);
  CHECK(b.text(0).size() == max_line);
  CHECK(d.stats().truncated == 1);
  CHECK(d.committed_offset() == 0);  // the line is still open
  d.feed("z tail\nnext line\n", kRead, b);
  REQUIRE(b.size() == 2);
  CHECK(b.text(1) == "next line");
  CHECK(b[1].line == 2);
  CHECK(b[1].offset == 50u * (1 << 20) + 7);
  CHECK(d.committed_offset() == 50u * (1 << 20) + 17);
}

TEST_CASE("steady-state decoding does not allocate", "[decode]") {
  std::string raw = realistic_raw_log() + "\n";
  for (const auto& f : corpus_files()) raw += read_file(f);
  if (raw.back() != '\n') raw += '\n';
  for (auto fmt : {ContainerFormat::raw, ContainerFormat::cri, ContainerFormat::docker}) {
    std::string input;
    if (fmt == ContainerFormat::raw) {
      input = raw;
    } else {
      std::size_t p = 0;
      while (p < raw.size()) {
        std::size_t e = raw.find('\n', p);
        if (e == std::string::npos) e = raw.size();
        const std::string line = raw.substr(p, e - p);
        input += fmt == ContainerFormat::cri ? cri("2026-11-29T10:08:01.123456789Z", "stdout", 'F', line)
                                             : docker(line + "\n", "stderr", "2026-11-29T10:08:01.123Z");
        p = e + 1;
      }
    }
    Decoder d(0, options(fmt));
    RecordBatch b;
    // Warm-up with the same chunking: buffers reach their working size.
    for (std::size_t p = 0; p < input.size(); p += 777) d.feed(std::string_view(input).substr(p, 777), kRead, b);
    const std::size_t n = b.size();
    b.clear();
    std::size_t allocs = 0;
    {
      AllocCounter count;
      for (std::size_t p = 0; p < input.size(); p += 777) {
        d.feed(std::string_view(input).substr(p, 777), kRead, b);
      }
      allocs = count.allocs();
    }
    INFO(to_string(fmt));
    CHECK(b.size() == n);
    CHECK(allocs == 0);
  }
}

TEST_CASE("binary garbage, NUL bytes and invalid UTF-8 are just text", "[decode]") {
  const std::string nul_line("ab\0cd\xFF\xFE", 7);
  const auto r = decode(nul_line + "\n\xC3\n");
  REQUIRE(r.size() == 2);
  CHECK(r[0].text == nul_line);
  CHECK(r[1].text == "\xC3");

  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string garbage(1 << 20, '\0');
  for (auto& c : garbage) c = static_cast<char>(byte(rng));
  for (auto fmt : {ContainerFormat::auto_detect, ContainerFormat::raw, ContainerFormat::cri,
                   ContainerFormat::docker}) {
    DecodeStats st;
    const auto recs = decode_chunked(garbage, options(fmt, 300), {1, 13, 4096, 77}, &st);
    CHECK(!recs.empty());
    for (const auto& rec : recs) {
      REQUIRE(rec.text.find('\n') == std::string::npos);
      REQUIRE(rec.text.find('\r') == std::string::npos);
      REQUIRE(rec.text.size() <= 300);
      REQUIRE(!rec.text.empty());
    }
    if (fmt == ContainerFormat::cri || fmt == ContainerFormat::docker) CHECK(st.malformed > 0);
  }
}

// ---- CRI -------------------------------------------------------------------------------------------------------------
