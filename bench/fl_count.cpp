// fl_count -- faultline's own per-pattern matching-line counts, and a breakdown of where scan time goes.
//
// Links faultline_core and drives the public API the product uses (load_rules, compile_rules, Decoder, Scanner,
// Replay) over a file held in memory:
//
//   fl_count [--rules PATH]... [--levels] [--format auto|raw|cri|docker] [--export FILE] [--counts]
//            [--hits FILE] [--stages decode,scan,pipeline,feed,limit,limit_avx2] [--limit PATTERNS] [--batch-bytes N]
//            [--reps N] [--cache DIR] [--json] FILE
//
// Counts: for every expression (every event of every rule, in rule order then event order -- the order
// compile_rules gives them), the number of distinct *physical* lines of FILE holding at least one hit, and the
// number of lines hit by any expression. Without --levels the events' `level:` filters are removed first, so the
// counts are those of the regular expressions alone and comparable with grep, ripgrep, mtail, SEC and hs_limit;
// with --levels they are the hits the correlator sees.
//
// --export FILE writes the expressions as TSV: `id<TAB>caseless(0|1)<TAB>rule<TAB>event<TAB>regex`, the flat list
// the peers are given (bench/peers.py translates it per dialect).
//
// Stages (each timed separately, --reps times, median reported; wall and thread-CPU seconds):
//   decode    Decoder only, as the Pipeline drives it: framing, container unwrapping, CR split, ANSI strip; records
//             refer to the input in place; time and level are left to whoever looks at a record (so this stage
//             reads none; the scanner and the correlator look at the lines that hit)
//   scan      decode + Scanner::scan per 256 KiB batch (Hyperscan + level filter + RE2 confirm/capture)
//   pipeline  the whole Pipeline (decode + scan + correlate) through a Replay, as `faultline scan -j 1` drives it
//             (Replay::feed_whole over the file's bytes: batches cut where the bytes say, parts decoded in place);
//             incidents counted, no output
//   feed      the same Pipeline fed as the daemon feeds a tailed file: Replay::feed with each 1 MiB read, the batch
//             filled across reads (what is left of it copied at the end of each)
//   limit     the raw Hyperscan limit, as `hs_limit --strategies buffered` measures it, in this process: the
//             expressions of --limit PATTERNS (one per line, HS_FLAG_MULTILINE each), one hs_scan per ~1 MiB of the
//             file cut at a newline, matches counted and nothing else; the engine the library picks
//   limit_avx2  the same with the library's AVX2 engine and a database compiled for AVX2 (what faultline scans with
//             where the library would pick its AVX-512 engine; daemon/match/match.cpp)
// In each repetition the stages run in turn, so a stage and the limit measured next to it see the machine at the same
// speed; `pairs` gives, per limit stage, each repetition's limit time divided by the pipeline's (or feed's) of the
// same repetition, and their median: a ratio that the machine's changes of speed between minutes do not move; and
// `fastest`, the limit's fastest repetition over the stage's fastest. Each stage gives its median CPU time, its
// fastest and every repetition's (cpu_each).
// The counts come from the first `scan` repetition.
#include <time.h>

#include <string.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "faultline/decode.hpp"
#include "faultline/match.hpp"
#include "faultline/replay.hpp"
#include "faultline/rules.hpp"
#include "raw_limit.hpp"

using namespace faultline;

namespace {

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "fl_count: " << msg << "\n";
  std::exit(2);
}

double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
double wall() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Timing {
  std::vector<double> wall, cpu;
  double median(std::vector<double> v) const {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
  }
  double fastest(const std::vector<double>& v) const { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
};

std::string json_escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o;
}

// The raw limit (stages limit, limit_avx2): hs_limit's buffered strategy over the file in memory (raw_limit.hpp).
struct LimitEngine {
  raw_limit::Database db;
  raw_limit::Scratch scratch;
  raw_limit::Engine engine;
};

LimitEngine compile_limit(const std::string& path, bool avx2) {
  const auto patterns = raw_limit::read_patterns(path);
  if (!patterns) die("cannot open --limit " + path);
  if (patterns->empty()) die("no patterns in " + path);
  std::vector<const char*> ptrs;
  std::vector<unsigned> flags, ids;
  for (std::size_t i = 0; i < patterns->size(); ++i) {
    ptrs.push_back((*patterns)[i].expr.c_str());
    flags.push_back(HS_FLAG_MULTILINE);
    ids.push_back(static_cast<unsigned>(i));
  }
  LimitEngine e;
  auto engine = raw_limit::engine(avx2);
  if (!engine) die("stage limit_avx2: this library has no AVX2 engine of its own (avx2_hs_scan)");
  e.engine = *engine;
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (hs_compile_multi(ptrs.data(), flags.data(), ids.data(), static_cast<unsigned>(ptrs.size()), HS_MODE_BLOCK,
                       e.engine.compile_for(), &db, &err) != HS_SUCCESS) {
    const raw_limit::CompileError error(err);
    const std::string what = error ? error->message : "compile failed";
    const int at = error ? (*patterns)[static_cast<std::size_t>(std::max(error->expression, 0))].source_line : 0;
    die(path + ":" + std::to_string(at) + ": " + what);
  }
  e.db.reset(db);
  hs_scratch_t* scratch = nullptr;
  if (hs_alloc_scratch(db, &scratch) != HS_SUCCESS) die("hs_alloc_scratch failed");
  e.scratch.reset(scratch);
  return e;
}

std::uint64_t scan_limit(const LimitEngine& e, std::string_view data) {
  constexpr std::size_t kBuffer = 1 << 20;
  std::uint64_t matches = 0;
  auto on_match = [](unsigned, unsigned long long, unsigned long long, unsigned, void* ctx) -> int {
    ++*static_cast<std::uint64_t*>(ctx);
    return 0;
  };
  for (std::size_t pos = 0; pos < data.size();) {
    const std::size_t cut = raw_limit::next_cut(data, pos, kBuffer);
    if (e.engine.scan(e.db.get(), data.data() + pos, static_cast<unsigned>(cut - pos), 0, e.scratch.get(), on_match,
                      &matches) != HS_SUCCESS)
      die("hs_scan failed");
    pos = cut;
  }
  return matches;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> rule_paths;
  std::string input, export_path, hits_path, cache, limit_path;
  bool keep_levels = false, counts = false, json = false;
  std::vector<std::string> stages = {"scan"};
  int reps = 1;
  std::size_t batch_bytes = 0;  // --batch-bytes: the Pipeline's batch size (0: its default)
  DecodeOptions decode;
  decode.format = ContainerFormat::auto_detect;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--rules") {
      rule_paths.push_back(need());
    } else if (a == "--levels") {
      keep_levels = true;
    } else if (a == "--format") {
      auto f = parse_container_format(need());
      if (!f) die("bad --format");
      decode.format = *f;
    } else if (a == "--export") {
      export_path = need();
    } else if (a == "--counts") {
      counts = true;
    } else if (a == "--hits") {
      hits_path = need();
    } else if (a == "--json") {
      json = true;
    } else if (a == "--cache") {
      cache = need();
    } else if (a == "--limit") {
      limit_path = need();
    } else if (a == "--batch-bytes") {
      batch_bytes = std::stoul(need());
    } else if (a == "--reps") {
      reps = std::max(1, std::stoi(need()));
    } else if (a == "--stages") {
      stages.clear();
      std::stringstream ss(need());
      std::string s;
      while (std::getline(ss, s, ',')) {
        if (s != "decode" && s != "scan" && s != "pipeline" && s != "feed" && s != "limit" && s != "limit_avx2")
          die("unknown stage " + s);
        stages.push_back(s);
      }
    } else if (a == "-h" || a == "--help") {
      std::cout << "usage: fl_count [--rules PATH]... [--levels] [--format F] [--export FILE] [--counts] "
                   "[--hits FILE] [--stages decode,scan,pipeline,feed,limit,limit_avx2] [--limit PATTERNS] "
                   "[--batch-bytes N] [--reps N] [--cache DIR] [--json] [FILE]\n";
      return 0;
    } else if (a.size() > 1 && a[0] == '-') {
      die("unknown option " + a);
    } else {
      input = a;
    }
  }
  if (rule_paths.empty()) rule_paths.push_back(default_rules_dir());

  LoadResult loaded = load_rules(rule_paths);
  for (const auto& d : loaded.diagnostics) std::cerr << d.str() << "\n";
  if (!loaded.ok()) die("rules do not load");
  std::vector<std::uint32_t> first_expr;  // per rule: id of its first expression
  struct Expr {
    std::string rule, event, regex;
    bool caseless;
  };
  std::vector<Expr> exprs;
  for (auto& rule : loaded.rules.rules) {
    first_expr.push_back(static_cast<std::uint32_t>(exprs.size()));
    for (auto& ev : rule.events) {
      if (!keep_levels) ev.levels.clear();
      exprs.push_back({rule.id, ev.name, ev.regex, ev.caseless});
    }
  }
  if (!export_path.empty()) {
    std::ofstream out(export_path);
    for (std::size_t i = 0; i < exprs.size(); ++i) {
      if (exprs[i].regex.find_first_of("\t\n") != std::string::npos) die("pattern with a tab or newline");
      out << i << '\t' << (exprs[i].caseless ? 1 : 0) << '\t' << exprs[i].rule << '\t' << exprs[i].event << '\t'
          << exprs[i].regex << '\n';
    }
  }
  double c0 = wall();
  CompileResult compiled = compile_rules(std::move(loaded.rules), CompileOptions{cache});
  double compile_s = wall() - c0;
  for (const auto& d : compiled.diagnostics) std::cerr << d.str() << "\n";
  if (!compiled.rules) die("rules do not compile");
  if (input.empty()) {
    std::cout << "compiled " << exprs.size() << " patterns in " << compile_s << " s"
              << (compiled.info.from_cache ? " (cache)" : "") << "\n";
    return 0;
  }
  const std::string data = read_file(input);
  const Time read_time{std::chrono::seconds(1796000000)};  // fixed: replays are deterministic
  decode.time.reference = read_time;
  constexpr std::size_t kChunk = 1 << 20;
  constexpr std::size_t kBatch = 256 * 1024;

  std::vector<std::uint64_t> line_counts(exprs.size(), 0), last_line(exprs.size(), 0), hit_counts(exprs.size(), 0);
  std::uint64_t union_lines = 0, last_union = 0, records = 0, lines_total = 0, incidents = 0;
  std::FILE* hits_out = hits_path.empty() ? nullptr : std::fopen(hits_path.c_str(), "w");
  std::map<std::string, Timing> timings;
  std::map<std::string, LimitEngine> limits;
  std::uint64_t limit_matches = 0;
  for (const auto& stage : stages) {
    if (stage != "limit" && stage != "limit_avx2") continue;
    if (limit_path.empty()) die("stage " + stage + " needs --limit PATTERNS");
    limits.emplace(stage, compile_limit(limit_path, stage == "limit_avx2"));
  }

  for (int rep = 0; rep < reps; ++rep) {
    for (const auto& stage : stages) {
      double w0 = wall(), t0 = thread_cpu();
      if (auto l = limits.find(stage); l != limits.end()) {
        limit_matches = scan_limit(l->second, data);
      } else if (stage == "pipeline" || stage == "feed") {
        std::uint64_t n = 0;
        ReplayOptions options;
        options.start = read_time;
        if (batch_bytes != 0) options.pipeline.batch_bytes = batch_bytes;
        options.on_incident = [&](const Incident&) { ++n; };
        Replay replay(compiled.rules, std::move(options));
        StreamIdentity id;
        id.name = id.logical = id.instance = input;
        auto s = replay.add_stream(id, decode);
        if (stage == "pipeline") {
          replay.feed_whole({WholeInput{s, data, read_time, {}, {}}}, 1);
        } else {
          for (std::size_t off = 0; off < data.size(); off += kChunk)
            replay.feed(s, std::string_view(data).substr(off, kChunk));
          replay.end_stream(s);
        }
        replay.finish();
        incidents = n;
      } else {
        const bool scan = stage == "scan";
        const bool count = scan && rep == 0;
        Decoder dec(0, decode);
        Scanner scanner(compiled.rules);
        RecordBatch batch;
        std::vector<Hit> hits;
        std::uint64_t recs = 0;
        auto drain = [&]() {
          recs += batch.size();
          if (scan) {
            hits.clear();
            scanner.scan(batch, hits);
            if (count) {
              for (const auto& h : hits) {
                const std::uint64_t line = batch[h.record].line;
                const std::uint32_t e = first_expr[h.event.rule] + h.event.event;
                ++hit_counts[e];
                if (last_line[e] != line) {
                  last_line[e] = line;
                  ++line_counts[e];
                  if (hits_out) std::fprintf(hits_out, "%llu\t%u\n", static_cast<unsigned long long>(line), e);
                }
                if (last_union != line) {
                  last_union = line;
                  ++union_lines;
                }
              }
            }
          }
          batch.clear();
        };
        for (std::size_t off = 0; off < data.size(); off += kChunk) {
          std::string_view chunk = std::string_view(data).substr(off, kChunk);
          // Feed in slices so a batch stays near kBatch, as the Pipeline does.
          while (!chunk.empty()) {
            std::size_t take = std::min<std::size_t>(chunk.size(), std::max<std::size_t>(kBatch - std::min(kBatch, batch.bytes()), 4096));
            if (take < chunk.size()) {
              if (const void* nl = ::memrchr(chunk.data(), '\n', take)) take = static_cast<std::size_t>(static_cast<const char*>(nl) - chunk.data()) + 1;
            }
            dec.feed(chunk.substr(0, take), read_time, batch, /*in_place=*/true);
            chunk.remove_prefix(take);
            if (batch.bytes() >= kBatch) drain();
          }
          batch.materialize();
        }
        dec.flush(read_time, batch);
        drain();
        records = recs;
        lines_total = dec.committed_line() - 1;
      }
      double w = wall() - w0, t = thread_cpu() - t0;
      timings[stage].wall.push_back(w);
      timings[stage].cpu.push_back(t);
    }
  }
  if (hits_out) std::fclose(hits_out);

  // Per limit stage and pipeline stage run beside it: each repetition's limit CPU time / the stage's, and the median.
  // Beside it, the limit's fastest repetition / the stage's fastest: the ratio on a machine that disturbed neither.
  std::map<std::string, std::vector<double>> pairs;
  std::map<std::string, double> fastest_pairs;
  for (const auto& [limit, lt] : timings) {
    if (!limits.contains(limit)) continue;
    for (const char* stage : {"pipeline", "feed"}) {
      auto st = timings.find(stage);
      if (st == timings.end()) continue;
      const std::string name = std::string(stage) + "/" + limit;
      auto& v = pairs[name];
      for (std::size_t i = 0; i < lt.cpu.size() && i < st->second.cpu.size(); ++i)
        v.push_back(lt.cpu[i] / st->second.cpu[i]);
      fastest_pairs[name] = lt.fastest(lt.cpu) / st->second.fastest(st->second.cpu);
    }
  }
  const double mb = static_cast<double>(data.size()) / 1e6;
  if (json) {
    std::cout << "{\"bytes\":" << data.size() << ",\"records\":" << records << ",\"lines\":" << lines_total
              << ",\"patterns\":" << exprs.size() << ",\"compile_s\":" << compile_s
              << ",\"from_cache\":" << (compiled.info.from_cache ? "true" : "false") << ",\"incidents\":" << incidents
              << ",\"union_lines\":" << union_lines << ",\"stages\":{";
    bool first = true;
    for (const auto& [name, t] : timings) {
      std::cout << (first ? "" : ",") << "\"" << name << "\":{\"wall_s\":" << t.median(t.wall)
                << ",\"cpu_s\":" << t.median(t.cpu) << ",\"cpu_fastest_s\":" << t.fastest(t.cpu) << ",\"cpu_each\":[";
      for (std::size_t i = 0; i < t.cpu.size(); ++i) std::cout << (i ? "," : "") << t.cpu[i];
      std::cout << "]}";
      first = false;
    }
    std::cout << "}";
    if (!pairs.empty()) {
      std::cout << ",\"limit_matches\":" << limit_matches << ",\"pairs\":{";
      first = true;
      for (const auto& [name, v] : pairs) {
        std::cout << (first ? "" : ",") << "\"" << name << "\":{\"median\":" << Timing{}.median(v)
                  << ",\"fastest\":" << fastest_pairs[name] << ",\"each\":[";
        for (std::size_t i = 0; i < v.size(); ++i) std::cout << (i ? "," : "") << v[i];
        std::cout << "]}";
        first = false;
      }
      std::cout << "}";
    }
    if (counts) {
      std::cout << ",\"counts\":[";
      for (std::size_t i = 0; i < exprs.size(); ++i)
        std::cout << (i ? "," : "") << "{\"id\":" << i << ",\"lines\":" << line_counts[i] << ",\"hits\":" << hit_counts[i]
                  << ",\"rule\":\"" << json_escape(exprs[i].rule) << "\",\"event\":\"" << json_escape(exprs[i].event)
                  << "\"}";
      std::cout << "]";
    }
    std::cout << "}\n";
    return 0;
  }
  std::printf("file %s: %.1f MB, %llu physical lines, %llu records; %zu patterns compiled in %.3f s%s\n", input.c_str(),
              mb, static_cast<unsigned long long>(lines_total), static_cast<unsigned long long>(records), exprs.size(),
              compile_s, compiled.info.from_cache ? " (cache)" : "");
  for (const auto& [name, t] : timings) {
    double w = t.median(t.wall), c = t.median(t.cpu);
    std::printf("stage %-8s wall %.3f s (%.0f MB/s)  cpu %.3f s (%.0f MB/s)\n", name.c_str(), w, mb / w, c, mb / c);
  }
  for (const auto& [name, v] : pairs) {
    std::printf("%s: limit / stage, per repetition:", name.c_str());
    for (double x : v) std::printf(" %.3f", x);
    std::printf("  (median %.3f; fastest / fastest %.3f)\n", Timing{}.median(v), fastest_pairs[name]);
  }
  if (std::find(stages.begin(), stages.end(), "pipeline") != stages.end() ||
      std::find(stages.begin(), stages.end(), "feed") != stages.end())
    std::printf("incidents %llu\n", static_cast<unsigned long long>(incidents));
  std::printf("lines hit by any pattern: %llu\n", static_cast<unsigned long long>(union_lines));
  if (counts) {
    for (std::size_t i = 0; i < exprs.size(); ++i)
      std::printf("%zu\t%llu\t%s/%s\n", i, static_cast<unsigned long long>(line_counts[i]), exprs[i].rule.c_str(),
                  exprs[i].event.c_str());
  }
  return 0;
}
