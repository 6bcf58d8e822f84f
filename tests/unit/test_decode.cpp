// Unit tests for the decode room (include/faultline/decode.hpp): framing, container formats, ANSI, time and level.
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

// ---- helpers -------------------------------------------------------------------------------------------------------

Time T(const char* rfc3339) {
  auto t = parse_rfc3339(rfc3339);
  REQUIRE(t);
  return *t;
}

const Time kRead = Time(Duration(1'700'000'000'000'000'000));  // 2023-11-14T22:13:20Z, the "time of reading"

struct Rec {
  std::string text;
  std::uint64_t line = 0;
  std::uint64_t offset = 0;
  Time time{};
  Level level = Level::unknown;
  bool from_log = false;
  bool truncated = false;
  std::uint32_t stream = 0;

  bool operator==(const Rec& o) const {
    return text == o.text && line == o.line && offset == o.offset && time == o.time && level == o.level &&
           from_log == o.from_log && truncated == o.truncated && stream == o.stream;
  }
};

std::ostream& operator<<(std::ostream& os, const Rec& r) {
  return os << "{" << r.line << "@" << r.offset << " " << to_string(r.level) << " " << format_time(r.time)
            << (r.from_log ? " log" : " inherited") << (r.truncated ? " truncated" : "") << " '" << r.text << "'}";
}

void collect(const RecordBatch& b, std::vector<Rec>& out) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto& m = b[i];
    out.push_back(Rec{std::string(b.text(i)), m.line, m.offset, m.time, m.level, m.time_from_log, m.truncated,
                      m.stream});
  }
}

DecodeOptions options(ContainerFormat f = ContainerFormat::auto_detect, std::size_t max_line = 64 * 1024) {
  DecodeOptions o;
  o.format = f;
  o.max_line_bytes = max_line;
  o.time.reference = T("2026-12-01T00:00:00Z");
  return o;
}

// Feeds `input` in pieces given by `sizes` (cycled), then flushes.
std::vector<Rec> decode_chunked(std::string_view input, const DecodeOptions& o, const std::vector<std::size_t>& sizes,
                                DecodeStats* stats = nullptr, ContainerFormat* fmt = nullptr) {
  Decoder d(7, o);
  RecordBatch b;
  std::vector<Rec> out;
  std::size_t pos = 0, k = 0;
  while (pos < input.size()) {
    const std::size_t n = std::min(sizes[k++ % sizes.size()], input.size() - pos);
    d.feed(input.substr(pos, n), kRead, b);
    pos += n;
    collect(b, out);
    b.clear();
  }
  d.flush(kRead, b);
  collect(b, out);
  if (stats != nullptr) *stats = d.stats();
  if (fmt != nullptr) *fmt = d.format();
  return out;
}

std::vector<Rec> decode(std::string_view input, const DecodeOptions& o = options(), DecodeStats* stats = nullptr,
                        ContainerFormat* fmt = nullptr) {
  return decode_chunked(input, o, {input.size() + 1}, stats, fmt);
}

std::vector<std::string> texts(const std::vector<Rec>& recs) {
  std::vector<std::string> t;
  for (const auto& r : recs) t.push_back(r.text);
  return t;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(FAULTLINE_CORPUS_DIR)) {
    if (e.path().extension() == ".log") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string cri(const std::string& time, const char* stream, char tag, const std::string& msg) {
  return time + " " + stream + " " + tag + " " + msg + "\n";
}

// A JSON string literal for docker's json-file driver.
std::string json_quote(std::string_view s) {
  std::string o = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      case '\x1b': o += "\\u001b"; break;
      default: o += c;
    }
  }
  return o + "\"";
}

std::string docker(std::string_view log, const char* stream, const char* time) {
  return std::string("{\"log\":") + json_quote(log) + ",\"stream\":\"" + stream + "\",\"time\":\"" + time + "\"}\n";
}

// A realistic mixed raw log: vLLM, TRT-LLM, SGLang lines, tracebacks, a tqdm bar with CRs, CRLF, ANSI colours,
// caret-notation, blank lines, and a UTF-8 box frame.
std::string realistic_raw_log() {
  std::string s;
  s += "(APIServer pid=1) INFO 11-29 10:08:01 [api_server.py:1] vLLM API server version 0.11.0\n";
  s += "\x1b[1;36m(EngineCore_DP0 pid=88)\x1b[0;0m WARNING 11-29 10:08:02 [core.py:12] slow start\n";
  s += "Loading safetensors checkpoint shards:   0% Completed | 0/4\rLoading safetensors checkpoint shards:  50% "
       "Completed | 2/4\rLoading safetensors checkpoint shards: 100% Completed | 4/4\r\n";
  s += "\n\n";
  s += "[11/29/2026-10:08:03] [TRT-LLM] [W] something \xE2\x94\x82 odd\r\n";
  s += "[2026-11-29 10:08:04 DP0 TP3] Scheduler hit an exception: Traceback (most recent call last):\n";
  s += "  File \"/x/scheduler.py\", line 1, in run\n";
  s += "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  s += "^[[1;36m(APIServer pid=9)^[[0;0m ERROR 11-29 10:08:05 [serving_chat.py:250] Error^M^[[1;36m(APIServer "
       "pid=9)^[[0;0m ERROR 11-29 10:08:05 [serving_chat.py:250] Traceback^M\n";
  s += "E1129 10:08:06.123456 12345 nccl.cc:12] NCCL WARN timeout\n";
  s += "\xE2\x94\x82 ERROR 11-29 10:08:07 engine.py:157] RuntimeError: CUDA error         \n";
  s += "2025-11-11 06:41:27,319 - WARNING - autotuner.py:485 - skipping tactic\n";
  s += "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout\n";
  s += "sglang-1  | [2026-11-29 10:08:09 TP1] Load weight end. \xF0\x9F\x98\x80 \xC3\xA9\n";
  s += "no newline at the end";
  return s;
}

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

TEST_CASE("CRI: F lines, wrapper time wins, level comes from the message", "[decode]") {
  DecodeStats st;
  ContainerFormat fmt{};
  const std::string in = cri("2026-11-29T10:08:01.123456789Z", "stdout", 'F', "INFO 01-02 03:04:05 [a.py:1] hi") +
                         cri("2026-11-29T10:08:02Z", "stderr", 'F', "plain text") +
                         cri("2026-11-29T10:08:03Z", "stderr", 'F', "");
  const auto r = decode(in, options(), &st, &fmt);
  CHECK(fmt == ContainerFormat::cri);
  REQUIRE(r.size() == 2);
  CHECK(r[0].text == "INFO 01-02 03:04:05 [a.py:1] hi");
  CHECK(r[0].time == T("2026-11-29T10:08:01.123456789Z"));
  CHECK(r[0].from_log);
  CHECK(r[0].level == Level::info);
  CHECK(r[0].offset == 0);
  CHECK(r[1].text == "plain text");
  CHECK(r[1].level == Level::unknown);
  CHECK(r[1].line == 2);
  CHECK(st.malformed == 0);
}

TEST_CASE("CRI: P fragments join per stream, interleaved stdout and stderr", "[decode]") {
  DecodeStats st;
  const std::string in = cri("2026-11-29T10:00:01Z", "stdout", 'P', "out-a ") +   // line 1
                         cri("2026-11-29T10:00:02Z", "stderr", 'P', "err-a ") +   // line 2
                         cri("2026-11-29T10:00:03Z", "stdout", 'P', "out-b ") +   // line 3
                         cri("2026-11-29T10:00:04Z", "stderr", 'F', "err-b") +    // line 4
                         cri("2026-11-29T10:00:05Z", "stdout", 'F', "out-c") +    // line 5
                         cri("2026-11-29T10:00:06Z", "stdout", 'F', "single");    // line 6
  const std::size_t line1 = 0;
  const std::size_t line2 = in.find("2026-11-29T10:00:02Z");
  const auto r = decode(in, options(ContainerFormat::cri), &st);
  REQUIRE(texts(r) == std::vector<std::string>{"err-a err-b", "out-a out-b out-c", "single"});
  CHECK(r[0].line == 2);
  CHECK(r[0].offset == line2);
  CHECK(r[0].time == T("2026-11-29T10:00:02Z"));  // the time of the first fragment
  CHECK(r[1].line == 1);
  CHECK(r[1].offset == line1);
  CHECK(r[2].line == 6);
  CHECK(st.partials_joined == 3);
  CHECK(st.lines == 3);
}

TEST_CASE("CRI: committed_offset stays at an open P chain", "[decode]") {
  Decoder d(0, options(ContainerFormat::cri));
  RecordBatch b;
  const std::string p1 = cri("2026-11-29T10:00:01Z", "stdout", 'P', "begin ");
  const std::string e1 = cri("2026-11-29T10:00:02Z", "stderr", 'F', "err");
  const std::string f1 = cri("2026-11-29T10:00:03Z", "stdout", 'F', "end");
  d.feed(p1 + e1, kRead, b);
  REQUIRE(b.size() == 1);
  CHECK(d.committed_offset() == 0);
  CHECK(d.committed_line() == 1);
  CHECK(d.has_partial());
  d.feed(f1, kRead, b);
  REQUIRE(b.size() == 2);
  CHECK(b.text(1) == "begin end");
  CHECK(d.committed_offset() == p1.size() + e1.size() + f1.size());
  CHECK(d.committed_line() == 4);
  CHECK_FALSE(d.has_partial());
}

TEST_CASE("CRI: a P chain longer than max_line_bytes is truncated and counted", "[decode]") {
  DecodeStats st;
  std::string in;
  for (int i = 0; i < 10; ++i) in += cri("2026-11-29T10:00:01Z", "stdout", 'P', std::string(30, char('a' + i)));
  in += cri("2026-11-29T10:00:02Z", "stdout", 'F', "tail");
  in += cri("2026-11-29T10:00:03Z", "stdout", 'F', "next");
  const auto r = decode(in, options(ContainerFormat::cri, 100), &st);
  REQUIRE(r.size() == 2);
  CHECK(r[0].text == std::string(30, 'a') + std::string(30, 'b') + std::string(30, 'c') + std::string(10, 'd'));
  CHECK(r[0].truncated);
  CHECK(r[0].line == 1);
  CHECK(r[1].text == "next");
  CHECK(r[1].line == 12);
  CHECK(st.truncated == 1);
  CHECK(st.partials_joined == 10);
}

TEST_CASE("CRI: CR inside a joined message splits records; flush emits open chains", "[decode]") {
  const std::string l1 = cri("2026-11-29T10:00:01Z", "stdout", 'P', " 10%|#\r 20%|##");
  const std::string l2 = cri("2026-11-29T10:00:02Z", "stdout", 'P', "#\r 30%");
  const auto r = decode(l1 + l2, options(ContainerFormat::cri));
  REQUIRE(texts(r) == std::vector<std::string>{" 10%|#", " 20%|###", " 30%"});
  CHECK(r[0].offset == 0);
  CHECK(r[1].offset == l1.find(" 20%"));
  CHECK(r[2].offset == l1.size() + l2.find(" 30%"));
  CHECK(r[1].time == T("2026-11-29T10:00:01Z"));
  CHECK(r[2].time == T("2026-11-29T10:00:02Z"));
  for (const auto& x : r) CHECK(x.line == 1);
}

TEST_CASE("CRI: lines that do not fit are kept as raw text and counted", "[decode]") {
  DecodeStats st;
  const std::string in = cri("2026-11-29T10:00:01Z", "stdout", 'F', "ok") + "garbage line\n" +
                         "2026-11-29T10:00:01Z stdlog F bad stream\n" + cri("2026-11-29T10:00:02Z", "stdout", 'F', "ok2");
  const auto r = decode(in, options(), &st);
  REQUIRE(texts(r) == std::vector<std::string>{"ok", "garbage line", "2026-11-29T10:00:01Z stdlog F bad stream",
                                               "ok2"});
  CHECK(st.malformed == 2);
  CHECK(r[1].time == T("2026-11-29T10:00:01Z"));  // inherited from the previous record
  CHECK_FALSE(r[1].from_log);
  CHECK(r[2].from_log);  // the message itself starts with an RFC 3339 time
}

// ---- docker json-file ------------------------------------------------------------------------------------------------

TEST_CASE("docker: escapes decode to UTF-8, stream and time are read", "[decode]") {
  const std::string in =
      R"({"log":"a\tb \"q\" back\\slash \/ caf\u00e9 \ud83d\ude00 lone\ud800x \u001b[31mred\u001b[0m\n","stream":"stderr","time":"2026-11-29T10:08:01.123456789Z"})"
      "\n";
  ContainerFormat fmt{};
  DecodeStats st;
  const auto r = decode(in, options(), &st, &fmt);
  CHECK(fmt == ContainerFormat::docker);
  REQUIRE(r.size() == 1);
  CHECK(r[0].text == "a\tb \"q\" back\\slash / caf\xC3\xA9 \xF0\x9F\x98\x80 lone\xEF\xBF\xBDx red");
  CHECK(r[0].time == T("2026-11-29T10:08:01.123456789Z"));
  CHECK(r[0].from_log);
  CHECK(st.malformed == 0);
}

TEST_CASE("docker: a log without a final newline joins the next entry (16 KiB splits)", "[decode]") {
  DecodeStats st;
  const std::string a(16 * 1024, 'A');
  const std::string b2(16 * 1024, 'B');
  const std::string in = docker(a, "stdout", "2026-11-29T10:00:01Z") + docker("other\n", "stderr", "2026-11-29T10:00:02Z") +
                         docker(b2, "stdout", "2026-11-29T10:00:03Z") + docker("end\n", "stdout", "2026-11-29T10:00:04Z");
  const auto r = decode(in, options(), &st);
  REQUIRE(r.size() == 2);
  CHECK(r[0].text == "other");
  CHECK(r[1].text == a + b2 + "end");
  CHECK(r[1].line == 1);
  CHECK(r[1].offset == 0);
  CHECK(r[1].time == T("2026-11-29T10:00:01Z"));
  CHECK(st.partials_joined == 2);
}

TEST_CASE("docker: key order, extra attributes and CRLF output", "[decode]") {
  const std::string in =
      R"({"time":"2026-11-29T10:00:01Z","attrs":{"tag":"x","n":[1,{"a":"}"}]},"stream":"stdout","log":"WARNING 11-29 10:00:00 [a.py:1] w\r\n"})"
      "\n";
  DecodeStats st;
  const auto r = decode(in, options(ContainerFormat::docker), &st);
  REQUIRE(r.size() == 1);
  CHECK(r[0].text == "WARNING 11-29 10:00:00 [a.py:1] w");
  CHECK(r[0].level == Level::warning);
  CHECK(r[0].time == T("2026-11-29T10:00:01Z"));
  CHECK(st.malformed == 0);
}

TEST_CASE("docker: malformed JSON is kept as raw text", "[decode]") {
  DecodeStats st;
  const std::string good = docker("fine\n", "stdout", "2026-11-29T10:00:01Z");
  const std::string in = good + "{\"log\":\"unterminated\n" + "{\"log\":\"bad escape \\q\",\"stream\":\"stdout\"}\n" +
                         "{\"stream\":\"stdout\",\"time\":\"2026-11-29T10:00:01Z\"}\n" + "plain\n" + good;
  const auto r = decode(in, options(), &st);
  REQUIRE(r.size() == 6);
  CHECK(r[0].text == "fine");
  CHECK(r[1].text == "{\"log\":\"unterminated");
  CHECK(r[4].text == "plain");
  CHECK(r[5].text == "fine");
  CHECK(st.malformed == 4);
}

TEST_CASE("docker: a JSON line over its buffer bound is cut but its log prefix kept", "[decode]") {
  DecodeStats st;
  const std::string huge(600 * 1024, 'q');
  const std::string in = docker(huge + "\n", "stdout", "2026-11-29T10:00:01Z") + docker("after\n", "stdout", "2026-11-29T10:00:02Z");
  const auto r = decode(in, options(ContainerFormat::docker, 1000), &st);
  REQUIRE(r.size() == 2);
  CHECK(r[0].text == std::string(1000, 'q'));
  CHECK(r[0].truncated);
  CHECK(r[1].text == "after");
  CHECK(r[1].line == 2);
  CHECK(st.truncated == 1);
}

// ---- auto-detection --------------------------------------------------------------------------------------------------

TEST_CASE("auto-detection looks at the first non-empty line", "[decode]") {
  ContainerFormat fmt{};
  decode("\n\n" + cri("2026-11-29T10:00:01Z", "stdout", 'F', "x"), options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::cri);
  decode("\r\n  \n" + docker("x\n", "stdout", "2026-11-29T10:00:01Z"), options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::docker);
  decode("INFO 11-29 10:08:01 [a.py:1] x\n" + cri("2026-11-29T10:00:01Z", "stdout", 'F', "x"), options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::raw);
  decode("{\"msg\":\"structured app log\"}\n", options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::raw);
  decode("2026-11-29T10:08:01.123Z some CI line\n", options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::raw);

  Decoder d(0, options());
  CHECK(d.format() == ContainerFormat::auto_detect);
  RecordBatch b;
  d.feed("\n\n2026-11-29T10:00", kRead, b);
  CHECK(d.format() == ContainerFormat::auto_detect);  // not enough bytes yet
  d.feed(":01Z stderr F detected\n", kRead, b);
  CHECK(d.format() == ContainerFormat::cri);
  REQUIRE(b.size() == 1);
  CHECK(b.text(0) == "detected");
  CHECK(b[0].line == 3);
  CHECK(b[0].offset == 2);

  // A raw first line shorter than the detection window, flushed without newline.
  Decoder d2(0, options());
  RecordBatch b2;
  d2.feed("short", kRead, b2);
  CHECK(b2.empty());
  d2.flush(kRead, b2);
  CHECK(d2.format() == ContainerFormat::raw);
  REQUIRE(b2.size() == 1);
  CHECK(b2.text(0) == "short");
}

// ---- ANSI and caret notation -----------------------------------------------------------------------------------------

TEST_CASE("strip_ansi removes escape sequences and their caret-notation copies", "[decode]") {
  const auto strip = [](std::string s) {
    strip_ansi(s);
    return s;
  };
  CHECK(strip("\x1b[1;36m(APIServer pid=1)\x1b[0;0m ERROR x") == "(APIServer pid=1) ERROR x");
  CHECK(strip("^[[1;36m(APIServer pid=1)^[[0;0m ERROR x") == "(APIServer pid=1) ERROR x");
  CHECK(strip("\x1b]0;window title\x07text") == "text");
  CHECK(strip("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "link");
  CHECK(strip("^[]0;title^Gtext") == "text");
  CHECK(strip("a\x1b[2Kb\x1b[1Gc") == "abc");
  CHECK(strip("\x1b(Bplain\x1b" "7saved\x1b" "8") == "plainsaved");
  CHECK(strip("cut off at the end \x1b[1;3") == "cut off at the end ");
  CHECK(strip("lone escape\x1b") == "lone escape");
  CHECK(strip("x^2 and ^[ alone and ^[[ incomplete") == "x^2 and ^[ alone and ^[[ incomplete");
  CHECK(strip("no escapes at all") == "no escapes at all");
  CHECK(strip("") == "");
}

TEST_CASE("the decoder strips ANSI before records and splits on caret-notation CR", "[decode]") {
  const auto r = decode(
      "\x1b[32mINFO\x1b[0m 11-29 10:08:01 [a.py:1] green\n"
      "^[[1;36m(APIServer pid=9)^[[0;0m ERROR 08-22 21:36:14 [s.py:250] first^M^[[1;36m(APIServer pid=9)^[[0;0m "
      "ERROR 08-22 21:36:14 [s.py:250] second^M\n"
      "trailing caret CRs^M^M\n"
      "regex ^Mixtral.* is text^M\n"
      "\x1b[0m\n");
  REQUIRE(texts(r) == std::vector<std::string>{"INFO 11-29 10:08:01 [a.py:1] green",
                                               "(APIServer pid=9) ERROR 08-22 21:36:14 [s.py:250] first",
                                               "(APIServer pid=9) ERROR 08-22 21:36:14 [s.py:250] second",
                                               "trailing caret CRs", "regex ^Mixtral.* is text"});
  CHECK(r[0].level == Level::info);
  CHECK(r[1].level == Level::error);
  CHECK(r[2].level == Level::error);
  CHECK(r[1].line == 2);
  CHECK(r[2].line == 2);
  const std::size_t line2 = r[1].offset;
  CHECK(r[2].offset > line2);
  CHECK(r[1].time == T("2026-08-22T21:36:14Z"));
}

// ---- time and level shapes -------------------------------------------------------------------------------------------

namespace {

struct Shape {
  const char* line;
  Level level;
  const char* time;  // nullptr: no time
};

}  // namespace

TEST_CASE("parse_line_meta reads the serving stacks' time and level shapes", "[decode]") {
  TimeContext ctx;
  ctx.reference = T("2026-12-01T00:00:00Z");
  const Shape shapes[] = {
      // vLLM
      {"INFO 11-29 10:08:01 [file.py:123] msg", Level::info, "2026-11-29T10:08:01Z"},
      {"ERROR 01-06 23:27:37 [core.py:890] boom", Level::error, "2026-01-06T23:27:37Z"},
      {"INFO 11-29 10:08:01 file.py:123] old format", Level::info, "2026-11-29T10:08:01Z"},
      {"WARNING 11-29 10:08:01 [x.py:1] w", Level::warning, "2026-11-29T10:08:01Z"},
      {"DEBUG 11-29 10:08:01 [x.py:1] d", Level::debug, "2026-11-29T10:08:01Z"},
      {"CRITICAL 11-29 10:08:01 [x.py:1] c", Level::critical, "2026-11-29T10:08:01Z"},
      {"(EngineCore_DP0 pid=88) ERROR 01-06 23:27:37 [core.py:890] x", Level::error, "2026-01-06T23:27:37Z"},
      {"(VllmWorker TP1 pid=12) ERROR 08-20 03:19:43 [multiproc_executor.py:596] x", Level::error,
       "2026-08-20T03:19:43Z"},
      {"(Worker_PP0 pid=38385) 2025-11-11 06:41:27,319 - WARNING - autotuner.py:485 - x", Level::warning,
       "2025-11-11T06:41:27.319Z"},
      {"(APIServer pid=1) INFO:     Started server process [57071]", Level::info, nullptr},
      {"(VllmWorkerProcess pid=802) ERROR 04-23 00:04:19 multiproc_worker_utils.py:240] x", Level::error,
       "2026-04-23T00:04:19Z"},
      {"\xE2\x94\x82 ERROR 09-27 06:46:46 engine.py:157] RuntimeError: CUDA error", Level::error,
       "2026-09-27T06:46:46Z"},
      {"  | ERROR 07-01 13:54:43 multiproc_worker_utils.py:120] Worker died", Level::error, "2026-07-01T13:54:43Z"},
      // TensorRT-LLM
      {"[11/29/2026-10:08:01] [TRT-LLM] [W] msg", Level::warning, "2026-11-29T10:08:01Z"},
      {"[TRT-LLM] [E] msg", Level::error, nullptr},
      {"[TensorRT-LLM][ERROR] Assertion failed: Unsupported architecture", Level::error, nullptr},
      {"[TensorRT-LLM][WARNING] max_beam_width is not specified", Level::warning, nullptr},
      {"[TensorRT-LLM][INFO] Max KV cache pages per sequence: 25", Level::info, nullptr},
      {"[04/28/2024-15:57:10] [TRT] [I] Compute capability: (7, 5)", Level::info, "2024-04-28T15:57:10Z"},
      {"[06/21/2025-01:30:42] [TRT-LLM] [RANK 0] [E] Failed to initialize executor", Level::error,
       "2025-06-21T01:30:42Z"},
      {"[TensorRT-LLM] TensorRT-LLM version: 0.9.0", Level::unknown, nullptr},
      // SGLang
      {"[2026-09-21 13:38:19 TP1] Running FlashInfer autotune", Level::unknown, "2026-09-21T13:38:19Z"},
      {"[2026-09-21 13:38:19 DP0 TP3] Scheduler hit an exception: Traceback", Level::unknown, "2026-09-21T13:38:19Z"},
      {"[2026-09-21 13:38:19] Server started", Level::unknown, "2026-09-21T13:38:19Z"},
      {"sglang-1  | [2025-11-01 16:50:36 TP0] sglang is using nccl==2.27.3", Level::unknown, "2025-11-01T16:50:36Z"},
      // Python logging family
      {"2025-11-11 06:41:27,319 - WARNING - msg", Level::warning, "2025-11-11T06:41:27.319Z"},
      {"2025-11-11 06:41:27,319 - my.logger - ERROR - msg", Level::error, "2025-11-11T06:41:27.319Z"},
      {"2024-12-20 10:00:01 INFO 1234 [file.py:12] msg", Level::info, "2024-12-20T10:00:01Z"},
      {"2024-06-01 10:00:00,123 xinference.core 1234 ERROR    msg", Level::error, "2024-06-01T10:00:00.123Z"},
      {"2024-04-27 10:13:05 | ERROR | stderr | Traceback (most recent call last):", Level::error,
       "2024-04-27T10:13:05Z"},
      // uvicorn
      {"INFO:     127.0.0.1:5000 - \"POST /v1/chat/completions HTTP/1.1\" 500 Internal Server Error", Level::info,
       nullptr},
      {"ERROR:    Exception in ASGI application", Level::error, nullptr},
      {"WARNING:root:something", Level::warning, nullptr},
      // glog / abseil / torch
      {"E1129 10:08:01.123456 12345 file.cc:12] msg", Level::error, "2026-11-29T10:08:01.123Z"},
      {"W0102 03:04:05.000001 1 f.cc:1] msg", Level::warning, "2026-01-02T03:04:05Z"},
      {"F1129 10:08:01.123456 12345 file.cc:12] fatal", Level::critical, "2026-11-29T10:08:01.123Z"},
      {"[rank0]:[E1129 10:08:01.123456 ProcessGroupNCCL.cpp:632] [PG 0 Rank 0] timeout", Level::error,
       "2026-11-29T10:08:01.123Z"},
      {"[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout", Level::error,
       nullptr},
      {"[rank2]:[W ProcessGroupNCCL.cpp:1414] x", Level::warning, nullptr},
      // RFC 3339 at line start
      {"2026-11-29T10:08:01.123Z msg", Level::unknown, "2026-11-29T10:08:01.123Z"},
      {"2026-11-29T10:08:01.123456Z ERROR something failed", Level::error, "2026-11-29T10:08:01.123Z"},
      {"2026-11-29T12:08:01+02:00 info starting", Level::info, "2026-11-29T10:08:01Z"},
      {"[2026-01-31T04:40:19Z] E           vllm.v1.engine.exceptions.EngineDeadError", Level::unknown,
       "2026-01-31T04:40:19Z"},
      // kernel
      {"[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", Level::unknown, nullptr},
      {"[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0", Level::unknown, nullptr},
      {"Nov 29 10:08:01 host kernel: NVRM: Xid (PCI:0000:3b:00): 79", Level::unknown, "2026-11-29T10:08:01Z"},
      {"Nov  2 10:08:01 host kernel: NVRM: Xid", Level::unknown, "2026-11-02T10:08:01Z"},
      {"[Wed Jun 24 15:44:42 2026] NVRM: Xid (PCI:0000:70:00): 31", Level::unknown, "2026-06-24T15:44:42Z"},
      // llama.cpp server
      {"0.17.512.622 E ggml_cuda_compute_forward: ADD failed", Level::error, nullptr},
      // no shape
      {"Traceback (most recent call last):", Level::unknown, nullptr},
      {"  File \"/x.py\", line 1, in f", Level::unknown, nullptr},
      {"RuntimeError: CUDA error: out of memory", Level::unknown, nullptr},
      {"Error: Failed to initialize the TMA descriptor 999", Level::unknown, nullptr},
      {"INFORMATIONAL 11-29 10:08:01 not a level word", Level::unknown, nullptr},
      {"ERROR 13-29 10:08:01 [x.py:1] bad month", Level::unknown, nullptr},
      {"[AutoTuner]: Tuning trtllm_batch_decode_mla:   0%|    | 0/21 [00:00<?, ?profile/s][2026-09-21 13:38:29 TP1] "
       "Scheduler hit an exception",
       Level::unknown, nullptr},
      {"(most recent call last) ERROR 11-29 10:08:01 [x.py:1]", Level::unknown, nullptr},
      {"", Level::unknown, nullptr},
  };
  for (const auto& s : shapes) {
    INFO(s.line);
    const LineMeta m = parse_line_meta(s.line, ctx);
    CHECK(m.level == s.level);
    if (s.time == nullptr) {
      CHECK_FALSE(m.time);
    } else {
      REQUIRE(m.time);
      CHECK(format_time(*m.time) == format_time(T(s.time)));
    }
  }
}

TEST_CASE("parse_line_meta keeps nanoseconds", "[decode]") {
  TimeContext ctx;
  ctx.reference = T("2026-12-01T00:00:00Z");
  auto m = parse_line_meta("2026-11-29T10:08:01.123456789Z x", ctx);
  REQUIRE(m.time);
  CHECK(*m.time == T("2026-11-29T10:08:01.123456789Z"));
  m = parse_line_meta("E1129 10:08:01.123456 1 f.cc:1] x", ctx);
  REQUIRE(m.time);
  CHECK(*m.time == T("2026-11-29T10:08:01.123456Z"));
}

TEST_CASE("times without a year take the year nearest the reference, at most a day ahead", "[decode]") {
  TimeContext ctx;
  ctx.reference = T("2027-01-01T00:00:00Z");
  const auto year_of = [&](const char* line) {
    const auto m = parse_line_meta(line, ctx);
    REQUIRE(m.time);
    return format_time(*m.time);
  };
  CHECK(year_of("INFO 12-31 23:59:59 [a.py:1] x") == "2026-12-31T23:59:59.000Z");
  CHECK(year_of("INFO 01-01 12:00:00 [a.py:1] x") == "2027-01-01T12:00:00.000Z");
  CHECK(year_of("INFO 01-02 12:00:00 [a.py:1] x") == "2026-01-02T12:00:00.000Z");
  CHECK(year_of("Dec 31 23:59:59 host kernel: x") == "2026-12-31T23:59:59.000Z");
  CHECK(year_of("E1231 23:59:59.000000 1 f.cc:1] x") == "2026-12-31T23:59:59.000Z");
  ctx.reference = T("2026-12-31T12:00:00Z");
  CHECK(year_of("INFO 01-01 10:00:00 [a.py:1] x") == "2027-01-01T10:00:00.000Z");
  CHECK(year_of("INFO 12-31 13:00:00 [a.py:1] x") == "2026-12-31T13:00:00.000Z");
  // Feb 29 exists only in leap years: the latest one before the reference.
  ctx.reference = T("2027-03-01T00:00:00Z");
  CHECK(year_of("INFO 02-29 10:00:00 [a.py:1] x") == "2024-02-29T10:00:00.000Z");
  // A year printed in the line is kept as printed.
  CHECK(year_of("[2020-05-05 01:02:03 TP0] x") == "2020-05-05T01:02:03.000Z");
}

TEST_CASE("an unset reference means the wall clock for parse_line_meta and read_time for a Decoder", "[decode]") {
  TimeContext ctx;  // reference unset
  const auto m = parse_line_meta("INFO 01-01 00:00:00 [a.py:1] x", ctx);
  REQUIRE(m.time);
  const auto now = std::chrono::system_clock::now();
  CHECK(*m.time <= now + 24h);
  CHECK(*m.time > now - 24h * 367);

  DecodeOptions o;  // reference unset
  Decoder d(0, o);
  RecordBatch b;
  d.feed("INFO 12-31 23:00:00 [a.py:1] x\n", T("2031-06-01T00:00:00Z"), b);
  REQUIRE(b.size() == 1);
  CHECK(format_time(b[0].time) == "2030-12-31T23:00:00.000Z");
}

TEST_CASE("times without a zone use utc_offset; explicit zones ignore it", "[decode]") {
  TimeContext ctx;
  ctx.reference = T("2026-12-01T00:00:00Z");
  ctx.utc_offset = std::chrono::hours(2);
  const auto t = [&](const char* line) {
    const auto m = parse_line_meta(line, ctx);
    REQUIRE(m.time);
    return format_time(*m.time);
  };
  CHECK(t("INFO 11-29 10:08:01 [a.py:1] x") == "2026-11-29T08:08:01.000Z");
  CHECK(t("[2026-11-29 10:08:01 TP0] x") == "2026-11-29T08:08:01.000Z");
  CHECK(t("[11/29/2026-10:08:01] [TRT-LLM] [I] x") == "2026-11-29T08:08:01.000Z");
  CHECK(t("2026-11-29 10:08:01,5 - INFO - x") == "2026-11-29T08:08:01.500Z");
  CHECK(t("2026-11-29T10:08:01Z x") == "2026-11-29T10:08:01.000Z");
  CHECK(t("2026-11-29T10:08:01-05:00 x") == "2026-11-29T15:08:01.000Z");
  ctx.utc_offset = std::chrono::hours(-8);
  // 2026-12-31 20:00 local would be more than a day after the reference: the year before.
  CHECK(t("INFO 12-31 20:00:00 [a.py:1] x") == "2026-01-01T04:00:00.000Z");
}

TEST_CASE("lines without a time inherit the last time, else the time of reading", "[decode]") {
  const auto r = decode(
      "Traceback (most recent call last):\n"
      "ERROR 11-29 10:08:01 [a.py:1] boom\n"
      "  File \"x.py\", line 1\n"
      "RuntimeError: bad\n"
      "WARNING 11-29 10:09:00 [a.py:1] later\n"
      "tail\n");
  REQUIRE(r.size() == 6);
  CHECK(r[0].time == kRead);
  CHECK_FALSE(r[0].from_log);
  CHECK(r[1].time == T("2026-11-29T10:08:01Z"));
  CHECK(r[1].from_log);
  CHECK(r[2].time == T("2026-11-29T10:08:01Z"));
  CHECK_FALSE(r[2].from_log);
  CHECK(r[3].time == T("2026-11-29T10:08:01Z"));
  CHECK(r[5].time == T("2026-11-29T10:09:00Z"));
  CHECK(r[2].level == Level::unknown);
}

// ---- checkpoints -----------------------------------------------------------------------------------------------------

TEST_CASE("resume_at from committed_offset continues exactly where a restart should", "[decode]") {
  const std::string log = realistic_raw_log() + "\n";
  const auto whole = decode(log);
  for (std::size_t cut : {std::size_t{1}, std::size_t{90}, std::size_t{200}, log.size() / 2, log.size() - 5}) {
    INFO(cut);
    Decoder first(7, options());
    RecordBatch b;
    first.feed(std::string_view(log).substr(0, cut), kRead, b);
    std::vector<Rec> got;
    collect(b, got);
    const std::uint64_t off = first.committed_offset();
    const std::uint64_t line = first.committed_line();
    CHECK(off <= cut);
    // Records emitted so far end at or before the committed offset, except CR segments of the open line.
    Decoder second(7, options());
    second.resume_at(off, line);
    RecordBatch b2;
    second.feed(std::string_view(log).substr(off), kRead, b2);
    second.flush(kRead, b2);
    std::vector<Rec> rest;
    collect(b2, rest);
    // Drop what the first decoder already emitted from the open line (those are re-read after a restart).
    std::vector<Rec> merged;
    for (const auto& r : got) {
      if (r.offset < off) merged.push_back(r);
    }
    merged.insert(merged.end(), rest.begin(), rest.end());
    REQUIRE(merged.size() == whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      CHECK(merged[i].text == whole[i].text);
      CHECK(merged[i].line == whole[i].line);
      CHECK(merged[i].offset == whole[i].offset);
      CHECK(merged[i].level == whole[i].level);
    }
  }
}

TEST_CASE("resume_at numbers lines and offsets from the given point", "[decode]") {
  Decoder d(0, options(ContainerFormat::raw));
  d.resume_at(1000, 42);
  CHECK(d.committed_offset() == 1000);
  CHECK(d.committed_line() == 42);
  RecordBatch b;
  d.feed("a\n\nb\n", kRead, b);
  REQUIRE(b.size() == 2);
  CHECK(b[0].line == 42);
  CHECK(b[0].offset == 1000);
  CHECK(b[1].line == 44);
  CHECK(b[1].offset == 1003);
  CHECK(d.committed_offset() == 1005);
  CHECK(d.committed_line() == 45);
}

TEST_CASE("a moved Decoder keeps its state", "[decode]") {
  Decoder d(3, options());
  RecordBatch b;
  d.feed("par", kRead, b);
  Decoder moved(std::move(d));
  moved.feed("tial\n", kRead, b);
  REQUIRE(b.size() == 1);
  CHECK(b.text(0) == "partial");
  CHECK(b[0].stream == 3);
  Decoder other(4, options());
  other = std::move(moved);
  other.feed("x\n", kRead, b);
  REQUIRE(b.size() == 2);
  CHECK(b[1].line == 2);
}

// ---- the real-log corpus ---------------------------------------------------------------------------------------------

TEST_CASE("every corpus file decodes in any chunking without loss", "[decode][corpus]") {
  const auto files = corpus_files();
  REQUIRE(files.size() >= 40);
  for (const auto& f : files) {
    INFO(f.filename().string());
    const std::string data = read_file(f);
    DecodeStats st;
    ContainerFormat fmt{};
    const auto r = decode(data, options(), &st, &fmt);
    CHECK(fmt == ContainerFormat::raw);
    CHECK(!r.empty());
    CHECK(st.malformed == 0);
    CHECK(st.bytes == data.size());
    std::uint64_t prev_line = 0;
    for (const auto& rec : r) {
      REQUIRE(rec.text.find('\n') == std::string::npos);
      REQUIRE(rec.text.find('\x1b') == std::string::npos);
      REQUIRE(rec.line >= prev_line);
      REQUIRE(rec.offset < data.size());
      prev_line = rec.line;
    }
    const auto odd = decode_chunked(data, options(), {3, 1, 255});
    REQUIRE(odd.size() == r.size());
    for (std::size_t i = 0; i < r.size(); ++i) REQUIRE(odd[i] == r[i]);
  }
}

namespace {

struct Known {
  const char* file;
  const char* starts_with;  // the first record whose text starts with this
  Level level;
  const char* time;  // nullptr: not checked
};

}  // namespace

TEST_CASE("known corpus lines get the expected level and time", "[decode][corpus]") {
  const Known known[] = {
      {"moe_gemm_runtime_error__trtllm-5389.log", "[06/21/2025-01:30:42] [TRT-LLM] [RANK 0] [E] Failed", Level::error,
       "2025-06-21T01:30:42Z"},
      {"moe_gemm_runtime_error__trtllm-5389.log", "[06/21/2025-01:30:42] [TRT-LLM] [RANK 0] [I]", Level::info, nullptr},
      {"fmha_unsupported_arch__trtllm-320.log", "[TensorRT-LLM][ERROR] Assertion failed", Level::error, nullptr},
      {"cuda_oom__tensorrtllm-backend-456-precursor.log", "[TensorRT-LLM][WARNING] max_beam_width", Level::warning,
       nullptr},
      {"cuda_oom__tensorrtllm-backend-456-precursor.log", "[TensorRT-LLM][INFO] Max KV cache pages", Level::info,
       nullptr},
      {"fmha_unsupported_arch__trtllm-1515-sysinfo.log", "[04/28/2024-15:57:10] [TRT-LLM] [I] Compute capability",
       Level::info, "2024-04-28T15:57:10Z"},
      {"nccl_watchdog_timeout__vllm-6042.log", "  | [rank0]:[E ProcessGroupNCCL.cpp:563]", Level::error, nullptr},
      {"nccl_watchdog_timeout__vllm-6042.log", "  | ERROR 07-01 13:54:43", Level::error, "2026-07-01T13:54:43Z"},
      {"nccl_watchdog_timeout__vllm-9839.log", "[rank2]:[E ProcessGroupNCCL.cpp:1414]", Level::error, nullptr},
      {"no_cache_blocks__sglang-7691.log", "[2025-07-02 07:41:59 DP7 TP7] max_total_tokens", Level::unknown,
       "2025-07-02T07:41:59Z"},
      {"max_model_len__xinference-1715.log", "2024-06-25 16:32:00,563 xinference.api.restful_api", Level::error,
       "2024-06-25T16:32:00.563Z"},
      {"no_cache_blocks__qanything-302.log", "2024-04-27 10:13:05 | ERROR | stderr |", Level::error,
       "2024-04-27T10:13:05Z"},
      {"no_cache_blocks__qanything-302.log", "INFO 04-27 10:13:05 llm_engine.py:275] # GPU blocks: 0", Level::info,
       "2026-04-27T10:13:05Z"},
      {"illegal_memory_access__vllm-11366.log", "2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64] RuntimeError",
       Level::error, "2024-12-19T21:40:35Z"},
      {"illegal_memory_access__vllm-6976.log", "\xE2\x94\x82 ERROR 09-27 06:46:46 engine.py:157] RuntimeError",
       Level::error, "2026-09-27T06:46:46Z"},
      {"chat_template_error__vllm-13978.log", "ERROR:    Exception in ASGI application", Level::error, nullptr},
      {"chat_template_error__vllm-13978.log", "INFO:     127.0.0.1:57158", Level::info, nullptr},
      {"chat_template_error__seed-oss-10.log", "(APIServer pid=679631) ERROR 08-22 21:36:14 [serving_chat.py:250] Error in",
       Level::error, "2026-08-22T21:36:14Z"},
      {"cutlass_moe_tma__flashinfer-2077.log", "(Worker_PP0 pid=38385) 2025-11-11 06:41:27,319 - WARNING", Level::warning,
       "2025-11-11T06:41:27.319Z"},
      {"fmha_unsupported_arch__vllm-pr31740-trace.log", "(EngineCore_DP0 pid=4599) ERROR 01-06 23:27:37", Level::error,
       "2026-01-06T23:27:37Z"},
      {"cutlass_scaled_mm__vllm-23253.log", "(VllmWorker TP1 pid=189) ERROR 08-20 03:19:43", Level::error,
       "2026-08-20T03:19:43Z"},
      {"engine_core_fatal__johnpfeiffer-b300-flashmla-tma.log", "(APIServer pid=57071) INFO:     Started server",
       Level::info, nullptr},
      {"cuda_oom__sglang-12496-precursor.log", "sglang-1  | [2025-11-01 16:50:36 TP0]", Level::unknown,
       "2025-11-01T16:50:36Z"},
      {"fmha_unsupported_arch__sglang-40558-partial.log", "[AutoTuner]: Tuning", Level::unknown,
       "2026-09-21T13:38:19Z"},  // inherited
      {"engine_dead__pytorch-174081-ci.log", "[2026-01-31T04:40:19Z] E ", Level::unknown, "2026-01-31T04:40:19Z"},
      {"xid_error__sglang-29160.log", "[Wed Jun 24 15:44:42 2026] NVRM: Xid", Level::unknown, "2026-06-24T15:44:42Z"},
      {"xid_error__nvsentinel-155.log", "[ 1843.308145] NVRM", Level::unknown, nullptr},
      {"no_kernel_image__gpustack-1382.log", "0.17.512.848 E CUDA error: no kernel image", Level::error, nullptr},
      {"kv_cache_lt_max_model_len__vllm-16118.log", "ERROR 04-05 01:12:55 [core.py:390] ValueError", Level::error,
       "2026-04-05T01:12:55Z"},
      {"torch_compile_failure__vllm-17018.log", "(VllmWorkerProcess pid=802) ERROR 04-23 00:04:19", Level::error,
       "2026-04-23T00:04:19Z"},
  };
  for (const auto& k : known) {
    INFO(k.file << " | " << k.starts_with);
    const auto recs = decode(read_file(std::filesystem::path(FAULTLINE_CORPUS_DIR) / k.file));
    const Rec* found = nullptr;
    for (const auto& r : recs) {
      if (r.text.rfind(k.starts_with, 0) == 0) {
        found = &r;
        break;
      }
    }
    REQUIRE(found != nullptr);
    CHECK(found->level == k.level);
    if (k.time != nullptr) CHECK(format_time(found->time) == format_time(T(k.time)));
  }
}

TEST_CASE("caret-notation corpus lines split into one record per original line", "[decode][corpus]") {
  const auto recs = decode(read_file(std::filesystem::path(FAULTLINE_CORPUS_DIR) / "chat_template_error__seed-oss-10.log"));
  REQUIRE(recs.size() == 7);
  for (const auto& r : recs) {
    CHECK(r.text.rfind("(APIServer pid=679631) ERROR 08-22 21:36:14 [serving_chat.py:250]", 0) == 0);
    CHECK(r.text.find("^M") == std::string::npos);
    CHECK(r.text.find("^[") == std::string::npos);
    CHECK(r.level == Level::error);
  }
  const auto pasted = decode(read_file(std::filesystem::path(FAULTLINE_CORPUS_DIR) / "illegal_memory_access__vllm-11366.log"));
  REQUIRE(!pasted.empty());
  for (const auto& r : pasted) CHECK(r.text.find("^M") == std::string::npos);
}
