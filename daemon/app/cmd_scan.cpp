// `faultline scan`: files or standard input replayed once through the pipeline, the incidents found printed.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

struct ScanFlags {
  std::vector<std::string> rules;
  std::vector<std::string> inputs;
  bool json = false;
  bool explain = false;
  std::optional<Time> now;
  std::optional<ContainerFormat> format;
  std::optional<std::chrono::seconds> utc_offset;
  std::string cache;
};

cli::Parser scan_parser(ScanFlags& f) {
  cli::Parser cli("scan", "Scans log files (or standard input: '-' or no FILE) once against the rules and prints the "
                          "incidents found.");
  cli.option("--rules", "PATH", f.rules, "rule file or directory (repeatable; default: the shipped catalog)");
  cli.flag("--json", f.json, "one JSON object per incident revision (the schema of docs/incident-schema.md)");
  cli.flag("--explain", f.explain, "show, line by line, which events hit and how each rule's state moved");
  cli.option("--now", "TIME", f.now, parse_rfc3339, "an RFC 3339 time",
             "reference time (RFC 3339) for times printed without a year, and the time of a file that prints "
             "none in its first 1000 lines (default: the file's mtime)");
  cli.option("--format", "F", f.format, parse_container_format, "auto, raw, cri or docker",
             "container format of every input: auto, raw, cri, docker (default: detected per input)");
  cli.option("--utc-offset", "Z", f.utc_offset, parse_utc_offset, "+HH:MM",
             "zone of times printed without one (default +00:00)");
  cli.option("--cache", "DIR", f.cache, "keep the compiled rule database in DIR");
  cli.positionals("FILE|-", f.inputs);
  cli.footer("Exit status: 0 no incident, 1 incidents found, 2 usage or rule error.");
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

}  // namespace

int cmd_scan(const Args& args) {
  ScanFlags f;
  if (auto status = scan_parser(f).handle(args, std::cout, std::cerr)) return *status;
  if (f.inputs.empty()) f.inputs.push_back("-");
  DecodeOptions decode;
  if (f.format) decode.format = *f.format;
  if (f.utc_offset) decode.time.utc_offset = *f.utc_offset;

  // Patterns of the rules that load are compiled too, so one run reports every problem.
  Catalog catalog = load_and_compile(f.rules, {}, f.cache, CatalogPolicy{OnLoadError::compile_the_rest});
  for (const auto& d : catalog.diagnostics) std::cerr << d.str() << "\n";
  if (!catalog.compiled) return 2;

  ReplayOptions options;
  if (f.json) options.on_incident = [](const Incident& inc) { std::cout << to_json(inc) << "\n"; };
  Replay replay(catalog.compiled, std::move(options));
  if (f.explain) replay.pipeline().set_trace([](const std::string& line) { std::cout << "explain: " << line << "\n"; });

  const auto started = std::chrono::steady_clock::now();
  for (const auto& input : f.inputs) {
    ScanInput in(input);
    if (!in.ok()) {
      std::cerr << "faultline scan: cannot open " << input << ": " << in.error() << "\n";
      return 2;
    }
    // One clock per file: each stream's clock runs on its own lines, so the order of the files does not matter.
    const Time read_time = input_read_time(input, f.now);
    DecodeOptions stream_decode = decode;
    stream_decode.time.reference = read_time;  // times printed without a year
    const std::uint32_t stream = replay.add_stream(input_identity(input), stream_decode);
    // What is fed is read at the time of the file's first timestamp, so the lines before it take that time.
    feed_input(replay, stream, in, stream_decode, read_time);
    if (!in.ok()) {
      std::cerr << "faultline scan: cannot read " << input << ": " << in.error() << "\n";
      return 2;
    }
    replay.end_stream(stream);
  }
  replay.finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  if (!f.json) {
    const bool colour = ::isatty(STDOUT_FILENO) != 0;
    for (const auto& inc : replay.incidents()) std::cout << to_text(inc, colour) << "\n";
  }
  print_summary(replay, *catalog.compiled, seconds);
  return replay.incidents().empty() ? 0 : 1;
}

}  // namespace faultline::app
