// `faultline scan`: files or standard input replayed once through the pipeline, the incidents found printed.
#include <malloc.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <chrono>
#include <optional>
#include <string>
#include <iostream>

#include "cli.hpp"
#include "commands.hpp"
#include "input.hpp"
#include "faultline/catalog.hpp"
#include "faultline/clock.hpp"
#include "faultline/decode.hpp"
#include "faultline/replay.hpp"

namespace faultline::app {

namespace {

// Cores this process may run on.
unsigned default_jobs() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::optional<unsigned> parse_jobs(std::string_view text) {
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1 || v > 1024) return std::nullopt;
  return v;
}

// The per-user cache of compiled rule databases: $XDG_CACHE_HOME/faultline, else ~/.cache/faultline; none when
// neither is known. A directory that cannot be created or written costs a warning and a compile, never the scan.
std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/faultline";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    return std::string(home) + "/.cache/faultline";
  }
  return {};
}

// Regular files mapped at once: bounds the open mappings of a scan of many files.
constexpr std::size_t kFilesPerGroup = 64;
// Mapped pages read in place are given back as the scan moves on, in files larger than this.
constexpr std::size_t kReleaseAbove = std::size_t{1} << 20;

struct ScanFlags {
  std::vector<std::string> rules;
  std::vector<std::string> inputs;
  bool json = false;
  bool explain = false;
  std::optional<Time> now;
  std::optional<ContainerFormat> format;
  std::optional<std::chrono::seconds> utc_offset;
  std::string cache;
  cli::ColourMode colour = cli::ColourMode::automatic;
  std::optional<Time> since, until;
  bool no_cache = false;
  bool no_fingerprints = false;
  unsigned jobs = default_jobs();
  std::string node_name;  // empty: each input is a node of its own
};

cli::Parser scan_parser(ScanFlags& f) {
  cli::Parser cli("scan", "Scans log files (or standard input: '-' or no FILE) once against the rules and prints the "
                          "incidents found.");
  cli.option("--rules", "PATH", f.rules, "rule file or directory (repeatable; default: the shipped catalog)");
  cli.flag("--json", f.json, "one JSON object per incident revision (the schema of docs/incident-schema.md)");
  cli.flag("--explain", f.explain,
           "show, line by line, which events hit, which matching lines a level filter or a rule's tolerance kept from "
           "counting, and how each rule's state moved (reads on one thread)");
  cli.option("--now", "TIME", f.now, parse_rfc3339, "an RFC 3339 time",
             "reference time (RFC 3339) for times printed without a year, and the time of a file that prints "
             "none in its first 1000 lines (default: the file's mtime)");
  cli.option("--format", "F", f.format, parse_container_format, "auto, raw, cri or docker",
             "container format of every input: auto, raw, cri, docker (default: detected per input)");
  cli.option("--utc-offset", "Z", f.utc_offset, parse_utc_offset, "+HH:MM",
             "zone of times printed without one (default +00:00)");
  cli.option("--cache", "DIR", f.cache,
             "keep the compiled rule database and the parsed rule files in DIR (default: $XDG_CACHE_HOME/faultline, "
             "else ~/.cache/faultline)");
  cli.flag("--no-cache", f.no_cache, "compile the rules every time; read and write no cache");
  cli.flag("--no-fingerprints", f.no_fingerprints,
           "typed incidents only: no story anchors in the database and no unclassified-failure incidents (as "
           "`fingerprints: {enabled: false}` in run's config; docs/fingerprints.md)");
  cli.option("--jobs", "N", f.jobs, parse_jobs, "a number from 1 to 1024",
             "decode and match on N threads (default: every core this process may use); the incidents are the "
             "same for any N");
  cli.alias("-j");
  cli.option("--since", "TIME", f.since, parse_rfc3339, "an RFC 3339 time",
             "only incidents whose lines reach TIME or later (event time, RFC 3339)");
  cli.option("--until", "TIME", f.until, parse_rfc3339, "an RFC 3339 time",
             "only incidents that began before TIME (event time, RFC 3339)");
  cli.option("--color", "WHEN", f.colour, cli::parse_colour_mode, "auto, always or never",
             "auto (a terminal, unless NO_COLOR is set) | always | never");
  cli.option("--node-name", "NAME", f.node_name,
             "every input is a log of node NAME, as `run --node-name NAME` sees the files of one host (the kernel "
             "log's GPU faults may then explain the other files' incidents); default: each input is a node of its "
             "own");
  cli.positionals("FILE|-", f.inputs);
  cli.footer("Inputs may be gzip- or zstd-compressed (told by their first bytes). With --json, standard output holds "
             "only JSON lines; --explain and the summary go to standard error. Exit status: 0 no incident, 1 "
             "incidents found, 2 usage or rule error, or an input that cannot be read.");
  return cli;
}

void print_summary(const Replay& replay, const CompiledRules& compiled, double seconds) {
  const auto& incidents = replay.incidents();
  std::size_t firing = 0;
  for (const auto& inc : incidents) firing += inc.caused_by ? 0 : 1;
  const auto& st = replay.stats();
  std::cerr << "faultline: " << incidents.size() << " incident(s)";
  if (incidents.size() != firing) std::cerr << " (" << incidents.size() - firing << " explained by a root cause)";
  std::cerr << " in " << st.lines << " lines, " << st.bytes << " bytes, " << compiled.rule_set().rules.size()
            << " rules, " << static_cast<long>(seconds * 1000) << " ms";
  if (st.truncated) std::cerr << ", " << st.truncated << " line(s) truncated";
  std::cerr << "\n";
}

bool has_line_end_early(std::string_view bytes) {
  constexpr std::size_t kLook = std::size_t{1} << 20;
  return bytes.empty() || std::memchr(bytes.data(), '\n', std::min(bytes.size(), kLook)) != nullptr;
}

// The stream an input is read as; with --node-name, a log of that node (as `run --node-name` labels a host's files).
StreamIdentity scan_identity(const std::string& input, const std::string& node_name) {
  StreamIdentity identity = input_identity(input);
  if (!node_name.empty()) identity.set_label(LabelKey::node, node_name);
  return identity;
}

// A pipe, a terminal or standard input, read piece by piece. False (and the reason on stderr) when it cannot be read.
bool scan_stream(Replay& replay, const std::string& input, const std::string& node_name, const DecodeOptions& decode,
                 const std::optional<Time>& now, bool progress) {
  ScanInput in(input);
  ScanProgress shown(input == "-" ? "stdin" : input, progress);
  if (!in.ok()) {
    std::cerr << "faultline scan: cannot open " << input << ": " << in.error() << "\n";
    return false;
  }
  const Time read_time = input_read_time(input, now);
  DecodeOptions stream_decode = decode;
  stream_decode.time.reference = read_time;  // times printed without a year
  const std::uint32_t stream = replay.add_stream(scan_identity(input, node_name), stream_decode);
  // What is fed is read at the time of the file's first timestamp, so the lines before it take that time.
  feed_input(replay, stream, in, stream_decode, read_time, &shown);
  shown.done();
  if (!in.ok()) {
    std::cerr << "faultline scan: cannot read " << input << ": " << in.error() << "\n";
    return false;
  }
  replay.close_stream(stream);
  return true;
}

// Grows the heap now by `reserve` and asks the kernel to back it with 2 MiB pages where it can: a scan's batches,
// records, hits and RE2's programs then fault in a few huge pages instead of hundreds of small ones (a page fault
// costs ~11 us on the 2-core VM the suite runs on; B 1M lines: 1,200 faults before, ~600 after, max RSS +2 MiB).
// glibc grows the heap by M_TOP_PAD beyond each request and keeps that much when it trims, so the range stays one
// mapping with the advice on it. Where the heap cannot grow (or malloc is not glibc's), nothing changes.
void reserve_heap_on_huge_pages(std::size_t reserve) {
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  ::mallopt(M_TOP_PAD, static_cast<int>(reserve));
  // A block larger than the heap's free top makes malloc grow the heap, by the pad more.
  void* block = std::malloc(::mallinfo2().keepcost + 4096);
  if (block == nullptr) return;
  const auto end = reinterpret_cast<std::uintptr_t>(::sbrk(0));
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const std::uintptr_t from = (reinterpret_cast<std::uintptr_t>(block) + kHuge - 1) & ~(kHuge - 1);
  std::free(block);
  if (from < end) ::madvise(reinterpret_cast<void*>(from), end - from, MADV_HUGEPAGE);
#else
  (void)reserve;
#endif
}

}  // namespace

int cmd_scan(const Args& args) {
  ScanFlags f;
  if (auto status = scan_parser(f).handle(args, std::cout, std::cerr)) return *status;
  if (f.inputs.empty()) f.inputs.push_back("-");
  // What a batch frees stays with the process for the next one: a scan allocates the same sizes batch after batch,
  // and handing them back to the kernel (glibc's default) had every batch fault fresh zeroed pages in again
  // (measured: a third of the page faults and 10 % of the CPU time of a 100k-line scan).
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
  reserve_heap_on_huge_pages(std::size_t{32} << 20);
  // The database is loaded once: on huge pages it faults in a few pages instead of hundreds.
  place_databases_on_huge_pages();
  DecodeOptions decode;
  if (f.format) decode.format = *f.format;
  if (f.utc_offset) decode.time.utc_offset = *f.utc_offset;

  // The time in the summary is the whole scan's, loading and compiling the rules included.
  const auto began = std::chrono::steady_clock::now();
  if (f.no_cache) f.cache.clear();
  else if (f.cache.empty()) f.cache = default_cache_dir();
  // Patterns of the rules that load are compiled too, so one run reports every problem. The rules' tests are not read.
  CatalogPolicy policy{OnLoadError::compile_the_rest};
  policy.tests = false;
  policy.story_anchors = !f.no_fingerprints;
  policy.content_hash = false;  // a scan keeps no checkpoint and reloads no rules
  Catalog catalog = load_and_compile(f.rules, {}, f.cache, policy);
  for (const auto& d : catalog.diagnostics) std::cerr << d.str() << "\n";
  if (!catalog.compiled) return 2;

  ReplayOptions options;
  options.pipeline.fingerprint.enabled = !f.no_fingerprints;
  auto in_window = [&f](const Incident& inc) {
    return (!f.since || inc.last_seen >= *f.since) && (!f.until || inc.first_seen < *f.until);
  };
  if (f.json)
    options.on_incident = [&in_window](const Incident& inc) {
      if (in_window(inc)) std::cout << to_json(inc) << "\n";
    };
  Replay replay(catalog.compiled, std::move(options));
  // With --json, standard output is JSON lines only.
  std::ostream& explain_out = f.json ? std::cerr : std::cout;
  if (f.explain)
    replay.pipeline().set_trace([&explain_out](const std::string& line) { explain_out << "explain: " << line << "\n"; });

  const bool progress = ::isatty(STDERR_FILENO) != 0;
  // Regular files are mapped whole and taken in groups: their parts are decoded and matched on `-j` threads and
  // correlated in input order, so the incidents are those of -j 1. Pipes and terminals are read piece by piece.
  std::vector<std::unique_ptr<MappedFile>> mapped;
  std::vector<std::unique_ptr<ScanProgress>> mapped_progress;  // one per mapped file, drawn as its parts are done
  std::vector<WholeInput> group;
  const auto scan_group = [&] {
    replay.feed_whole(group, f.jobs);
    // Each file is read to its end: what the pipeline holds for it goes (2,000 files of 1,500 lines: max RSS 51 MB
    // when they were kept to the end of the scan).
    for (const auto& in : group) replay.close_stream(in.stream);
    group.clear();
    mapped_progress.clear();
    mapped.clear();
  };
  for (const auto& input : f.inputs) {
    // --explain traces every line on the pipeline's own scanner, in order: its files are read as streams.
    std::unique_ptr<MappedFile> file;
    if (!f.explain) file = std::make_unique<MappedFile>(input);
    // A file with no line end in its first MiB (one endless line, a sparse or binary file) has nothing to split
    // among threads: it is read as a stream, in windows, so it never becomes resident whole.
    if (file && file->ok() && !has_line_end_early(file->bytes())) file = nullptr;
    if (file && !file->ok() && !file->not_regular()) {
      scan_group();
      std::cerr << "faultline scan: cannot open " << input << ": " << file->error() << "\n";
      return 2;
    }
    if (file && file->ok()) {
      // One clock per file: each stream's clock runs on its own lines, so the order of the files does not matter.
      const Time read_time = f.now ? *f.now : file->modified();
      DecodeOptions stream_decode = decode;
      stream_decode.time.reference = read_time;  // times printed without a year
      const std::uint32_t stream = replay.add_stream(scan_identity(input, f.node_name), stream_decode);
      // What is fed is read at the time of the file's first timestamp, so the lines before it take that time.
      const Time first = first_time_in(file->bytes(), stream_decode, read_time).value_or(read_time);
      MappedFile* whole = file.get();
      mapped_progress.push_back(std::make_unique<ScanProgress>(input, progress));
      ScanProgress* shown = mapped_progress.back().get();
      group.push_back(WholeInput{stream, file->bytes(), first,
                                 [whole, shown, &replay](std::size_t from, std::size_t to, bool read_in_place) {
                                   // A small file's pages go with its group's mappings (kFilesPerGroup files) soon
                                   // enough: an madvise for each one costs every thread a TLB shootdown.
                                   if (read_in_place && whole->bytes().size() > kReleaseAbove) whole->release(from, to);
                                   shown->update(to, whole->bytes().size(), replay.stats().lines);
                                 },
                                 [whole](std::size_t offset, char* out, std::size_t size) {
                                   return whole->copy(offset, out, size);
                                 }});
      mapped.push_back(std::move(file));
      if (group.size() >= kFilesPerGroup) scan_group();
      continue;
    }
    scan_group();
    if (!scan_stream(replay, input, f.node_name, decode, f.now, progress)) return 2;
  }
  scan_group();
  replay.finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();

  std::size_t shown = 0;
  const bool colour = cli::colour_enabled(f.colour, STDOUT_FILENO);
  for (const auto& inc : replay.incidents()) {
    if (!in_window(inc)) continue;
    ++shown;
    if (!f.json) std::cout << to_text(inc, colour) << "\n";
  }
  print_summary(replay, *catalog.compiled, seconds);
  if (f.since || f.until) std::cerr << "faultline: " << shown << " incident(s) in the --since/--until window\n";
  return shown == 0 ? 0 : 1;
}

}  // namespace faultline::app
