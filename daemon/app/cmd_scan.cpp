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
  std::string node_name;  // empty: each input is a node of its own
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
  cli.option("--node-name", "NAME", f.node_name,
             "every input is a log of node NAME, as `run --node-name NAME` sees the files of one host (the kernel "
             "log's GPU faults may then explain the other files' incidents); default: each input is a node of its "
             "own");
  cli.positionals("FILE|-", f.inputs);
  cli.footer("Exit status: 0 no incident, 1 incidents found, 2 usage or rule error.");
  return cli;
}

// Lines before a file's first timestamp take that time (a log often starts with lines that print none: warnings, a
// banner), looked for this far ahead; a file that prints none so early is read at its read time (mtime or --now).
constexpr std::size_t kLookAheadLines = 1000;
constexpr std::size_t kLookAheadBytes = std::size_t{1} << 20;

bool enough_to_look_at(std::string_view head) {
  if (head.size() >= kLookAheadBytes) return true;
  std::size_t lines = 0;
  for (std::size_t p = head.find('\n'); p != std::string_view::npos; p = head.find('\n', p + 1)) {
    if (++lines >= kLookAheadLines) return true;
  }
  return false;
}

// The time the first line of `head` that prints one prints (within the look-ahead), decoded as the stream will be.
std::optional<Time> first_time_in(std::string_view head, const DecodeOptions& decode, Time read_time) {
  head = head.substr(0, std::min(head.size(), kLookAheadBytes));
  Decoder decoder(0, decode);
  RecordBatch batch;
  decoder.feed(head, read_time, batch);
  decoder.flush(read_time, batch);
  for (std::size_t i = 0; i < batch.size() && i < kLookAheadLines; ++i) {
    if (batch[i].time_from_log) return batch[i].time;
  }
  return std::nullopt;
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
    StreamIdentity identity = input_identity(input);
    if (!f.node_name.empty()) identity.set_label(LabelKey::node, f.node_name);
    const std::uint32_t stream = replay.add_stream(std::move(identity), stream_decode);
    // What is fed is read at the time of the file's first timestamp, so the lines before it take that time.
    std::string head;  // the first pieces, copied while they are too short to look ahead in
    bool started = false;
    auto begin = [&](std::string_view look) {
      replay.start(first_time_in(look, stream_decode, read_time).value_or(read_time));
      started = true;
    };
    std::string_view piece;
    while (in.next(piece)) {
      if (started) {
        replay.feed(stream, piece);
      } else if (head.empty() && enough_to_look_at(piece)) {
        begin(piece);
        replay.feed(stream, piece);
      } else {
        head.append(piece);
        if (enough_to_look_at(head)) {
          begin(head);
          replay.feed(stream, head);
          std::string().swap(head);
        }
      }
    }
    if (!started) {
      begin(head);
      replay.feed(stream, head);
    }
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
