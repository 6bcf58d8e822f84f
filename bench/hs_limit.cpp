// hs_limit -- the raw Hyperscan (Vectorscan) throughput limit for faultline's matcher.
//
// One file of ~790 lines on purpose: it is built on its own (bench/CMakeLists.txt standalone mode, linking only
// libhs) so the raw limit can be measured on any machine without faultline_core; its strategies share one loader,
// one line index and one reporter.
//
// Compiles a pattern file (one expression per line) into one multi-pattern database and scans a log
// file that is read into memory once, with several strategies, reporting MB/s (10^6 bytes/s) and
// lines/s for each, plus per-pattern counts of matching *lines* so that other tools (the real matcher,
// grep, ...) can be checked against it:
//
//   split      memchr line splitting only, no scanning (the floor of any per-line loop)
//   buffered   hs_scan over ~1 MiB buffers cut at newline boundaries; a match is mapped to the line
//              holding its last byte (end offset - 1) and deduplicated per (pattern, line)
//   verify     buffered, then each line holding a match end is scanned again on its own (per-line
//              semantics at buffered cost: counts come only from the line re-scans; see below)
//   perline    hs_scan once per line (the line without its '\n'; empty lines are skipped)
//   stream     streaming-mode database, file fed in fixed chunks cut anywhere (no newline alignment)
//   som        like buffered, compiled with HS_FLAG_SOM_LEFTMOST; a match whose [from, to) contains a
//              '\n' is dropped (counted as "crossing") -- the price of proving start and end share a line.
//              Not in the default set: SOM makes many bounded-gap patterns "too large" (those are then
//              compiled without SOM), and finding them costs about a second of compile time each.
//
// All databases use HS_FLAG_MULTILINE (so ^ and $ are per line) and report every match (no
// HS_FLAG_SINGLEMATCH, no HS_FLAG_ALLOWEMPTY: an expression that can match empty is rejected).
//
// Caveat (buffered, stream): a pattern with \s, a negated class without \n, or \n itself can match
// across a newline in a multi-line buffer; end-offset mapping then attributes the match to the line of
// its last byte, which per-line scanning would not report. Rules avoid it by using [^\n] / '.' gaps;
// the `som` strategy detects it at a cost, and hs_limit prints any per-pattern count that differs
// between strategies. `verify` removes it exactly: every match that lies within one line also ends in
// that line, and the buffered scan reports every end offset, so the lines holding a match end are a
// superset of the per-line hits; re-scanning just those lines alone gives per-line counts.
//
// Times: wall clock (steady_clock) and this thread's CPU time (CLOCK_THREAD_CPUTIME_ID); on a shared,
// busy machine the CPU-time figure is the steadier one.
//
// Usage: hs_limit [options] PATTERNS FILE     (see --help)

#include <hs.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "raw_limit.hpp"

namespace {

// ---------------------------------------------------------------------------------------------- RAII

using raw_limit::CompileError;
using raw_limit::Database;
using raw_limit::Scratch;
struct StreamDeleter {  // normal path closes explicitly (to get end-of-data matches); this is the backstop
  void operator()(hs_stream_t* s) const noexcept { hs_close_stream(s, nullptr, nullptr, nullptr); }
};
using Stream = std::unique_ptr<hs_stream_t, StreamDeleter>;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void die(const std::string& msg, int code = 2) {
  std::fprintf(stderr, "hs_limit: %s\n", msg.c_str());
  std::exit(code);
}

// ------------------------------------------------------------------------------------------ patterns

using raw_limit::Pattern;

std::vector<Pattern> load_patterns(const std::string& path) {
  auto out = raw_limit::read_patterns(path);
  if (!out) die("cannot open pattern file " + path);
  if (out->empty()) die("no patterns in " + path);
  return std::move(*out);
}

struct Compiled {
  Database db;
  double seconds = 0;
  size_t db_bytes = 0;
  size_t stream_state_bytes = 0;
  std::string error;  // non-empty: compile failed (reported, strategy skipped)
  int error_expression = -1;
  std::vector<unsigned> extra;  // per-pattern extra flags actually used
  double probe_seconds = 0;     // som: time spent probing patterns one by one
  size_t som_dropped = 0;       // som: patterns compiled without SOM because SOM made them too large
  std::vector<std::string> som_dropped_notes;
};

// The engine block-mode strategies scan with (--engine; raw_limit.hpp).
raw_limit::Engine g_engine;

// `extra` holds per-pattern extra flags (empty: none).
Compiled compile(const std::vector<Pattern>& pats, const std::string& pattern_file, const std::vector<unsigned>& extra,
                 unsigned mode) {
  std::vector<const char*> exprs;
  std::vector<unsigned> flags;
  std::vector<unsigned> ids;
  for (size_t i = 0; i < pats.size(); ++i) {
    exprs.push_back(pats[i].expr.c_str());
    flags.push_back(HS_FLAG_MULTILINE | (extra.empty() ? 0u : extra[i]));
    ids.push_back(static_cast<unsigned>(i));
  }
  Compiled c;
  hs_database_t* raw_db = nullptr;
  hs_compile_error_t* raw_err = nullptr;
  auto t0 = Clock::now();
  hs_error_t rc = hs_compile_multi(exprs.data(), flags.data(), ids.data(), static_cast<unsigned>(exprs.size()),
                                   mode, g_engine.compile_for(), &raw_db, &raw_err);
  c.seconds = seconds_since(t0);
  c.db.reset(raw_db);
  CompileError err(raw_err);
  if (rc != HS_SUCCESS) {
    std::ostringstream os;
    if (err && err->expression >= 0 && static_cast<size_t>(err->expression) < pats.size()) {
      const auto& p = pats[static_cast<size_t>(err->expression)];
      os << pattern_file << ":" << p.source_line << ": pattern " << err->expression << ": " << err->message
         << " [" << p.expr << "]";
    } else {
      os << pattern_file << ": " << (err ? err->message : "compile failed");
    }
    c.error = os.str();
    c.error_expression = err ? err->expression : -1;
    return c;
  }
  hs_database_size(c.db.get(), &c.db_bytes);
  if (mode & HS_MODE_STREAM) hs_stream_size(c.db.get(), &c.stream_state_bytes);
  c.extra = extra;
  return c;
}

// HS_FLAG_SOM_LEFTMOST on every pattern; a pattern SOM makes too large ("Pattern is too large") is
// compiled without it (a real matcher would do the same and fall back to end-offset attribution for
// it). Patterns are probed one by one first; the reported time is that of the final full compile.
Compiled compile_som(const std::vector<Pattern>& pats, const std::string& pattern_file) {
  std::vector<unsigned> extra(pats.size(), HS_FLAG_SOM_LEFTMOST);
  std::vector<std::string> notes;
  // Probe each pattern alone first (cheap), so that the full compile normally succeeds at once.
  auto t0 = Clock::now();
  for (size_t i = 0; i < pats.size(); ++i) {
    hs_database_t* db = nullptr;
    hs_compile_error_t* err = nullptr;
    if (hs_compile(pats[i].expr.c_str(), HS_FLAG_MULTILINE | HS_FLAG_SOM_LEFTMOST, HS_MODE_BLOCK, nullptr, &db,
                   &err) != HS_SUCCESS) {
      CompileError e(err);
      extra[i] = 0;
      notes.push_back(pattern_file + ":" + std::to_string(pats[i].source_line) + ": pattern " + std::to_string(i) +
                      ": " + (e ? e->message : "compile failed") + " [" + pats[i].expr + "]");
    }
    Database d(db);
  }
  const double probe_seconds = seconds_since(t0);
  for (size_t attempt = 0; attempt <= pats.size(); ++attempt) {
    Compiled c = compile(pats, pattern_file, extra, HS_MODE_BLOCK);
    if (c.error.empty()) {
      c.probe_seconds = probe_seconds;
      c.som_dropped = notes.size();
      c.som_dropped_notes = std::move(notes);
      return c;
    }
    int e = c.error_expression;
    if (e < 0 || extra[static_cast<size_t>(e)] == 0) return c;  // not a SOM problem
    extra[static_cast<size_t>(e)] = 0;
    notes.push_back(c.error);
  }
  Compiled c;
  c.error = "som: gave up";
  return c;
}

Scratch alloc_scratch(const hs_database_t* db) {
  hs_scratch_t* s = nullptr;
  if (hs_alloc_scratch(db, &s) != HS_SUCCESS) die("hs_alloc_scratch failed");
  return Scratch(s);
}

// ----------------------------------------------------------------------------------------- the input

struct Input {
  std::string data;
  size_t lines = 0;
};

Input load_input(const std::string& path) {
  Input in;
  std::ifstream f(path, std::ios::binary);
  if (!f) die("cannot open input file " + path);
  f.seekg(0, std::ios::end);
  auto size = f.tellg();
  if (size < 0) die("cannot size input file " + path);
  f.seekg(0);
  in.data.resize(static_cast<size_t>(size));
  if (size > 0 && !f.read(in.data.data(), size)) die("cannot read input file " + path);
  in.lines = static_cast<size_t>(std::count(in.data.begin(), in.data.end(), '\n'));
  if (!in.data.empty() && in.data.back() != '\n') ++in.lines;
  return in;
}

// ------------------------------------------------------------------------------------ match counting

// Per-pattern deduplication to matching lines. A line is identified by the offset of its terminating
// '\n' (or the data size for an unterminated last line).
struct Counter {
  const char* data = nullptr;
  size_t size = 0;
  size_t base = 0;                 // offset of the current buffer in data (buffered / som)
  std::vector<size_t> line_start;  // per pattern: [start, end] of the last counted line
  std::vector<size_t> line_end;
  std::vector<uint64_t> lines;     // per pattern: matching lines
  std::vector<std::pair<size_t, unsigned>> hits;  // (line end offset, pattern) in counting order
  uint64_t matches = 0;            // raw callbacks
  uint64_t crossing = 0;           // som: matches dropped because [from, to) spans a newline
  size_t cur_line_end = 0;         // perline: the current line
  const std::vector<unsigned>* som_flags = nullptr;  // som: per-pattern flags (0 = compiled without SOM)
  std::vector<std::pair<size_t, size_t>> cands;      // verify: [start, end) of lines holding a match end
  size_t cand_start = SIZE_MAX, cand_end = SIZE_MAX;

  Counter(const Input& in, size_t npat)
      : data(in.data.data()), size(in.data.size()), line_start(npat, SIZE_MAX), line_end(npat, SIZE_MAX),
        lines(npat, 0) {}

  size_t end_of_line(size_t pos) const {
    const void* nl = std::memchr(data + pos, '\n', size - pos);
    return nl ? static_cast<size_t>(static_cast<const char*>(nl) - data) : size;
  }
  size_t start_of_line(size_t pos) const {  // pos is inside the line (or its '\n')
    size_t i = pos;
    while (i > 0 && data[i - 1] != '\n') {
      // memrchr is a GNU extension; a short backwards loop is enough for ~150-byte lines
      --i;
    }
    return i;
  }

  // The match's last byte is at absolute offset `last`.
  void count_at(unsigned id, size_t last) {
    if (last >= line_start[id] && last <= line_end[id]) return;  // same line as the last counted one
    size_t e = end_of_line(last);
    size_t s = start_of_line(last);
    line_start[id] = s;
    line_end[id] = e;
    ++lines[id];
    hits.emplace_back(e, id);
  }
};

int on_match_offset(unsigned id, unsigned long long /*from*/, unsigned long long to, unsigned /*flags*/,
                    void* ctx) {
  auto* c = static_cast<Counter*>(ctx);
  ++c->matches;
  if (to == 0) return 0;
  c->count_at(id, c->base + static_cast<size_t>(to) - 1);
  return 0;
}

int on_match_candidate(unsigned /*id*/, unsigned long long /*from*/, unsigned long long to, unsigned /*flags*/,
                       void* ctx) {
  auto* c = static_cast<Counter*>(ctx);
  ++c->matches;
  if (to == 0) return 0;
  size_t last = c->base + static_cast<size_t>(to) - 1;
  if (last >= c->cand_start && last <= c->cand_end) return 0;
  c->cand_start = c->start_of_line(last);
  c->cand_end = c->end_of_line(last);
  c->cands.emplace_back(c->cand_start, c->cand_end);
  return 0;
}

int on_match_som(unsigned id, unsigned long long from, unsigned long long to, unsigned /*flags*/, void* ctx) {
  auto* c = static_cast<Counter*>(ctx);
  ++c->matches;
  if (to == 0) return 0;
  size_t a = c->base + static_cast<size_t>(from);
  size_t b = c->base + static_cast<size_t>(to);
  if ((*c->som_flags)[id] != 0 && std::memchr(c->data + a, '\n', b - a) != nullptr) {
    ++c->crossing;
    return 0;
  }
  c->count_at(id, b - 1);
  return 0;
}

int on_match_perline(unsigned id, unsigned long long /*from*/, unsigned long long /*to*/, unsigned /*flags*/,
                     void* ctx) {
  auto* c = static_cast<Counter*>(ctx);
  ++c->matches;
  if (c->line_end[id] == c->cur_line_end) return 0;
  c->line_end[id] = c->cur_line_end;
  ++c->lines[id];
  c->hits.emplace_back(c->cur_line_end, id);
  return 0;
}

// --------------------------------------------------------------------------------------- strategies

struct Result {
  std::string name;
  double seconds = 0;      // wall
  double cpu_seconds = 0;  // this thread's CPU time
  uint64_t calls = 0;      // hs_scan / hs_scan_stream calls
  uint64_t rescans = 0;    // verify: lines scanned again
  uint64_t matches = 0;
  uint64_t line_hits = 0;  // (pattern, line) pairs
  uint64_t crossing = 0;
  std::vector<uint64_t> lines;
  std::vector<std::pair<size_t, unsigned>> hits;
  bool ran = false;
  std::string skipped;
};

struct Timer {
  Clock::time_point wall0 = Clock::now();
  double cpu0 = thread_cpu_seconds();
  void stop(Result& r) const {
    r.seconds = seconds_since(wall0);
    r.cpu_seconds = thread_cpu_seconds() - cpu0;
  }
};

Result run_split(const Input& in) {
  Result r;
  r.name = "split";
  Timer t;
  const char* p = in.data.data();
  const char* end = p + in.data.size();
  uint64_t nonempty = 0;
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* le = nl ? nl : end;
    nonempty += (le != p);
    p = le + 1;
  }
  t.stop(r);
  r.calls = nonempty;  // keeps the loop from being optimised away
  r.ran = true;
  return r;
}

// som_flags: the som strategy; verify: re-scan candidate lines alone after each buffer.
Result run_buffered(const std::string& name, const Input& in, const hs_database_t* db, hs_scratch_t* scratch,
                    size_t npat, size_t buf, const std::vector<unsigned>* som_flags, bool verify) {
  Result r;
  r.name = name;
  Counter c(in, npat);
  c.som_flags = som_flags;
  const bool som = som_flags != nullptr;
  auto cb = verify ? on_match_candidate : som ? on_match_som : on_match_offset;
  const char* data = in.data.data();
  Timer t;
  size_t pos = 0;
  const size_t n = in.data.size();
  while (pos < n) {
    size_t cut = raw_limit::next_cut(in.data, pos, buf);
    c.base = pos;
    if (g_engine.scan(db, data + pos, static_cast<unsigned>(cut - pos), 0, scratch, cb, &c) != HS_SUCCESS)
      die("hs_scan failed");
    ++r.calls;
    if (verify && !c.cands.empty()) {
      std::sort(c.cands.begin(), c.cands.end());
      c.cands.erase(std::unique(c.cands.begin(), c.cands.end()), c.cands.end());
      for (const auto& [ls, le] : c.cands) {
        if (le == ls) continue;
        c.cur_line_end = le;
        if (g_engine.scan(db, data + ls, static_cast<unsigned>(le - ls), 0, scratch, on_match_perline, &c) !=
            HS_SUCCESS)
          die("hs_scan failed");
        ++r.rescans;
      }
      c.cands.clear();
    }
    pos = cut;
  }
  t.stop(r);
  r.matches = c.matches;
  r.crossing = c.crossing;
  r.lines = std::move(c.lines);
  r.hits = std::move(c.hits);
  r.ran = true;
  return r;
}

Result run_perline(const Input& in, const hs_database_t* db, hs_scratch_t* scratch, size_t npat) {
  Result r;
  r.name = "perline";
  Counter c(in, npat);
  Timer t;
  const char* base = in.data.data();
  size_t pos = 0;
  const size_t n = in.data.size();
  while (pos < n) {
    const void* nl = std::memchr(base + pos, '\n', n - pos);
    size_t le = nl ? static_cast<size_t>(static_cast<const char*>(nl) - base) : n;
    if (le > pos) {
      c.cur_line_end = le;
      if (g_engine.scan(db, base + pos, static_cast<unsigned>(le - pos), 0, scratch, on_match_perline, &c) !=
          HS_SUCCESS)
        die("hs_scan failed");
      ++r.calls;
    }
    pos = le + 1;
  }
  t.stop(r);
  r.matches = c.matches;
  r.lines = std::move(c.lines);
  r.hits = std::move(c.hits);
  r.ran = true;
  return r;
}

Result run_stream(const Input& in, const hs_database_t* db, hs_scratch_t* scratch, size_t npat, size_t chunk) {
  Result r;
  r.name = "stream";
  Counter c(in, npat);
  c.base = 0;  // stream offsets are absolute
  Timer t;
  hs_stream_t* raw = nullptr;
  if (hs_open_stream(db, 0, &raw) != HS_SUCCESS) die("hs_open_stream failed");
  Stream stream(raw);
  const size_t n = in.data.size();
  for (size_t pos = 0; pos < n; pos += chunk) {
    size_t len = std::min(chunk, n - pos);
    if (hs_scan_stream(stream.get(), in.data.data() + pos, static_cast<unsigned>(len), 0, scratch, on_match_offset,
                       &c) != HS_SUCCESS)
      die("hs_scan_stream failed");
    ++r.calls;
  }
  if (hs_close_stream(stream.release(), scratch, on_match_offset, &c) != HS_SUCCESS) die("hs_close_stream failed");
  t.stop(r);
  r.matches = c.matches;
  r.lines = std::move(c.lines);
  r.hits = std::move(c.hits);
  r.ran = true;
  return r;
}

// ------------------------------------------------------------------------------------------- output

std::string json_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size() + 8);
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (u < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", u);
          o += b;
        } else {
          o += ch;
        }
    }
  }
  return o;
}

void usage(FILE* f) {
  std::fprintf(f,
               "usage: hs_limit [options] PATTERNS FILE\n"
               "  --strategies LIST  comma list of split,buffered,verify,perline,stream,som\n"
               "                     (default split,buffered,verify,perline,stream)\n"
               "  --buf-size N       buffered/som buffer and stream chunk size in bytes (default 1048576)\n"
               "  --reps N           run each strategy N times, report the median time (default 1)\n"
               "  --counts           print per-pattern matching-line counts (TSV: id, lines, pattern)\n"
               "  --hits FILE        write 'line<TAB>pattern-id' (1-based line) of the reference strategy\n"
               "  --json             machine-readable report on stdout (includes counts with --counts)\n"
               "  --strict           exit 3 if strategies disagree on any per-pattern count\n"
               "  --engine E         library (default: hs_scan, the engine the library picks) or avx2 (its AVX2\n"
               "                     engine, database compiled for AVX2: what faultline scans with on AVX-512 CPUs);\n"
               "                     block-mode strategies only\n"
               "  -v, --verbose      list the patterns compiled without SOM in the som strategy\n"
               "  --compile-only     compile the databases the strategies need, report, do not scan\n"
               "                     (FILE is still required but not read)\n"
               "The reference strategy is perline when it ran, else the first scanning strategy.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> strategies{"split", "buffered", "verify", "perline", "stream"};
  size_t buf = 1 << 20;
  int reps = 1;
  bool want_counts = false, json = false, strict = false, verbose = false, compile_only = false;
  std::string hits_path;
  std::vector<std::string> pos_args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](const char* opt) -> std::string {
      if (i + 1 >= argc) die(std::string("missing value for ") + opt);
      return argv[++i];
    };
    if (a == "--strategies") {
      strategies.clear();
      std::stringstream ss(need("--strategies"));
      std::string s;
      while (std::getline(ss, s, ',')) {
        if (s != "split" && s != "buffered" && s != "verify" && s != "perline" && s != "stream" && s != "som")
          die("unknown strategy " + s);
        strategies.push_back(s);
      }
    } else if (a == "--buf-size") {
      buf = std::stoull(need("--buf-size"));
      if (buf < 4096 || buf > (1ull << 31)) die("--buf-size out of range");
    } else if (a == "--reps") {
      reps = std::max(1, std::stoi(need("--reps")));
    } else if (a == "--counts") {
      want_counts = true;
    } else if (a == "--hits") {
      hits_path = need("--hits");
    } else if (a == "--json") {
      json = true;
    } else if (a == "--engine") {
      const std::string e = need("--engine");
      if (e == "avx2") {
        auto avx2 = raw_limit::engine(true);
        if (!avx2) die("--engine avx2: this library has no AVX2 engine of its own (avx2_hs_scan)");
        g_engine = *avx2;
      } else if (e != "library") {
        die("--engine: library or avx2");
      }
    } else if (a == "--strict") {
      strict = true;
    } else if (a == "--compile-only") {
      compile_only = true;
    } else if (a == "-v" || a == "--verbose") {
      verbose = true;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      usage(stderr);
      die("unknown option " + a);
    } else {
      pos_args.push_back(a);
    }
  }
  if (pos_args.size() != 2) {
    usage(stderr);
    return 2;
  }
  const std::string pattern_file = pos_args[0], input_file = pos_args[1];
  if (hs_valid_platform() != HS_SUCCESS) die("this CPU is not supported by Hyperscan (needs SSSE3)");

  auto pats = load_patterns(pattern_file);
  const size_t npat = pats.size();
  auto has = [&](const char* s) { return std::find(strategies.begin(), strategies.end(), s) != strategies.end(); };

  // Compile what the chosen strategies need.
  Compiled block, stream_db, som_db;
  Scratch block_scratch, stream_scratch, som_scratch;
  if (has("buffered") || has("verify") || has("perline")) {
    block = compile(pats, pattern_file, {}, HS_MODE_BLOCK);
    if (!block.error.empty()) die(block.error);  // the base case must compile
    block_scratch = alloc_scratch(block.db.get());
  }
  if (g_engine.avx2 && (has("stream") || has("som"))) die("--engine avx2 measures the block-mode strategies only");
  if (has("stream")) {
    stream_db = compile(pats, pattern_file, {}, HS_MODE_STREAM);
    if (stream_db.error.empty()) stream_scratch = alloc_scratch(stream_db.db.get());
  }
  if (has("som")) {
    som_db = compile_som(pats, pattern_file);
    if (som_db.error.empty()) som_scratch = alloc_scratch(som_db.db.get());
  }
  size_t scratch_bytes = 0;
  if (block_scratch) hs_scratch_size(block_scratch.get(), &scratch_bytes);

  auto t_load = Clock::now();
  Input in = compile_only ? Input{} : load_input(input_file);
  double load_seconds = seconds_since(t_load);

  std::vector<Result> results;
  // Reps are interleaved (rep 1 of every strategy, then rep 2, ...) so that background load on a shared
  // machine hits all strategies alike; each strategy reports its median rep (and the min/max).
  auto run_one = [&](const std::string& s) -> Result {
    Result r;
    if (s == "split") {
      r = run_split(in);
    } else if (s == "buffered") {
      r = run_buffered("buffered", in, block.db.get(), block_scratch.get(), npat, buf, nullptr, false);
    } else if (s == "verify") {
      r = run_buffered("verify", in, block.db.get(), block_scratch.get(), npat, buf, nullptr, true);
    } else if (s == "perline") {
      r = run_perline(in, block.db.get(), block_scratch.get(), npat);
    } else if (s == "stream") {
      if (!stream_db.error.empty()) {
        r.name = s;
        r.skipped = stream_db.error;
      } else {
        r = run_stream(in, stream_db.db.get(), stream_scratch.get(), npat, buf);
      }
    } else if (s == "som") {
      if (!som_db.error.empty()) {
        r.name = s;
        r.skipped = som_db.error;
      } else {
        r = run_buffered("som", in, som_db.db.get(), som_scratch.get(), npat, buf, &som_db.extra, false);
      }
    }
    return r;
  };
  std::vector<std::vector<Result>> runs(strategies.size());
  for (int k = 0; k < (compile_only ? 0 : reps); ++k) {
    for (size_t j = 0; j < strategies.size(); ++j) {
      if (k > 0 && !runs[j].back().ran) continue;  // skipped strategy: once is enough
      runs[j].push_back(run_one(strategies[j]));
    }
  }
  std::vector<std::pair<double, double>> spread;  // (min, max) seconds per strategy
  for (auto& rs : runs) {
    if (rs.empty()) continue;
    std::sort(rs.begin(), rs.end(), [](const Result& a, const Result& b) { return a.seconds < b.seconds; });
    spread.emplace_back(rs.front().seconds, rs.back().seconds);
    results.push_back(std::move(rs[rs.size() / 2]));
  }
  for (auto& r : results) {
    for (auto v : r.lines) r.line_hits += v;
  }

  // Reference and consistency check.
  const Result* ref = nullptr;
  for (const auto& r : results)
    if (r.ran && r.name == "perline") ref = &r;
  if (!ref)
    for (const auto& r : results)
      if (r.ran && r.name != "split") {
        ref = &r;
        break;
      }
  struct Mismatch {
    size_t id;
    std::string strategy;
    uint64_t got, want;
  };
  std::vector<Mismatch> mismatches;
  if (ref) {
    for (const auto& r : results) {
      if (!r.ran || r.name == "split" || &r == ref) continue;
      for (size_t i = 0; i < npat; ++i)
        if (r.lines[i] != ref->lines[i]) mismatches.push_back({i, r.name, r.lines[i], ref->lines[i]});
    }
  }

  // --hits: reference hits as (1-based line, pattern id), sorted.
  if (!hits_path.empty() && ref) {
    auto hits = ref->hits;
    std::sort(hits.begin(), hits.end());
    std::FILE* f = std::fopen(hits_path.c_str(), "w");
    if (!f) die("cannot write " + hits_path);
    size_t line_no = 1, scanned = 0;
    const char* d = in.data.data();
    for (const auto& [end, id] : hits) {
      // count newlines in [scanned, end) to get the line number of the line ending at `end`
      line_no += static_cast<size_t>(std::count(d + scanned, d + end, '\n'));
      scanned = end;
      std::fprintf(f, "%zu\t%u\n", line_no, id);
    }
    std::fclose(f);
  }

  const double mb = static_cast<double>(in.data.size()) / 1e6;
  if (json) {
    std::printf("{\"engine\":\"%s\",", g_engine.avx2 ? "avx2" : "library");
    std::printf("\"hs_version\":\"%s\",\"patterns_file\":\"%s\",\"patterns\":%zu,\"input\":\"%s\",\"bytes\":%zu,"
                "\"lines\":%zu,\"buf_size\":%zu,\"reps\":%d,\"load_seconds\":%.6f,\"scratch_bytes\":%zu,",
                json_escape(hs_version()).c_str(), json_escape(pattern_file).c_str(), npat,
                json_escape(input_file).c_str(), in.data.size(), in.lines, buf, reps, load_seconds, scratch_bytes);
    std::printf("\"compile\":{");
    bool first = true;
    auto emit_compile = [&](const char* name, const Compiled& c, bool present) {
      if (!present) return;
      std::printf("%s\"%s\":{\"seconds\":%.6f,\"db_bytes\":%zu,\"stream_state_bytes\":%zu,\"som_dropped\":%zu,"
                  "\"probe_seconds\":%.6f,\"error\":\"%s\"}",
                  first ? "" : ",", name, c.seconds, c.db_bytes, c.stream_state_bytes, c.som_dropped, c.probe_seconds,
                  json_escape(c.error).c_str());
      first = false;
    };
    emit_compile("block", block, static_cast<bool>(block.db) || !block.error.empty());
    emit_compile("stream", stream_db, static_cast<bool>(stream_db.db) || !stream_db.error.empty());
    emit_compile("som", som_db, static_cast<bool>(som_db.db) || !som_db.error.empty());
    std::printf("},\"strategies\":[");
    for (size_t k = 0; k < results.size(); ++k) {
      const auto& r = results[k];
      std::printf("%s{\"name\":\"%s\",\"ran\":%s,\"skipped\":\"%s\",\"seconds\":%.6f,\"min_seconds\":%.6f,"
                  "\"max_seconds\":%.6f,\"cpu_seconds\":%.6f,\"mb_per_s\":%.3f,\"cpu_mb_per_s\":%.3f,\"rescans\":%" PRIu64 ","
                  "\"lines_per_s\":%.1f,\"calls\":%" PRIu64 ",\"matches\":%" PRIu64 ",\"line_hits\":%" PRIu64
                  ",\"crossing\":%" PRIu64 "}",
                  k ? "," : "", r.name.c_str(), r.ran ? "true" : "false", json_escape(r.skipped).c_str(), r.seconds,
                  spread[k].first, spread[k].second, r.cpu_seconds,
                  r.ran && r.seconds > 0 ? mb / r.seconds : 0.0,
                  r.ran && r.cpu_seconds > 0 ? mb / r.cpu_seconds : 0.0, r.rescans,
                  r.ran && r.seconds > 0 ? static_cast<double>(in.lines) / r.seconds : 0.0, r.calls, r.matches,
                  r.line_hits, r.crossing);
    }
    std::printf("],\"reference\":\"%s\",\"mismatches\":[", ref ? ref->name.c_str() : "");
    for (size_t k = 0; k < mismatches.size(); ++k)
      std::printf("%s{\"id\":%zu,\"strategy\":\"%s\",\"lines\":%" PRIu64 ",\"reference_lines\":%" PRIu64 "}",
                  k ? "," : "", mismatches[k].id, mismatches[k].strategy.c_str(), mismatches[k].got,
                  mismatches[k].want);
    std::printf("]");
    if (want_counts && ref) {
      std::printf(",\"counts\":[");
      for (size_t i = 0; i < npat; ++i)
        std::printf("%s{\"id\":%zu,\"lines\":%" PRIu64 ",\"pattern\":\"%s\"}", i ? "," : "", i, ref->lines[i],
                    json_escape(pats[i].expr).c_str());
      std::printf("]");
    }
    std::printf("}\n");
  } else {
    std::printf("hs_limit: %s (%s)\n", hs_version(), pattern_file.c_str());
    std::printf("input: %s: %.1f MB, %zu lines (mean %.1f B/line), loaded in %.3f s\n", input_file.c_str(), mb,
                in.lines, in.lines ? static_cast<double>(in.data.size()) / static_cast<double>(in.lines) : 0.0,
                load_seconds);
    auto pc = [&](const char* name, const Compiled& c) {
      if (!c.error.empty()) {
        std::printf("compile %-7s FAILED: %s\n", name, c.error.c_str());
      } else if (c.db) {
        std::printf("compile %-7s %zu patterns in %8.1f ms, database %zu KiB", name, npat, c.seconds * 1e3,
                    c.db_bytes / 1024);
        if (c.stream_state_bytes) std::printf(", stream state %zu B", c.stream_state_bytes);
        if (c.som_dropped)
          std::printf(", %zu pattern(s) without SOM (too large with it; probing took %.1f ms)", c.som_dropped,
                      c.probe_seconds * 1e3);
        std::printf("\n");
        if (verbose)
          for (const auto& note : c.som_dropped_notes) std::printf("  no SOM: %s\n", note.c_str());
      }
    };
    pc("block", block);
    pc("stream", stream_db);
    pc("som", som_db);
    std::printf("scratch (block) %zu KiB; buffer/chunk %zu B; reps %d\n", scratch_bytes / 1024, buf, reps);
    std::printf("%-9s %9s %9s %9s %11s %10s %8s %10s %10s %8s\n", "strategy", "seconds", "MB/s", "cpu MB/s",
                "lines/s", "calls", "rescans", "matches", "line_hits", "crossing");
    for (const auto& r : results) {
      if (!r.ran) {
        std::printf("%-9s skipped: %s\n", r.name.c_str(), r.skipped.c_str());
        continue;
      }
      std::printf("%-9s %9.4f %9.1f %9.1f %11.0f %10" PRIu64 " %8" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64
                  "\n",
                  r.name.c_str(), r.seconds, mb / r.seconds, r.cpu_seconds > 0 ? mb / r.cpu_seconds : 0.0,
                  static_cast<double>(in.lines) / r.seconds, r.calls, r.rescans, r.matches, r.line_hits, r.crossing);
    }
    if (want_counts && ref) {
      std::printf("# per-pattern matching lines (%s)\n# id\tlines\tpattern\n", ref->name.c_str());
      for (size_t i = 0; i < npat; ++i)
        std::printf("%zu\t%" PRIu64 "\t%s\n", i, ref->lines[i], pats[i].expr.c_str());
    }
  }
  std::fflush(stdout);
  for (const auto& m : mismatches)
    std::fprintf(stderr, "hs_limit: MISMATCH pattern %zu [%s]: %s counts %" PRIu64 " lines, %s counts %" PRIu64 "\n",
                 m.id, pats[m.id].expr.c_str(), m.strategy.c_str(), m.got, ref->name.c_str(), m.want);
  return (strict && !mismatches.empty()) ? 3 : 0;
}
