// Decode room, framing and batches: RecordBatch, line splitting (LF, CRLF, bare CR), partial lines, chunking,
// truncation, bounded memory and allocation-free steady state.
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

// ---- RecordBatch -----------------------------------------------------------------------------------------------------

TEST_CASE("RecordBatch joins texts with newlines and finds records by buffer offset", "[decode]") {
  RecordBatch b;
  CHECK(b.empty());
  RecordMeta m;
  m.line = 3;
  b.append(m, "alpha");
  m.line = 4;
  b.append(m, "");
  m.line = 5;
  b.append(m, "gamma");
  REQUIRE(b.size() == 3);
  CHECK(b.joined() == "alpha\n\ngamma\n");
  CHECK(b.bytes() == 13);
  CHECK(b.text(0) == "alpha");
  CHECK(b.text(1).empty());
  CHECK(b.text(2) == "gamma");
  CHECK(b[2].text_begin == 7);
  CHECK(b[2].text_size == 5);
  CHECK(b[1].line == 4);
  CHECK(b.record_at(0) == 0);
  CHECK(b.record_at(5) == 0);  // alpha's '\n'
  CHECK(b.record_at(6) == 1);  // the empty record's '\n'
  CHECK(b.record_at(7) == 2);
  CHECK(b.record_at(12) == 2);
  CHECK(b.record_at(13) == 3);  // past the end
  b.clear();
  CHECK(b.empty());
  CHECK(b.bytes() == 0);
  CHECK(b.record_at(0) == 0);
}

TEST_CASE("RecordBatch refers to records in place and copies the others, in one offset space", "[decode]") {
  const std::string src = "alpha\n\n  \t\nbeta\ngamma\n";
  RecordBatch b;
  RecordMeta m;
  m.line = 1;
  b.append_in_place(m, std::string_view(src).substr(0, 5));   // alpha
  m.line = 4;
  b.append_in_place(m, std::string_view(src).substr(11, 4));  // beta, after two blank lines: same span
  REQUIRE(b.span_count() == 1);
  CHECK(b.span(0).bytes.data() == src.data());  // nothing copied
  CHECK(b.bytes() == 16);
  CHECK(b[1].text_begin == 11);
  m.line = 9;
  b.append(m, "copied");  // a record that is not in the caller's bytes: a span of the batch's own
  m.line = 5;
  b.append_in_place(m, std::string_view(src).substr(16, 5));  // gamma: in place again, a new span
  REQUIRE(b.size() == 4);
  REQUIRE(b.span_count() == 3);
  CHECK(b.span(1).offset == 16);
  CHECK(b.span(1).bytes == "copied\n");
  CHECK(b.span(2).offset == 23);
  CHECK(b.span(2).bytes.data() == src.data() + 16);
  CHECK(b.text(0) == "alpha");
  CHECK(b.text(1) == "beta");
  CHECK(b.text(2) == "copied");
  CHECK(b.text(3) == "gamma");
  CHECK(b.joined() == "alpha\n\n  \t\nbeta\ncopied\ngamma\n");
  CHECK(b.record_at(7) == 0);   // inside the blank lines: the record before them
  CHECK(b.record_at(11) == 1);
  CHECK(b.record_at(22) == 2);
  CHECK(b.record_at(23) == 3);
  CHECK(b.record_at(29) == 4);  // past the end

  // Not contiguous with the span before it (a gap that is not blank lines): a new span.
  RecordBatch c;
  c.append_in_place(m, std::string_view(src).substr(0, 5));
  c.append_in_place(m, std::string_view(src).substr(16, 5));
  CHECK(c.span_count() == 2);
  CHECK(c.joined() == "alpha\ngamma\n");

  // materialize() copies, keeping offsets, so the caller's bytes may go.
  std::string gone = src;
  RecordBatch d;
  d.append_in_place(m, std::string_view(gone).substr(0, 5));
  d.append_in_place(m, std::string_view(gone).substr(11, 4));
  d.materialize();
  gone.assign(gone.size(), 'x');
  CHECK(d.span_count() == 1);
  CHECK(d.text(0) == "alpha");
  CHECK(d.text(1) == "beta");
  CHECK(d[1].text_begin == 11);
  CHECK(d.joined() == "alpha\n\n  \t\nbeta\n");

  // Mixed: only referred spans are copied (to the end of the buffer), owned ones stay; texts keep their offsets and
  // later records still append correctly.
  std::string mixed = src;
  RecordBatch e;
  e.append(m, "own one");
  e.append_in_place(m, std::string_view(mixed).substr(0, 5));   // alpha
  e.append(m, "own two");
  e.append_in_place(m, std::string_view(mixed).substr(16, 5));  // gamma
  REQUIRE(e.span_count() == 4);
  e.materialize();
  mixed.assign(mixed.size(), 'x');
  e.append(m, "own three");
  CHECK(e.joined() == "own one\nalpha\nown two\ngamma\nown three\n");
  const std::vector<std::string> want{"own one", "alpha", "own two", "gamma", "own three"};
  REQUIRE(e.size() == want.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    CHECK(e.text(i) == want[i]);
    CHECK(e[i].text_begin == at);
    CHECK(e.record_at(at) == i);
    at += want[i].size() + 1;
  }
  // Every span, scanned as a span, holds exactly its records' texts.
  std::string spans;
  for (std::size_t k = 0; k < e.span_count(); ++k) {
    CHECK(e.span(k).offset == spans.size());
    spans += e.span(k).bytes;
  }
  CHECK(spans == e.joined());
}

namespace {
// A log with timed and untimed lines (tracebacks inherit the time before them), blank lines, CRLF, ANSI, carets and
// lines longer than a small max_line_bytes; raw, or wrapped in CRI (its own times, and P/F chains).
std::string mixed_log(bool cri) {
  std::string raw;
  for (int i = 0; i < 40; ++i) {
    raw += "INFO 11-29 10:08:" + std::to_string(10 + i) + " [a.py:1] line " + std::to_string(i) + "\n";
    if (i % 7 == 0) raw += "\n   \n";
    if (i % 9 == 0) raw += "with CR\r\n";
    if (i % 11 == 0) raw += "\x1b[31mERROR\x1b[0m coloured ^ caret\n";
    if (i % 13 == 0) raw += std::string(300, 'z') + "\n";
    if (i % 5 == 0) raw += "Traceback (most recent call last):\n  File \"x.py\", line 3, in f\n";
    if (i % 6 == 0) raw += "[2026-11-29 10:09:" + std::to_string(10 + i) + " TP0] Decode batch\n";
  }
  if (!cri) return raw;
  std::string out;
  std::size_t n = 0, pos = 0;
  while (pos < raw.size()) {
    const std::size_t nl = raw.find('\n', pos);
    const std::string line = raw.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string stamp = "2026-11-29T10:10:" + std::to_string(10 + (n++ % 40)) + ".5Z ";
    const std::string stream = n % 3 == 0 ? "stderr " : "stdout ";
    if (line.size() > 20 && n % 4 == 0) {  // split into a P and an F fragment
      out += stamp + stream + "P " + line.substr(0, 12) + "\n" + stamp + stream + "F " + line.substr(12) + "\n";
    } else {
      out += stamp + stream + "F " + line + "\n";
    }
  }
  return out;
}
}  // namespace

TEST_CASE("decoding in place, and looking at records out of order, gives the same records as copying", "[decode]") {
  for (const bool cri : {false, true}) {
    const std::string input = mixed_log(cri);
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{37}, std::size_t{4096}, input.size()}) {
      for (const std::size_t max_line : {std::size_t{64}, std::size_t{64 * 1024}}) {
        std::vector<Rec> modes[3];  // copied; in place; in place with the last record looked at first
        for (int mode = 0; mode < 3; ++mode) {
          auto o = options(cri ? ContainerFormat::cri : ContainerFormat::raw, max_line);
          Decoder d(1, o);
          RecordBatch b;
          for (std::size_t pos = 0; pos < input.size(); pos += chunk) {
            d.feed(std::string_view(input).substr(pos, chunk), kRead, b, mode > 0);
            if (mode > 0) {
              // Spans lie in `input` or in the batch; texts are where the offsets say.
              const std::string all = b.joined();
              for (std::size_t i = 0; i < b.size(); ++i) {
                CHECK(all.substr(b[i].text_begin, b[i].text_size) == b.text(i));
              }
            }
            if (mode == 2 && b.size() > 2) {
              // Looked at out of order: the last record first, then the rest (inheritance walks back on its own).
              (void)b[b.size() - 1];
            }
            collect(b, modes[mode]);
            b.clear();
          }
          d.flush(kRead, b);
          collect(b, modes[mode]);
        }
        INFO("cri " << cri << ", chunk " << chunk << ", max line " << max_line);
        for (int mode = 1; mode < 3; ++mode) {
          const auto& want = modes[0];
          const auto& got = modes[mode];
          INFO("mode " << mode);
          REQUIRE(want.size() == got.size());
          for (std::size_t i = 0; i < want.size(); ++i) {
            CHECK(want[i].text == got[i].text);
            CHECK(want[i].line == got[i].line);
            CHECK(want[i].offset == got[i].offset);
            CHECK(want[i].time == got[i].time);
            CHECK(want[i].from_log == got[i].from_log);
            CHECK(want[i].level == got[i].level);
            CHECK(want[i].truncated == got[i].truncated);
          }
        }
      }
    }
  }
}

TEST_CASE("deferred times are inherited per stream across batches; a new instance starts over", "[decode]") {
  auto o = options(ContainerFormat::raw);
  Decoder a(0, o), b(1, o);
  RecordBatch batch;
  a.feed("INFO 11-29 10:00:01 [a.py:1] a first\n", kRead, batch);
  b.feed("untimed b\n", kRead, batch);
  a.feed("untimed a\n", kRead, batch);
  REQUIRE(batch.size() == 3);
  CHECK(batch.records()[2].deferred == 1);  // not worked out until looked at
  CHECK(batch[2].time == T("2026-11-29T10:00:01Z"));
  CHECK(batch[2].time_inherited);
  CHECK_FALSE(batch[2].time_from_log);
  CHECK(batch[1].time == kRead);  // stream 1 has printed no time
  CHECK_FALSE(batch[1].time_inherited);
  batch.clear();
  // The next batch: stream 0's untimed lines still inherit 10:00:01, through a chain of untimed lines.
  a.feed("still untimed\nand again\n", kRead, batch);
  b.feed("WARNING 11-29 10:00:07 [b.py:2] b timed\n", kRead, batch);
  b.feed("b after\n", kRead, batch);
  REQUIRE(batch.size() == 4);
  CHECK(batch[1].time == T("2026-11-29T10:00:01Z"));
  CHECK(batch[0].time == T("2026-11-29T10:00:01Z"));
  CHECK(batch[3].time == T("2026-11-29T10:00:07Z"));
  CHECK(batch[2].level == Level::warning);
  batch.clear();
  batch.forget_stream(0);
  a = Decoder(0, o);
  a.feed("a new instance\n", kRead, batch);
  CHECK(batch[0].time == kRead);
  CHECK_FALSE(batch[0].time_inherited);
}

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
