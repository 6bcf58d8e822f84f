// One Hyperscan block-mode database over every event of every rule. A batch of records (texts joined by '\n') is
// scanned in one hs_scan call; each match end is mapped back to its record. Candidates are then filtered by level
// and, where the pattern could have matched across a newline, confirmed on the record's own text — by Hyperscan
// again when that is all there is to ask, by RE2 where the pattern has captures (which RE2 then takes) — so every hit
// lies inside one line.
#include <dlfcn.h>
#include <hs/hs.h>
#include <re2/re2.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <span>

#include "faultline/durable_file.hpp"
#include "faultline/match.hpp"

namespace faultline {

namespace fs = std::filesystem;

namespace {

struct DatabaseDeleter {
  void operator()(hs_database_t* db) const { hs_free_database(db); }
};
struct ScratchDeleter {
  void operator()(hs_scratch_t* s) const { hs_free_scratch(s); }
};
struct CompileErrorDeleter {
  void operator()(hs_compile_error_t* e) const { hs_free_compile_error(e); }
};
struct SerializedDeleter {
  void operator()(char* p) const { std::free(p); }
};
using DatabasePtr = std::unique_ptr<hs_database_t, DatabaseDeleter>;
using ScratchPtr = std::unique_ptr<hs_scratch_t, ScratchDeleter>;
using CompileErrorPtr = std::unique_ptr<hs_compile_error_t, CompileErrorDeleter>;

// The layout of what the cache holds (a serialized Hyperscan database of the rules' expressions, then the story
// anchors): changes whenever faultline compiles the same patterns into a different database.
constexpr std::string_view kDatabaseFormat = "faultline-rules-db/2";

// One part of the cache key, closed by a 0xff byte (which no pattern text holds) so parts cannot run together.
std::uint64_t mix_part(std::uint64_t h, std::string_view part) { return fnv1a64("\xff", fnv1a64(part, h)); }

// Could a Hyperscan match of this pattern span a newline inside a multi-line buffer? Literals and '.' cannot;
// whitespace classes, negated classes and explicit newlines can.
bool may_cross_newline(std::string_view re) {
  for (std::size_t i = 0; i < re.size(); ++i) {
    char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      char n = re[i + 1];
      if (n == 's' || n == 'S' || n == 'W' || n == 'D' || n == 'n' || n == 'v' || n == 'V' || n == 'H' || n == 'x' ||
          n == 'R' || n == 'N')
        return true;
      ++i;
    } else if (c == '[' && i + 1 < re.size() && re[i + 1] == '^') {
      return true;
    } else if (c == '(' && i + 2 < re.size() && re[i + 1] == '?' && re.find('s', i) < re.find(')', i)) {
      return true;  // inline flags; be conservative
    }
  }
  return false;
}

// Which of the library's engines scans. Vectorscan's x86 library holds one engine per instruction set and picks the
// widest the CPU has; its AVX-512 engine (Debian 12's 5.4.9; fixed upstream by VectorCamp/vectorscan#378, "nvermicelli
// tail scan masking") can skip the last bytes of a stretch it accelerates over and so miss matches, depending on the
// buffer's address: a `[^ ]*` run before a literal, next to other patterns, lost its matches at 27 of 64 alignments
// (tests/unit/test_match.cpp). Where that engine would run, the database is compiled for AVX2 and scanned with the
// library's AVX2 engine (its own exported entry point; an engine must be given a database compiled for its own
// instruction set): results that do not depend on where the bytes lie, for ~4 % of Hyperscan's speed. A library
// without that entry point (a build for one instruction set, Arm) scans with hs_scan as it is.
using ScanFunction = hs_error_t (*)(const hs_database_t*, const char*, unsigned int, unsigned int, hs_scratch_t*,
                                    match_event_handler, void*);

struct Engine {
  ScanFunction scan = hs_scan;
  bool avoids_avx512 = false;
};

const Engine& engine() {
  static const Engine picked = [] {
    Engine e;
#if defined(__x86_64__)
    hs_platform_info_t host;
    if (hs_populate_platform(&host) == HS_SUCCESS &&
        (host.cpu_features & (HS_CPU_FEATURES_AVX512 | HS_CPU_FEATURES_AVX512VBMI)) != 0) {
      if (void* avx2 = ::dlsym(RTLD_DEFAULT, "avx2_hs_scan")) {
        e.scan = reinterpret_cast<ScanFunction>(avx2);
        e.avoids_avx512 = true;
      }
    }
#endif
    return e;
  }();
  return picked;
}

}  // namespace

std::string_view hyperscan_engine() {
  return engine().avoids_avx512 ? "AVX2 engine (the library's AVX-512 engine can miss matches)" : "the library's pick";
}

namespace {

// The story anchors, in StoryAnchor order. Each is anchored on rare literal text (no leading wildcard) so it adds
// little to the scan; none can match across a newline, so every anchor hit lies inside one line. Alternatives that
// begin alike are written with their common start once ("exit(ed with code |code...)"), and a hit ends at the first
// character that decides it: the same lines hit, and the scan does less (written out one by one, the exit
// alternatives alone cost 3 ms of the 125 ms Hyperscan takes over 1M lines of the bench corpus).
// An entry that is empty here is looked for by its literal starts alone (kAnchorStarts).
constexpr std::array<std::string_view, kStoryAnchorCount> kAnchorPatterns{
    R"(Traceback \(most recent call last\):)",
    R"(terminate called (after throwing|without an active exception|recursively))",
    R"(what\(\): )",
    R"(Assertion failed|Assertion `)",
    R"(Check failed: )",
    R"(\*\*\* Check failure stack trace)",
    R"(Segmentation fault|\*\*\* SIG(SEGV|ABRT|BUS|ILL|FPE) received|[0-9] Aborted  )"
    R"(|(Aborted|Bus error|Illegal instruction) \(core dumped\))",
    R"(Fatal Python error: )",
    "",  // cuda_error: kAnchorStarts
    "",  // library_status: kAnchorStarts
    R"(panic: )",
    R"(' panicked at )",
    R"(exit(ed with code |code:? ?| status | code:? )-?[1-9]|The program will terminate)",
    R"(\[Errno [0-9]+\] )",
    R"([A-Za-z0-9](Error|Exception|Failed|Failure): |\.OutOfResources: )",
    "",  // python_frame: kAnchorStarts
    R"( fp=0x[0-9a-f]+ sp=0x[0-9a-f]+ pc=0x)",
};

// Three anchors are dear to Hyperscan as expressions (a class or a repeat right after a short literal): 0.7-1.9 ms
// each of its scan over 1M lines of the bench corpus, 3.6 ms (3 %) together. It looks instead for the literals that
// every match of them begins with, which cost it next to nothing, and a hit is kept where one of those literals is
// followed by what the anchor asks after it (`rest`). Together that is exactly the anchor's expression:
//   cuda_error      CUDA( error(: | [0-9]+ at )|_ERROR_[A-Z])|cudaError[A-Z]
//   library_status  CUBLAS_STATUS_[A-Z]|CUDNN_STATUS_[A-Z]
//   python_frame    File "[^"\n]+", line [0-9]
// (A record's text holds no '\n'.) Frames hit every line of every Python traceback: the check is written out, not
// asked of RE2 (about 200 ns a call, more than Hyperscan saves).
struct AnchorStart {
  std::string_view literal;               // a literal every match begins with (no character special to a regex)
  bool (*rest)(std::string_view after);   // the text after it completes a match
};

constexpr bool digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool upper_first(std::string_view s) { return !s.empty() && s[0] >= 'A' && s[0] <= 'Z'; }

constexpr bool cuda_error_rest(std::string_view s) {
  if (s.starts_with(": ")) return true;
  if (!s.starts_with(' ')) return false;
  std::size_t i = 1;
  while (i < s.size() && digit(s[i])) ++i;
  return i > 1 && s.substr(i).starts_with(" at ");
}

constexpr bool frame_rest(std::string_view s) {
  const std::size_t quote = s.find('"');
  return quote != std::string_view::npos && quote > 0 && s.substr(quote).starts_with("\", line ") &&
         s.size() > quote + 8 && digit(s[quote + 8]);
}

constexpr AnchorStart kCudaErrorStarts[] = {{"CUDA error", cuda_error_rest},
                                            {"CUDA_ERROR_", upper_first},
                                            {"cudaError", upper_first}};
constexpr AnchorStart kLibraryStatusStarts[] = {{"CUBLAS_STATUS_", upper_first}, {"CUDNN_STATUS_", upper_first}};
constexpr AnchorStart kFrameStarts[] = {{"File \"", frame_rest}};

// The literal starts of the anchors looked for by them, by StoryAnchor (empty: the expression in kAnchorPatterns).
constexpr std::array<std::span<const AnchorStart>, kStoryAnchorCount> kAnchorStarts = [] {
  std::array<std::span<const AnchorStart>, kStoryAnchorCount> starts{};
  starts[static_cast<std::size_t>(StoryAnchor::cuda_error)] = kCudaErrorStarts;
  starts[static_cast<std::size_t>(StoryAnchor::library_status)] = kLibraryStatusStarts;
  starts[static_cast<std::size_t>(StoryAnchor::python_frame)] = kFrameStarts;
  return starts;
}();

// What Hyperscan looks for for anchor k: its expression, or its literal starts as alternatives.
std::string anchor_expression(std::size_t k) {
  if (kAnchorStarts[k].empty()) return std::string(kAnchorPatterns[k]);
  std::string expr;
  for (const AnchorStart& start : kAnchorStarts[k]) {
    if (!expr.empty()) expr += '|';
    expr += start.literal;
  }
  return expr;
}

// Whether a hit of anchor k in `text`, whose first match ended at `end` (0: not known), is one: always for an anchor
// Hyperscan looks for as it is; for one looked for by its literal starts, where one of them from there on (a match
// begins at most the longest literal's length before the first end) is followed by its rest.
bool anchor_confirmed(std::size_t k, std::string_view text, std::size_t end) {
  const std::span<const AnchorStart> starts = kAnchorStarts[k];
  if (starts.empty()) return true;
  std::size_t reach = 0;
  for (const AnchorStart& start : starts) reach = std::max(reach, start.literal.size());
  const std::size_t from = end > reach ? end - reach : 0;
  for (const AnchorStart& start : starts) {
    for (std::size_t at = text.find(start.literal, from); at != std::string_view::npos;
         at = text.find(start.literal, at + 1)) {
      if (start.rest(text.substr(at + start.literal.size()))) return true;
    }
  }
  return false;
}

}  // namespace

// Hyperscan's database memory on huge pages (place_databases_on_huge_pages): each block carries a header that says
// how it was had, so that one free() returns blocks of either kind.
namespace huge_databases {

constexpr std::size_t kHuge = std::size_t{2} << 20;
constexpr std::size_t kHeader = 64;            // keeps the block 64-byte aligned (Hyperscan asks for 8)
constexpr std::size_t kFrom = std::size_t{256} << 10;  // smaller blocks come from malloc

void* allocate(std::size_t size) {
  if (size < kFrom) {
    void* p = nullptr;
    if (::posix_memalign(&p, kHeader, size + kHeader) != 0) return nullptr;
    *static_cast<std::size_t*>(p) = 0;
    return static_cast<char*>(p) + kHeader;
  }
  // A whole number of huge pages at a huge-page boundary: map one more, then give back what lies outside.
  const std::size_t length = (size + kHeader + kHuge - 1) / kHuge * kHuge;
  void* raw = ::mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto at = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (at + kHuge - 1) & ~(kHuge - 1);
  if (aligned > at) ::munmap(raw, aligned - at);
  if (const std::uintptr_t tail = at + length + kHuge - (aligned + length); tail > 0)
    ::munmap(reinterpret_cast<void*>(aligned + length), tail);
  auto* block = reinterpret_cast<char*>(aligned);
#if defined(MADV_HUGEPAGE)
  ::madvise(block, length, MADV_HUGEPAGE);
#endif
  *reinterpret_cast<std::size_t*>(block) = length;
  return block + kHeader;
}

void release(void* p) {
  if (p == nullptr) return;
  char* block = static_cast<char*>(p) - kHeader;
  const std::size_t length = *reinterpret_cast<const std::size_t*>(block);
  if (length == 0) std::free(block);
  else ::munmap(block, length);
}

}  // namespace huge_databases

void place_databases_on_huge_pages() {
  static std::once_flag once;
  std::call_once(once, [] { hs_set_database_allocator(huge_databases::allocate, huge_databases::release); });
}

std::string_view to_string(StoryAnchor anchor) {
  switch (anchor) {
    case StoryAnchor::traceback: return "traceback";
    case StoryAnchor::terminate: return "terminate";
    case StoryAnchor::what: return "what";
    case StoryAnchor::assertion: return "assertion";
    case StoryAnchor::check_failed: return "check-failed";
    case StoryAnchor::glog_fatal: return "glog-fatal";
    case StoryAnchor::signal: return "signal";
    case StoryAnchor::fatal_python: return "fatal-python";
    case StoryAnchor::cuda_error: return "cuda-error";
    case StoryAnchor::library_status: return "library-status";
    case StoryAnchor::go_panic: return "go-panic";
    case StoryAnchor::rust_panic: return "rust-panic";
    case StoryAnchor::exit_status: return "exit-status";
    case StoryAnchor::errno_error: return "errno-error";
    case StoryAnchor::exception_line: return "exception";
    case StoryAnchor::python_frame: return "python-frame";
    case StoryAnchor::go_runtime_frame: return "go-runtime-frame";
  }
  return "";
}

namespace {

// A copy of an expression for RE2's captures in which each long counted repetition of one character (`[^)\n]{0,160}`,
// `.{1,200}`) is unbounded and captured: `(?P<_flrepK>[^)\n]*)`. RE2 spells a counted repetition out as that many
// instructions and, with captures, runs its NFA over a program that large (a hit of such a pattern cost ~100 us);
// the copy's program is a few times smaller. What the copy captures is what the expression captures whenever each
// such repetition's capture is within its bound: the expression's matches are among the copy's, in the same order of
// preference, so the copy's first match, when the expression allows it, is also the expression's first. Otherwise
// the expression itself is asked. Only repetitions outside any repeated group are relaxed (a capture inside one shows
// its last round alone); lazy ones, short ones and patterns with \Q...\E are left as they are.
struct RelaxedRegex {
  std::string regex;
  std::vector<std::pair<std::string, std::size_t>> bounds;  // (group name, most bytes) per relaxed repetition
};

constexpr std::size_t kRelaxFrom = 16;  // repetitions allowing at least this many more rounds than their minimum

std::optional<RelaxedRegex> relax_counted_repetitions(std::string_view re) {
  if (re.find("\\Q") != std::string_view::npos) return std::nullopt;
  // Pass 1: the index just past each atom starting at i (one character, escape, class or group), and which groups
  // are repeated.
  const std::size_t n = re.size();
  std::vector<std::size_t> group_end(n, 0);  // for '(' at i: index of its ')'
  {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < n; ++i) {
      const char c = re[i];
      if (c == '\\') {
        ++i;
      } else if (c == '[') {
        std::size_t j = i + 1;
        if (j < n && re[j] == '^') ++j;
        if (j < n && re[j] == ']') ++j;
        for (; j < n && re[j] != ']'; ++j) {
          if (re[j] == '\\') ++j;
          else if (re[j] == '[' && j + 1 < n && re[j + 1] == ':') {
            const auto e = re.find(":]", j + 2);
            if (e == std::string_view::npos) return std::nullopt;
            j = e + 1;
          }
        }
        if (j >= n) return std::nullopt;
        i = j;
      } else if (c == '(') {
        open.push_back(i);
      } else if (c == ')') {
        if (open.empty()) return std::nullopt;
        group_end[open.back()] = i;
        open.pop_back();
      }
    }
    if (!open.empty()) return std::nullopt;
  }
  const auto quantified_at = [&](std::size_t i) {
    return i < n && (re[i] == '*' || re[i] == '+' || re[i] == '?' || re[i] == '{');
  };
  RelaxedRegex out;
  std::size_t repeated_until = 0;  // inside a repeated group up to this index
  std::size_t i = 0;
  while (i < n) {
    const std::size_t atom = i;
    const char c = re[i];
    if (c == '(') {
      const std::size_t close = group_end[i];
      if (quantified_at(close + 1)) repeated_until = std::max(repeated_until, close);
      out.regex += c;
      ++i;
      continue;
    }
    // One character's atom: [atom, i).
    if (c == '\\') {
      if (i + 1 >= n) return std::nullopt;
      const char e = re[i + 1];
      i += 2;
      if ((e == 'p' || e == 'P' || e == 'x') && i < n && re[i] == '{') {
        const auto close = re.find('}', i);
        if (close == std::string_view::npos) return std::nullopt;
        i = close + 1;
      } else if ((e == 'p' || e == 'P') && i < n) {
        ++i;
      } else if (e == 'x') {
        i = std::min(n, i + 2);
      } else if (e >= '0' && e <= '7') {
        while (i < n && i < atom + 4 && re[i] >= '0' && re[i] <= '7') ++i;
      }
    } else if (c == '[') {
      std::size_t j = i + 1;
      if (j < n && re[j] == '^') ++j;
      if (j < n && re[j] == ']') ++j;
      for (; j < n && re[j] != ']'; ++j) {
        if (re[j] == '\\') {
          ++j;
        } else if (re[j] == '[' && j + 1 < n && re[j + 1] == ':') {
          const auto e = re.find(":]", j + 2);
          if (e == std::string_view::npos) return std::nullopt;
          j = e + 1;
        }
      }
      if (j >= n) return std::nullopt;  // (pass 1 read it another way: leave the pattern as it is)
      i = j + 1;
    } else {
      ++i;
    }
    const std::string_view text = re.substr(atom, i - atom);
    const bool assertion =
        c == '\\' && text.size() == 2 && std::string_view("bBAzC").find(text[1]) != std::string_view::npos;
    const bool one_char = c != ')' && c != '|' && c != '^' && c != '$' && !quantified_at(atom) && !assertion;
    // A counted repetition {m,n} right after it, greedy?
    std::size_t lo = 0, hi = 0, end = i;
    bool counted = false;
    if (one_char && atom >= repeated_until && i < n && re[i] == '{') {
      std::size_t j = i + 1;
      // Reads the number at j into v, j moved past it; false if there is none.
      const auto number = [&](std::size_t& v) {
        if (j >= n || re[j] < '0' || re[j] > '9') return false;
        for (v = 0; j < n && re[j] >= '0' && re[j] <= '9'; ++j) v = v * 10 + static_cast<std::size_t>(re[j] - '0');
        return true;
      };
      std::size_t a = 0, b = 0;
      const bool have_a = number(a);
      const bool comma = j < n && re[j] == ',';
      if (comma) ++j;
      const bool have_b = comma && number(b);
      const bool greedy = !(j + 1 < n && re[j + 1] == '?');
      if (have_a && have_b && j < n && re[j] == '}' && b >= a + kRelaxFrom && greedy) {
        counted = true;
        lo = a;
        hi = b;
        end = j + 1;
      }
    }
    if (!counted) {
      out.regex.append(text);
      continue;
    }
    const std::string name = "_flrep" + std::to_string(out.bounds.size());
    out.regex += "(?P<" + name + ">";
    out.regex.append(text);
    out.regex += lo == 0 ? "*" : "{" + std::to_string(lo) + ",}";
    out.regex += ")";
    out.bounds.emplace_back(name, hi);
    i = end;
  }
  if (out.bounds.empty()) return std::nullopt;
  return out;
}

// How RE2 is asked about an expression. RE2 answers an unanchored question with captures by running its DFA forward to
// the match's end, a second DFA backward over the reversed expression to its start, and its bit-state backtracker
// over the match alone; the DFAs and the reversed program are built on the first question, which costs 0.1-0.3 ms
// per expression (most of RE2's part in a scan of a million lines, where a few dozen expressions hit a few times
// each). Asked about the expression behind a lazy `.*?`, anchored at the text's start, RE2 goes straight to the
// backtracker over the line, with nothing built: the same match, the same captures (an unanchored search is that
// lazy prefix), a little dearer per question (~1 us against ~0.5 on a 300-byte line). The backtracker visits each
// (instruction, byte) pair at most once, so it is linear in the line like the rest of RE2, and RE2 uses it only where
// that bitmap is small (a longer line goes to the anchored DFA). So an expression is asked in the first form until
// it has been asked kAskedBeforeSearch times or the backtracker may have done about as much work as the DFAs cost to
// build, then in the second.
enum class Form : std::uint8_t {
  leftmost,  // ".*?(?:expression)", anchored at the start: the backtracker alone
  searched,  // the expression, unanchored: RE2's DFAs, built on first use
};
constexpr std::size_t kForms = 2;

// RE2 for one expression in one form, built on first use: a database read from the cache was compiled from patterns
// RE2 accepted (the cache is written only then), and a compile drops the RE2s it checks them with, so start-up keeps
// none; a scan builds those of the lines that hit.
// Where a relaxed copy applies, the scan asks the copy, and the expression itself (whose counted repetitions make it
// the costlier of the two to build, up to a few milliseconds) is built only when a capture is over its bound.
struct FormRegex {
  std::once_flag once;        // the relaxed copy, where one applies; else the expression itself
  std::once_flag exact_once;  // the expression itself
  std::unique_ptr<RE2> re;    // the expression itself, once asked for (exact_for); !ok(): RE2 rejects it
  std::vector<std::pair<int, std::string>> groups;  // (group, name) of its named captures, set with `re`
  // Its relaxed copy (RelaxedRegex), when it has named captures and long counted repetitions.
  std::unique_ptr<RE2> relaxed;
  std::vector<std::pair<int, std::string>> relaxed_groups;  // the same names, their groups in the copy
  std::vector<std::pair<int, std::size_t>> relaxed_bounds;  // (group, most bytes) per relaxed repetition
  int relaxed_count = 0;                                    // groups to ask the copy for

  // The size of the program a question asks first (the relaxed copy where there is one); 0 before it is built.
  std::uint64_t first_program_size() const {
    const RE2* first = relaxed ? relaxed.get() : re.get();
    return first != nullptr && first->ok() ? static_cast<std::uint64_t>(first->ProgramSize()) : 0;
  }
};

struct LazyRegex {
  FormRegex form[kForms];
  // The most bytes a match of the expression spans (Hyperscan's max_width; kUnbounded when it has no bound).
  std::once_flag width_once;
  std::size_t max_width = 0;
};

// The text RE2 compiles for an expression (or its relaxed copy) in `form`. The group adds no capture: group numbers
// and names are the expression's.
std::string pattern_in(Form form, const std::string& regex) {
  return form == Form::leftmost ? ".*?(?:" + regex + ")" : regex;
}

constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

// Might the pattern have a named capture ("(?P<name>" or "(?<name>")? A yes that RE2 does not share only costs a
// confirmation.
bool may_capture(std::string_view re) {
  if (re.find("(?P<") != std::string_view::npos) return true;
  for (std::size_t p = re.find("(?<"); p != std::string_view::npos; p = re.find("(?<", p + 3)) {
    if (p + 3 < re.size() && re[p + 3] != '=' && re[p + 3] != '!') return true;
  }
  return false;
}

// How a Hyperscan match of an expression is made a hit.
enum class Confirm : std::uint8_t {
  none,   // as it is: the expression cannot match across a newline and has no captures
  alone,  // if Hyperscan matches it in the record's text alone (it could have matched across a newline)
  re2,    // if RE2 matches it in the record's text, which also takes its captures
};

}  // namespace

struct CompiledRules::Impl {
  DatabasePtr db;
  std::vector<EventRef> ids;                     // expression id → event
  std::vector<std::string> regex;                // per expression
  std::vector<std::uint8_t> caseless;            // per expression
  std::vector<Confirm> confirm;                  // per expression: how its hits are confirmed
  std::unique_ptr<LazyRegex[]> lazy;             // per expression
  std::vector<std::uint8_t> level_mask;          // per expression: bit per Level; 0xff = any
  std::size_t database_bytes = 0;
  bool relax_repetitions = true;
  mutable std::atomic<std::size_t> regexes_built{0};  // RE2 objects built so far (expressions and relaxed copies)

  static RE2::Options options_for(bool caseless) {
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);
    options.set_case_sensitive(!caseless);
    options.set_log_errors(false);
    options.set_never_nl(true);
    return options;
  }

  // The expression's RE2 in `form` for a scan, built on first use (thread-safe): its relaxed copy where one applies
  // (`relaxed` set, `re` not built yet), else the expression itself (`re`).
  const FormRegex& regex_for(std::size_t expr, Form form) const {
    FormRegex& f = lazy[expr].form[static_cast<std::size_t>(form)];
    std::call_once(f.once, [&] {
      if (!relax_repetitions || !may_capture(regex[expr]) || !build_relaxed(f, expr, form)) (void)exact_for(expr, form);
    });
    return f;
  }

  // The most bytes a match of the expression spans, asked of Hyperscan on first use (thread-safe); kUnbounded where
  // it has no bound or cannot say. RE2 reads the same expression a byte per character (Latin-1), so none of its
  // matches is longer.
  std::size_t max_width_of(std::size_t expr) const {
    LazyRegex& l = lazy[expr];
    std::call_once(l.width_once, [&] {
      l.max_width = kUnbounded;
      hs_expr_info_t* info = nullptr;
      hs_compile_error_t* err = nullptr;
      const unsigned flags = HS_FLAG_MULTILINE | (caseless[expr] != 0 ? HS_FLAG_CASELESS : 0u);
      if (hs_expression_info(regex[expr].c_str(), flags, &info, &err) == HS_SUCCESS && info != nullptr) {
        if (info->max_width != std::numeric_limits<unsigned>::max()) l.max_width = info->max_width;
        std::free(info);  // allocated with the library's misc allocator: malloc unless set otherwise
      }
      CompileErrorPtr guard(err);
    });
    return l.max_width;
  }

  // The expression itself in `form`, built on first use (thread-safe): `re` and `groups` are set.
  const FormRegex& exact_for(std::size_t expr, Form form = Form::searched) const {
    FormRegex& f = lazy[expr].form[static_cast<std::size_t>(form)];
    std::call_once(f.exact_once, [&] {
      f.re = std::make_unique<RE2>(pattern_in(form, regex[expr]), options_for(caseless[expr] != 0));
      regexes_built.fetch_add(1, std::memory_order_relaxed);
      if (!f.re->ok()) return;
      for (const auto& [name, index] : f.re->NamedCapturingGroups()) f.groups.emplace_back(index, name);
      std::sort(f.groups.begin(), f.groups.end());
    });
    return f;
  }

 private:
  // The relaxed copy of the expression, when it has long counted repetitions and named captures (a yes or no alone
  // is the DFA's, with nothing to gain). The copy's named groups other than the relaxed repetitions' are the
  // expression's, in the same order: the copy only adds groups.
  bool build_relaxed(FormRegex& f, std::size_t expr, Form form) const {
    auto relaxed = relax_counted_repetitions(regex[expr]);
    if (!relaxed) return false;
    auto copy = std::make_unique<RE2>(pattern_in(form, relaxed->regex), options_for(caseless[expr] != 0));
    regexes_built.fetch_add(1, std::memory_order_relaxed);
    if (!copy->ok()) return false;
    const auto& named = copy->NamedCapturingGroups();
    const auto relaxing = [&](const std::string& name) {
      return std::any_of(relaxed->bounds.begin(), relaxed->bounds.end(), [&](const auto& b) { return b.first == name; });
    };
    for (const auto& [name, index] : named) {
      if (!relaxing(name)) f.relaxed_groups.emplace_back(index, name);
    }
    if (f.relaxed_groups.empty()) return false;
    std::sort(f.relaxed_groups.begin(), f.relaxed_groups.end());
    for (const auto& [name, most] : relaxed->bounds) f.relaxed_bounds.emplace_back(named.at(name), most);
    f.relaxed_count = copy->NumberOfCapturingGroups() + 1;
    f.relaxed = std::move(copy);
    return true;
  }
};

CompiledRules::CompiledRules(RuleSet rules, std::unique_ptr<Impl> impl)
    : rules_(std::move(rules)), impl_(std::move(impl)) {}
CompiledRules::~CompiledRules() = default;
std::size_t CompiledRules::pattern_count() const { return impl_->ids.size(); }  // the rules' own, not the anchors
std::size_t CompiledRules::regexes_built() const { return impl_->regexes_built.load(std::memory_order_relaxed); }

CompileResult compile_rules(RuleSet rules, const CompileOptions& options) {
  CompileResult result;
  auto started = std::chrono::steady_clock::now();
  auto impl = std::make_unique<CompiledRules::Impl>();
  impl->relax_repetitions = options.relax_repetitions;
  rules.build_index();  // the copy every scanner and correlator reads: its lookups are by index

  std::vector<std::string> patterns;
  std::vector<unsigned> flags;
  std::vector<unsigned> hs_ids;
  std::vector<const EventPattern*> sources;
  std::vector<const Rule*> owners;

  for (std::uint32_t r = 0; r < rules.rules.size(); ++r) {
    const Rule& rule = rules.rules[r];
    for (std::uint32_t e = 0; e < rule.events.size(); ++e) {
      const EventPattern& ev = rule.events[e];
      unsigned id = static_cast<unsigned>(patterns.size());
      patterns.push_back(ev.regex);
      flags.push_back(HS_FLAG_MULTILINE | (ev.caseless ? HS_FLAG_CASELESS : 0u));
      hs_ids.push_back(id);
      sources.push_back(&ev);
      owners.push_back(&rule);
      impl->ids.push_back({r, e});

      std::uint8_t mask = 0xff;
      if (!ev.levels.empty()) {
        mask = 0;
        for (Level l : ev.levels) mask |= static_cast<std::uint8_t>(1u << static_cast<unsigned>(l));
      }
      impl->level_mask.push_back(mask);

      impl->regex.push_back(ev.regex);
      impl->caseless.push_back(ev.caseless ? 1 : 0);
      impl->confirm.push_back(may_capture(ev.regex)         ? Confirm::re2
                              : may_cross_newline(ev.regex) ? Confirm::alone
                                                            : Confirm::none);
    }
  }
  impl->lazy = std::make_unique<LazyRegex[]>(impl->ids.size());
  result.info.patterns = patterns.size();
  if (patterns.empty()) {
    result.diagnostics.push_back({Diagnostic::Kind::error, Position{}, "no rules to compile"});
    return result;
  }
  // The story anchors follow the rules' expressions: an expression id at or past ids.size() is an anchor.
  for (std::size_t k = 0; options.story_anchors && k < kAnchorPatterns.size(); ++k) {
    hs_ids.push_back(static_cast<unsigned>(patterns.size()));
    patterns.push_back(anchor_expression(k));
    flags.push_back(HS_FLAG_MULTILINE);
  }

  // Cache key: the database format, the library version, the CPU it is compiled for (features and tuning: a database
  // built for AVX-512 must not load on a CPU without it), and every pattern with its flags.
  hs_platform_info_t platform;
  hs_populate_platform(&platform);
  if (engine().avoids_avx512)
    platform.cpu_features &= ~static_cast<unsigned long long>(HS_CPU_FEATURES_AVX512 | HS_CPU_FEATURES_AVX512VBMI);
  std::uint64_t key = mix_part(kFnv1a64Offset, kDatabaseFormat);
  key = mix_part(key, hs_version());
  key = mix_part(key, std::to_string(platform.cpu_features) + "/" + std::to_string(platform.tune));
  for (std::size_t i = 0; i < patterns.size(); ++i) key = mix_part(mix_part(key, patterns[i]), std::to_string(flags[i]));
  fs::path cache_file;
  if (!options.cache_dir.empty())
    cache_file = fs::path(options.cache_dir) / std::string("rules-").append(hex16(key)).append(".hsdb");

  hs_database_t* raw_db = nullptr;
  if (!cache_file.empty()) {
    // Mapped, not read (a cache file is only ever replaced by a rename): no copy of it in fresh memory before
    // Hyperscan's own.
    if (auto bytes = map_file(cache_file.string())) {  // absent or unreadable: compile
      if (hs_deserialize_database(bytes->bytes().data(), bytes->bytes().size(), &raw_db) == HS_SUCCESS) {
        result.info.from_cache = true;
      } else {
        raw_db = nullptr;
        spdlog::warn("ignoring unusable compiled-rules cache {}", cache_file.string());
      }
    }
  }

  if (!raw_db) {
    // Every pattern RE2 rejects is reported, as are those Hyperscan rejects (one run shows every problem). Each is
    // built here and dropped: a scan builds again only those of the lines that hit, as after a load from the cache
    // (kept, the catalog's RE2s held ~2.5 MiB of a daemon's heap for as long as it ran).
    for (std::size_t i = 0; i < impl->ids.size(); ++i) {
      const RE2 re(impl->regex[i], CompiledRules::Impl::options_for(impl->caseless[i] != 0));
      if (!re.ok()) {
        result.diagnostics.push_back({Diagnostic::Kind::error, sources[i]->pos,
                                      "rule '" + owners[i]->id + "', event '" + sources[i]->name +
                                          "': RE2 rejects the pattern: " + excerpt(re.error())});
      }
    }
    std::vector<const char*> exprs;
    exprs.reserve(patterns.size());
    for (const auto& p : patterns) exprs.push_back(p.c_str());
    hs_compile_error_t* raw_err = nullptr;
    hs_error_t rc = hs_compile_multi(exprs.data(), flags.data(), hs_ids.data(), static_cast<unsigned>(exprs.size()),
                                     HS_MODE_BLOCK, &platform, &raw_db, &raw_err);
    CompileErrorPtr err(raw_err);
    if (rc != HS_SUCCESS) {
      // Report every bad pattern, not just the first: compile each one alone.
      bool found = false;
      for (std::size_t i = 0; i < patterns.size(); ++i) {
        hs_database_t* single = nullptr;
        hs_compile_error_t* single_err = nullptr;
        if (hs_compile(patterns[i].c_str(), flags[i], HS_MODE_BLOCK, &platform, &single, &single_err) != HS_SUCCESS) {
          CompileErrorPtr guard(single_err);
          found = true;
          assert(i < sources.size() && "a story anchor does not compile");
          result.diagnostics.push_back(
              {Diagnostic::Kind::error, sources[i]->pos,
               "rule '" + owners[i]->id + "', event '" + sources[i]->name + "': Hyperscan cannot compile pattern '" +
                   excerpt(patterns[i]) + "': " +
                   excerpt(single_err && single_err->message ? single_err->message : "unknown error")});
        }
        hs_free_database(single);
      }
      if (!found) {
        result.diagnostics.push_back({Diagnostic::Kind::error, Position{},
                                      std::string("Hyperscan cannot compile the rule set: ") +
                                          (err && err->message ? err->message : "unknown error")});
      }
      return result;
    }
    const bool re2_ok = result.diagnostics.empty();
    if (!cache_file.empty() && re2_ok) {  // a cached database says RE2 accepts its patterns too
      char* bytes = nullptr;
      std::size_t length = 0;
      if (hs_serialize_database(raw_db, &bytes, &length) == HS_SUCCESS) {
        std::unique_ptr<char, SerializedDeleter> guard(bytes);
        std::error_code ec;
        fs::create_directories(cache_file.parent_path(), ec);
        auto written = write_file_atomic(cache_file.string(), std::string_view(bytes, length));
        if (!written) spdlog::warn("cannot write compiled-rules cache: {}", written.error().message);
      }
    }
  }
  impl->db.reset(raw_db);
  std::size_t size = 0;
  hs_database_size(raw_db, &size);
  impl->database_bytes = size;

  bool re2_failed = std::any_of(result.diagnostics.begin(), result.diagnostics.end(),
                                [](const Diagnostic& d) { return d.kind == Diagnostic::Kind::error; });
  if (re2_failed) return result;

  result.info.database_bytes = size;
  result.info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.rules = std::shared_ptr<const CompiledRules>(new CompiledRules(std::move(rules), std::move(impl)));
  return result;
}

struct Scanner::Impl {
  std::shared_ptr<const CompiledRules> rules;
  ScratchPtr scratch;
  ScanStats stats;
  // Reused per scan: (record, expression) candidates.
  struct Candidate {
    std::uint32_t record;
    std::uint32_t expr;
    std::uint32_t end;  // where in the record's text the match ended (exclusive); the first of a pair is the least
    bool operator<(const Candidate& o) const {
      return record != o.record ? record < o.record : expr != o.expr ? expr < o.expr : end < o.end;
    }
    bool same(const Candidate& o) const { return record == o.record && expr == o.expr; }
  };
  std::vector<Candidate> candidates;
  // Per expression confirmed by RE2: the last text it was asked about and what it answered. A line's match lies
  // within the expression's max width before the first end Hyperscan saw, so RE2 is asked about the text from there
  // on (the byte before it read as context), and the same text (a warning printed again under another prefix) is
  // answered from here without asking.
  struct Recent {
    std::uint32_t asked = 0;  // times RE2 was asked about the expression (up to kAskedBeforeSearch)
    std::uint64_t leftmost_steps = 0;  // program size times bytes asked about in Form::leftmost
    bool valid = false;
    bool matched = false;
    char before = 0;  // the byte before the text; '\n' (which no line holds) where it began at the line's start
    std::string text;
    Fields captures;
  };
  std::vector<Recent> recent;
  static constexpr std::size_t kRecentText = 1024;  // a longer text is asked about each time, not kept
  static constexpr std::uint32_t kAskedBeforeWidth = 16;  // before that, RE2 is asked about the whole line
  // RE2 is asked in Form::leftmost (see Form) until it has been asked this often about an expression, or the program
  // size times the bytes asked about (a bound on the backtracker's steps) reaches kLeftmostSteps: at ~0.2 ms for the
  // DFAs against ~0.5 us more per question, they pay for themselves after a few hundred questions, sooner where
  // questions are long or the program large.
  static constexpr std::uint32_t kAskedBeforeSearch = 256;
  static constexpr std::uint64_t kLeftmostSteps = std::uint64_t{1} << 22;
  std::vector<re2::StringPiece> groups;
  const RecordBatch* batch = nullptr;
  std::size_t span_offset = 0;  // batch offset of the span being scanned
  std::size_t last_record = 0;
  LevelFiltered level_filtered;  // --explain only
  // The expressions Hyperscan matches in one record's text alone (Confirm::alone), for the record last asked about.
  std::uint32_t alone_record = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> alone_exprs;

  static int on_alone_match(unsigned int id, unsigned long long /*from*/, unsigned long long /*to*/,
                            unsigned int /*flags*/, void* ctx) {
    static_cast<std::vector<std::uint32_t>*>(ctx)->push_back(id);
    return 0;
  }

  // Does `expr` match in the record's text alone? The record is scanned once for all its candidates (they come in
  // record order), with the batch's scratch: the batch's own scan is over by then.
  bool matches_alone(const hs_database_t* db, const RecordBatch& b, std::uint32_t record, std::uint32_t expr) {
    if (alone_record != record) {
      alone_record = record;
      alone_exprs.clear();
      const std::string_view text = b.text(record);
      if (engine().scan(db, text.data(), static_cast<unsigned>(text.size()), 0, scratch.get(), on_alone_match,
                        &alone_exprs) != HS_SUCCESS) {
        spdlog::error("hs_scan of one record failed");
      }
    }
    return std::find(alone_exprs.begin(), alone_exprs.end(), expr) != alone_exprs.end();
  }

  // Does RE2 match `expr` in a record's `text`, whose first match end Hyperscan saw at `first_end`? Its captures go
  // into `fields`.
  bool confirm_re2(const CompiledRules::Impl& compiled, std::string_view text, std::uint32_t expr,
                   std::size_t first_end, Fields& fields) {
    // The line's first match (the one RE2 gives) starts at most max_width before any match's end: RE2 is asked
    // about the text from there on, with the text before it as context (for \b and ^).
    // (The width costs a parse of the expression, ~0.1 ms, so only an expression asked about often asks for it.)
    if (recent.size() <= expr) recent.resize(compiled.ids.size());
    Recent& r = recent[expr];
    if (r.asked < kAskedBeforeSearch) ++r.asked;
    const std::size_t width = r.asked >= kAskedBeforeWidth ? compiled.max_width_of(expr) : kUnbounded;
    const std::size_t from = width != kUnbounded && first_end > width ? first_end - width : 0;
    const std::string_view asked = text.substr(from);
    const char before = from == 0 ? '\n' : text[from - 1];
    if (r.valid && r.before == before && r.text == asked) {
      if (r.matched) fields.insert(fields.end(), r.captures.begin(), r.captures.end());
      return r.matched;
    }
    const std::size_t had = fields.size();
    const Form form =
        r.asked >= kAskedBeforeSearch || r.leftmost_steps >= kLeftmostSteps ? Form::searched : Form::leftmost;
    const bool matched = match_re2(compiled, text, from, expr, form, fields);
    if (form == Form::leftmost) {
      r.leftmost_steps += compiled.regex_for(expr, Form::leftmost).first_program_size() * asked.size();
    }
    r.valid = asked.size() <= kRecentText;
    if (r.valid) {
      r.matched = matched;
      r.before = before;
      r.text.assign(asked);
      r.captures.assign(fields.begin() + static_cast<std::ptrdiff_t>(had), fields.end());
    }
    return matched;
  }

  // RE2's first match of `expr` in `text` starting at or after `from` (the text before it is context), asked in
  // `form`, its named captures appended to `fields`; false if none.
  bool match_re2(const CompiledRules::Impl& compiled, std::string_view text, std::size_t from, std::uint32_t expr,
                 Form form, Fields& fields) {
    const FormRegex& f = compiled.regex_for(expr, form);
    const re2::StringPiece piece(text.data(), text.size());
    const RE2::Anchor anchor = form == Form::leftmost ? RE2::ANCHOR_START : RE2::UNANCHORED;
    // The relaxed copy first (see RelaxedRegex): no match there is no match of the expression either.
    const std::vector<std::pair<int, std::string>>* relaxed_wanted = nullptr;
    if (f.relaxed) {
      groups.assign(static_cast<std::size_t>(f.relaxed_count), re2::StringPiece());
      if (!f.relaxed->Match(piece, from, text.size(), anchor, groups.data(), f.relaxed_count)) return false;
      const bool within = std::all_of(f.relaxed_bounds.begin(), f.relaxed_bounds.end(), [&](const auto& b) {
        return groups[static_cast<std::size_t>(b.first)].size() <= b.second;
      });
      if (within) relaxed_wanted = &f.relaxed_groups;
    }
    // Else the expression itself. Without named captures only "does it match within the line" is asked: RE2
    // answers that with its DFA alone.
    const FormRegex& exact = relaxed_wanted != nullptr || !f.relaxed ? f : compiled.exact_for(expr, form);
    if (relaxed_wanted == nullptr && !exact.re->ok()) return false;  // rejected: reported when compiled, never a hit
    const auto& wanted = relaxed_wanted != nullptr ? *relaxed_wanted : exact.groups;
    if (relaxed_wanted == nullptr) {
      int n = wanted.empty() ? 0 : wanted.back().first + 1;
      groups.assign(static_cast<std::size_t>(n), re2::StringPiece());
      if (!exact.re->Match(piece, from, text.size(), anchor, groups.data(), n)) {
        return false;  // the Hyperscan match spanned lines
      }
    }
    for (const auto& [index, name] : wanted) {
      const auto& g = groups[static_cast<std::size_t>(index)];
      if (g.data() != nullptr) fields.emplace_back(name, std::string(g.data(), g.size()));
    }
    return true;
  }

  // Hyperscan's match callback: maps a match end back to its record and keeps it as a candidate.
  static int on_match(unsigned int id, unsigned long long /*from*/, unsigned long long to, unsigned int /*flags*/,
                      void* ctx) {
    auto* impl = static_cast<Impl*>(ctx);
    if (to == 0) return 0;
    std::size_t pos = impl->span_offset + static_cast<std::size_t>(to - 1);
    const auto& records = impl->batch->records();
    // Matches mostly arrive in ascending order: try the last record before a binary search.
    std::size_t r = impl->last_record;
    const RecordMeta& m = records[r];
    if (!(pos >= m.text_begin && pos <= static_cast<std::size_t>(m.text_begin) + m.text_size)) {
      r = impl->batch->record_at(pos);
      impl->last_record = r;
      // Ended in a blank line between two records: it belongs to no record.
      if (pos > static_cast<std::size_t>(records[r].text_begin) + records[r].text_size) return 0;
    }
    const std::size_t begin = records[r].text_begin;
    // (0 where the end is not inside the text: RE2 is then asked about the whole line.)
    const std::size_t end = pos >= begin ? std::min<std::size_t>(pos + 1 - begin, records[r].text_size) : 0;
    impl->candidates.push_back({static_cast<std::uint32_t>(r), id, static_cast<std::uint32_t>(end)});
    return 0;
  }
};

Scanner::Scanner(std::shared_ptr<const CompiledRules> rules) : impl_(std::make_unique<Impl>()) {
  impl_->rules = std::move(rules);
  hs_scratch_t* scratch = nullptr;
  if (hs_alloc_scratch(impl_->rules->impl_->db.get(), &scratch) != HS_SUCCESS) {
    throw std::runtime_error("cannot allocate Hyperscan scratch space");
  }
  impl_->scratch.reset(scratch);
}
Scanner::~Scanner() = default;
Scanner::Scanner(Scanner&&) noexcept = default;
Scanner& Scanner::operator=(Scanner&&) noexcept = default;

const CompiledRules& Scanner::rules() const { return *impl_->rules; }
const std::shared_ptr<const CompiledRules>& Scanner::shared_rules() const { return impl_->rules; }
const ScanStats& Scanner::stats() const { return impl_->stats; }
void Scanner::set_level_filtered(LevelFiltered observer) { impl_->level_filtered = std::move(observer); }

void Scanner::scan(const RecordBatch& batch, std::vector<Hit>& out) {
  std::vector<AnchorHit> ignored;
  scan(batch, out, ignored);
}

void Scanner::scan(const RecordBatch& batch, std::vector<Hit>& out, std::vector<AnchorHit>& anchors) {
  if (batch.empty()) return;
  Impl& s = *impl_;
  const auto& compiled = *s.rules->impl_;
  s.candidates.clear();
  s.batch = &batch;
  s.last_record = 0;
  s.alone_record = std::numeric_limits<std::uint32_t>::max();
  s.stats.bytes += batch.bytes();
  s.stats.records += batch.size();
  // Each span is whole records, so it starts at a line start; a match cannot begin in one span and end in another.
  for (std::size_t k = 0; k < batch.span_count(); ++k) {
    const RecordBatch::Span span = batch.span(k);
    s.span_offset = span.offset;
    hs_error_t rc = engine().scan(compiled.db.get(), span.bytes.data(), static_cast<unsigned>(span.bytes.size()),
                                  0, s.scratch.get(), Impl::on_match, &s);
    if (rc != HS_SUCCESS) spdlog::error("hs_scan failed with code {}", rc);
  }
  if (s.candidates.empty()) return;
  s.stats.candidates += s.candidates.size();
  std::sort(s.candidates.begin(), s.candidates.end());
  s.candidates.erase(std::unique(s.candidates.begin(), s.candidates.end(),
                                 [](const Impl::Candidate& a, const Impl::Candidate& b) { return a.same(b); }),
                     s.candidates.end());

  const std::size_t rule_exprs = compiled.ids.size();
  for (const auto& c : s.candidates) {
    if (c.expr >= rule_exprs) {
      const std::size_t k = c.expr - rule_exprs;
      if (!anchor_confirmed(k, batch.text(c.record), c.end)) continue;
      anchors.push_back({c.record, static_cast<StoryAnchor>(k)});
      ++s.stats.anchor_hits;
      continue;
    }
    std::uint8_t mask = compiled.level_mask[c.expr];
    if (mask != 0xff && !(mask & (1u << static_cast<unsigned>(batch.level(c.record))))) {
      if (s.level_filtered) {
        const Confirm how = compiled.confirm[c.expr];
        const RE2* re = how == Confirm::re2 ? compiled.exact_for(c.expr).re.get() : nullptr;
        const std::string_view text = batch.text(c.record);
        const re2::StringPiece piece(text.data(), text.size());
        const bool matches = how == Confirm::none ||
                             (how == Confirm::alone && s.matches_alone(compiled.db.get(), batch, c.record, c.expr)) ||
                             (re != nullptr && re->ok() && RE2::PartialMatch(piece, *re));
        if (matches) s.level_filtered(batch, c.record, compiled.ids[c.expr]);
      }
      continue;
    }
    Hit hit;
    hit.record = c.record;
    hit.event = compiled.ids[c.expr];
    if (compiled.confirm[c.expr] == Confirm::alone) {
      if (!s.matches_alone(compiled.db.get(), batch, c.record, c.expr)) continue;  // it spanned lines
    } else if (compiled.confirm[c.expr] == Confirm::re2) {
      if (!s.confirm_re2(compiled, batch.text(c.record), c.expr, c.end, hit.fields)) continue;  // spanned lines
    }
    const EventPattern& ev = s.rules->event(hit.event);
    for (const auto& [k, v] : ev.set) set_field(hit.fields, k, v);
    apply_field_transforms(ev.normalise, hit.fields);
    ++s.stats.hits;
    out.push_back(std::move(hit));
  }
}

}  // namespace faultline
