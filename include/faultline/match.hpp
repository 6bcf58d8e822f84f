// match: every event pattern of a RuleSet compiled into one Hyperscan database, scanned once per batch of records;
// on the lines that hit (never on the others) a match that could have spanned lines is confirmed on the line alone,
// and RE2 captures the fields of patterns that name some.
// A CompiledRules is immutable and shared read-only between threads; a Scanner owns Hyperscan scratch space and
// belongs to one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "faultline/decode.hpp"
#include "faultline/rules.hpp"
#include "faultline/types.hpp"

namespace faultline {

// Refers to one event of one rule in a CompiledRules.
struct EventRef {
  std::uint32_t rule = 0;
  std::uint32_t event = 0;
  bool operator==(const EventRef&) const = default;
};

struct Hit {
  std::uint32_t record = 0;  // index in the scanned batch
  EventRef event;
  Fields fields;             // named captures, then the event's static `set` fields
};

// The story anchors: reserved patterns compiled into every database beside the rules' events. They mark where a
// failure story of any stack begins or ends (a Python traceback, a C++ terminate, a CUDA status, a panic, a
// supervisor's exit line). Their hits go to the fingerprint room, never to the correlator; the Scanner reports them
// apart from rule hits. No rule can name them.
enum class StoryAnchor : std::uint8_t {
  traceback,       // Traceback (most recent call last):
  terminate,       // terminate called after throwing an instance of '...'
  what,            // what():  (the message of a C++ terminate)
  assertion,       // Assertion failed / Assertion `x' failed
  check_failed,    // glog Check failed:
  glog_fatal,      // a glog F line
  signal,          // Segmentation fault, SIGSEGV, Aborted (core dumped), ...
  fatal_python,    // Fatal Python error:
  cuda_error,      // CUDA error: , cudaError..., CUDA_ERROR_...
  library_status,  // CUBLAS_STATUS_..., CUDNN_STATUS_...
  go_panic,        // panic:
  rust_panic,      // thread '...' panicked at
  exit_status,     // exited with code N, exitcode N, exit status N (N != 0), Ray's "The program will terminate"
  errno_error,     // [Errno N] (only a story where the line is logged as an error)
  exception_line,  // pkg.SomeError: message — a traceback's last line, also when its head was not logged
  python_frame,    // File "x.py", line N, in f — a frame of a Python traceback (a story only when logged as an error
                   // and no story is open: a traceback whose head is not in the log)
  go_runtime_frame,  // "file.go:N +0x.. fp=0x.. sp=0x.. pc=0x..": a frame of the Go runtime's own crash dump
};
constexpr std::size_t kStoryAnchorCount = 17;
std::string_view to_string(StoryAnchor anchor);

struct AnchorHit {
  std::uint32_t record = 0;  // index in the scanned batch
  StoryAnchor anchor = StoryAnchor::traceback;
};

struct CompileOptions {
  std::string cache_dir;  // where serialized databases are kept; empty: no cache
  bool story_anchors = true;  // false: the rules' events only (no failure stories: typed incidents only)
  // Captures through a copy of each expression with its long counted repetitions unbounded, checked against their
  // bounds (several times faster in RE2; the same fields). false: each expression itself (tests compare the two).
  bool relax_repetitions = true;
};

struct CompileInfo {
  bool from_cache = false;
  double seconds = 0;
  std::size_t patterns = 0;
  std::size_t database_bytes = 0;
};

class CompiledRules;

struct CompileResult {
  std::shared_ptr<const CompiledRules> rules;  // null when a pattern failed
  std::vector<Diagnostic> diagnostics;         // every pattern that Hyperscan or RE2 rejects, with its position
  CompileInfo info;
};

// Compiles every event of `rules`. Each failing pattern is reported (rule, event, pattern, position).
CompileResult compile_rules(RuleSet rules, const CompileOptions& options = {});

// From now on the process's Hyperscan databases lie on transparent huge pages where the system offers them: loading
// one faults its memory in 2 MiB at a time instead of 4 KiB, for up to 2 MiB more resident memory per database. For
// a short-lived process that loads a database once (scan), not for the daemon, whose memory is its budget. Call
// before any database is compiled or loaded; later calls do nothing.
void place_databases_on_huge_pages();

class CompiledRules {
 public:
  ~CompiledRules();
  CompiledRules(const CompiledRules&) = delete;
  CompiledRules& operator=(const CompiledRules&) = delete;

  const RuleSet& rule_set() const { return rules_; }
  const Rule& rule(std::uint32_t index) const { return rules_.rules[index]; }
  const EventPattern& event(EventRef ref) const { return rules_.rules[ref.rule].events[ref.event]; }
  std::size_t pattern_count() const;
  // RE2 objects built so far: none after a compile or a load from the cache; a scan builds those of the expressions
  // whose Hyperscan matches it confirms with RE2 (and a relaxed copy of some), once each.
  std::size_t regexes_built() const;

 private:
  struct Impl;  // the Hyperscan database and the per-expression tables (match.cpp)
  friend class Scanner;
  friend CompileResult compile_rules(RuleSet, const CompileOptions&);
  CompiledRules(RuleSet rules, std::unique_ptr<Impl> impl);
  RuleSet rules_;
  std::unique_ptr<Impl> impl_;
};

struct ScanStats {
  std::uint64_t bytes = 0;
  std::uint64_t records = 0;
  std::uint64_t candidates = 0;  // Hyperscan matches (before level filter and RE2 confirmation)
  std::uint64_t hits = 0;
  std::uint64_t anchor_hits = 0;  // story anchors (AnchorHit), counted apart from rule hits
};

// Which Hyperscan engine scans: the library's AVX2 one on a CPU where it would pick its AVX-512 engine (which can
// miss matches), else the one the library picks (`faultline version` says which).
std::string_view hyperscan_engine();

// Scans batches against one CompiledRules. Owns the Hyperscan scratch; not thread-safe, one per thread.
class Scanner {
 public:
  explicit Scanner(std::shared_ptr<const CompiledRules> rules);
  ~Scanner();
  Scanner(Scanner&&) noexcept;
  Scanner& operator=(Scanner&&) noexcept;

  // Appends the hits of `batch` to `out` in record order, at most one per (record, event).
  void scan(const RecordBatch& batch, std::vector<Hit>& out);
  // The same pass, also appending the story anchors that hit to `anchors` in record order, at most one per (record,
  // anchor). Rule hits are exactly those of scan(batch, out).
  void scan(const RecordBatch& batch, std::vector<Hit>& out, std::vector<AnchorHit>& anchors);

  const CompiledRules& rules() const;
  const std::shared_ptr<const CompiledRules>& shared_rules() const;
  const ScanStats& stats() const;

  // When set, called for every line an event's pattern matched but the event's `level:` filter dropped (the line
  // is confirmed by RE2 first, as a hit would be), so that `--explain` can say why a matching line did nothing.
  // Costs nothing on the scan path while unset.
  using LevelFiltered = std::function<void(const RecordBatch& batch, std::uint32_t record, EventRef event)>;
  void set_level_filtered(LevelFiltered observer);

 private:
  struct Impl;  // scratch, stats and the per-scan state the Hyperscan callback fills (match.cpp)
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
