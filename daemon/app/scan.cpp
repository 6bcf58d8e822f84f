// `faultline scan`: the pipeline over files or standard input, once. `check`: rules validated and compiled.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "commands.hpp"
#include "input.hpp"
#include "faultline/match.hpp"
#include "faultline/pipeline.hpp"

namespace faultline::app {

namespace {

constexpr const char* kScanUsage = R"(usage: faultline scan [--rules PATH]... [--json] [--explain] [--now TIME]
                      [--format auto|raw|cri|docker] [--utc-offset +HH:MM] [--cache DIR] [FILE|-]...

Scans log files (or standard input: '-' or no FILE) once against the rules and prints the incidents found.
  --rules PATH    rule file or directory (repeatable; default: the shipped catalog)
  --json          one JSON object per incident revision (the schema of docs/incident-schema.md)
  --explain       show, line by line, which events hit and how each rule's state moved
  --now TIME      reference time (RFC 3339) for times printed without a year (default: the file's mtime)
  --format F      container format of every input (default: detected per input)
  --utc-offset Z  zone of times printed without one (default +00:00)
  --cache DIR     keep the compiled rule database in DIR
Exit status: 0 no incident, 1 incidents found, 2 usage or rule error.
)";

void print_diagnostics(const std::vector<Diagnostic>& diags) {
  for (const auto& d : diags) std::cerr << d.str() << "\n";
}

}  // namespace

// Loads and compiles rules, printing every problem. Returns null on error.
std::shared_ptr<const CompiledRules> load_and_compile(const std::vector<std::string>& paths, const std::string& cache,
                                                      std::size_t* errors) {
  LoadResult loaded = load_rules(paths);
  print_diagnostics(loaded.diagnostics);
  std::size_t n = 0;
  for (const auto& d : loaded.diagnostics) n += d.kind == Diagnostic::Kind::error;
  if (loaded.rules.rules.empty() && n > 0) {
    if (errors) *errors = n;
    return nullptr;
  }
  // Patterns of the rules that loaded are compiled too, so one run reports every problem.
  CompileResult compiled = compile_rules(std::move(loaded.rules), CompileOptions{cache});
  print_diagnostics(compiled.diagnostics);
  for (const auto& d : compiled.diagnostics) n += d.kind == Diagnostic::Kind::error;
  if (errors) *errors = n;
  if (n > 0) return nullptr;
  return compiled.rules;
}

int cmd_scan(const Args& args) {
  std::vector<std::string> rule_paths;
  std::vector<std::string> inputs;
  bool json = false, explain = false;
  std::optional<Time> now;
  std::string cache;
  DecodeOptions decode;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* name) -> std::optional<std::string> {
      if (i + 1 >= args.size()) {
        std::cerr << "faultline scan: " << name << " needs a value\n";
        return std::nullopt;
      }
      return args[++i];
    };
    if (a == "--rules") {
      auto v = value("--rules");
      if (!v) return 2;
      rule_paths.push_back(*v);
    } else if (a == "--json") {
      json = true;
    } else if (a == "--explain") {
      explain = true;
    } else if (a == "--now") {
      auto v = value("--now");
      if (!v) return 2;
      now = parse_rfc3339(*v);
      if (!now) {
        std::cerr << "faultline scan: --now wants an RFC 3339 time, got '" << *v << "'\n";
        return 2;
      }
    } else if (a == "--format") {
      auto v = value("--format");
      if (!v) return 2;
      auto f = parse_container_format(*v);
      if (!f) {
        std::cerr << "faultline scan: unknown format '" << *v << "' (auto, raw, cri, docker)\n";
        return 2;
      }
      decode.format = *f;
    } else if (a == "--utc-offset") {
      auto v = value("--utc-offset");
      if (!v) return 2;
      auto o = parse_utc_offset(*v);
      if (!o) {
        std::cerr << "faultline scan: --utc-offset wants +HH:MM, got '" << *v << "'\n";
        return 2;
      }
      decode.time.utc_offset = *o;
    } else if (a == "--cache") {
      auto v = value("--cache");
      if (!v) return 2;
      cache = *v;
    } else if (a == "-h" || a == "--help") {
      std::cout << kScanUsage;
      return 0;
    } else if (a.size() > 1 && a[0] == '-' && a != "-") {
      std::cerr << "faultline scan: unknown option '" << a << "'\n" << kScanUsage;
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (rule_paths.empty()) rule_paths.push_back(default_rules_dir());
  if (inputs.empty()) inputs.push_back("-");

  auto compiled = load_and_compile(rule_paths, cache, nullptr);
  if (!compiled) return 2;

  std::map<std::string, Incident> latest;  // by id: the last revision
  std::vector<std::string> order;
  Pipeline pipeline(compiled, [&](const Incident& inc) {
    if (json) {
      std::cout << to_json(inc) << "\n";
    }
    if (!latest.count(inc.id)) order.push_back(inc.id);
    latest[inc.id] = inc;
  });
  if (explain) pipeline.set_trace([](const std::string& line) { std::cout << "explain: " << line << "\n"; });

  auto started = std::chrono::steady_clock::now();
  for (const auto& input : inputs) {
    bool is_stdin = input == "-";
    ScanInput in(input);
    if (!in.ok()) {
      std::cerr << "faultline scan: cannot open " << input << ": " << in.error() << "\n";
      return 2;
    }
    DecodeOptions options = decode;
    Time read_time = now.value_or(Time(std::chrono::duration_cast<Duration>(std::chrono::system_clock::now().time_since_epoch())));
    if (!now && !is_stdin) {
      struct stat st {};
      if (::stat(input.c_str(), &st) == 0) {
        read_time = Time(std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
      }
    }
    options.time.reference = read_time;
    StreamIdentity id;
    id.name = is_stdin ? "stdin" : input;
    id.logical = id.name;
    id.instance = id.name;
    id.set_label(LabelKey::source, is_stdin ? "stdin" : "file");
    std::uint32_t stream = pipeline.add_stream(id, options);
    std::string_view piece;
    while (in.next(piece)) pipeline.feed(stream, piece, read_time);
    if (!in.ok()) {
      std::cerr << "faultline scan: cannot read " << input << ": " << in.error() << "\n";
      return 2;
    }
    pipeline.flush_partial(stream, read_time);
    pipeline.drain();
  }
  pipeline.finish(pipeline.now());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  if (!json) {
    bool colour = ::isatty(STDOUT_FILENO) != 0;
    for (const auto& id : order) std::cout << to_text(latest[id], colour) << "\n";
  }
  const auto& st = pipeline.stats();
  std::size_t firing = 0;
  for (const auto& [id, inc] : latest) firing += inc.caused_by ? 0 : 1;
  std::cerr << "faultline: " << latest.size() << " incident(s)";
  if (latest.size() != firing) std::cerr << " (" << latest.size() - firing << " explained by a root cause)";
  std::cerr << " in " << st.lines << " lines, " << st.bytes << " bytes, " << compiled->rule_set().rules.size()
            << " rules, " << static_cast<long>(seconds * 1000) << " ms";
  if (st.truncated) std::cerr << ", " << st.truncated << " line(s) truncated";
  std::cerr << "\n";
  return latest.empty() ? 0 : 1;
}

int cmd_check(const Args& args) {
  std::vector<std::string> paths;
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::cout << "usage: faultline check [PATH]...\nValidates rule files and compiles their patterns; reports every "
                   "problem as file:line:column: error: ...\n";
      return 0;
    }
    paths.push_back(a);
  }
  if (paths.empty()) paths.push_back(default_rules_dir());
  std::size_t errors = 0;
  auto compiled = load_and_compile(paths, "", &errors);
  if (!compiled) {
    std::cerr << errors << " error(s)\n";
    return 1;
  }
  std::cout << "ok: " << compiled->rule_set().rules.size() << " rules, " << compiled->pattern_count() << " patterns\n";
  return 0;
}

}  // namespace faultline::app
