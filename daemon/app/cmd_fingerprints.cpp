// `faultline fingerprints`: files or standard input replayed once, like `scan`, and the inventory of failure stories
// printed: every fingerprint with its template, count, first and last sight, streams, an example, and the rule that
// claims it (none: it is an unclassified failure).
#include <iostream>

#include "cli.hpp"
#include "commands.hpp"
#include "input.hpp"
#include "faultline/catalog.hpp"
#include "faultline/fingerprint.hpp"
#include "faultline/replay.hpp"

namespace faultline::app {

namespace {

struct FingerprintFlags {
  std::vector<std::string> rules;
  std::vector<std::string> inputs;
  bool json = false;
  std::optional<Time> now;
  std::optional<ContainerFormat> format;
  std::string cache;
};

cli::Parser fingerprints_parser(FingerprintFlags& f) {
  cli::Parser cli("fingerprints",
                  "Scans log files (or standard input: '-' or no FILE) once and lists every failure story found, "
                  "grouped by fingerprint: its template, how often and where it was seen, an example, and the rule "
                  "that claims it (none: an unclassified failure).");
  cli.option("--rules", "PATH", f.rules, "rule file or directory (repeatable; default: the shipped catalog)");
  cli.flag("--json", f.json, "one JSON object per fingerprint");
  cli.option("--now", "TIME", f.now, parse_rfc3339, "an RFC 3339 time",
             "reference time (RFC 3339) for times printed without a year (default: the file's mtime)");
  cli.option("--format", "F", f.format, parse_container_format, "auto, raw, cri or docker",
             "container format of every input: auto, raw, cri, docker (default: detected per input)");
  cli.option("--cache", "DIR", f.cache, "keep the compiled rule database in DIR");
  cli.positionals("FILE|-", f.inputs);
  cli.footer("Exit status: 0 no unclassified failure, 1 some failure no rule claims, 2 usage or rule error.");
  return cli;
}

}  // namespace

int cmd_fingerprints(const Args& args) {
  FingerprintFlags f;
  if (auto status = fingerprints_parser(f).handle(args, std::cout, std::cerr)) return *status;
  if (f.inputs.empty()) f.inputs.push_back("-");
  DecodeOptions decode;
  if (f.format) decode.format = *f.format;

  Catalog catalog = load_and_compile(f.rules, {}, f.cache, CatalogPolicy{OnLoadError::compile_the_rest});
  for (const auto& d : catalog.diagnostics) std::cerr << d.str() << "\n";
  if (!catalog.compiled) return 2;

  Replay replay(catalog.compiled, ReplayOptions{});
  for (const auto& input : f.inputs) {
    ScanInput in(input);
    if (!in.ok()) {
      std::cerr << "faultline fingerprints: cannot open " << input << ": " << in.error() << "\n";
      return 2;
    }
    // One clock per file, started at its first timestamp, as `scan` does.
    const Time read_time = input_read_time(input, f.now);
    DecodeOptions stream_decode = decode;
    stream_decode.time.reference = read_time;  // times printed without a year
    const std::uint32_t stream = replay.add_stream(input_identity(input), stream_decode);
    feed_input(replay, stream, in, stream_decode, read_time);
    if (!in.ok()) {
      std::cerr << "faultline fingerprints: cannot read " << input << ": " << in.error() << "\n";
      return 2;
    }
    replay.end_stream(stream);
  }
  replay.finish();

  const auto inventory = replay.pipeline().detector().inventory();
  std::size_t unclassified = 0;
  for (const auto& e : inventory) {
    const bool raised = e.claimed_by.empty() && !e.below_error;
    unclassified += raised ? 1 : 0;
    if (f.json) {
      std::cout << fingerprint_json(e) << "\n";
      continue;
    }
    std::cout << e.fingerprint << "  " << e.count << "x  " << sanitize_utf8(e.type);
    if (!e.message_template.empty()) std::cout << ": " << sanitize_utf8(e.message_template);
    std::cout << "\n  seen:      " << format_time(e.first_seen);
    if (e.last_seen != e.first_seen) std::cout << " .. " << format_time(e.last_seen);
    std::cout << "\n  streams:  ";
    for (const auto& s : e.streams) std::cout << " " << sanitize_utf8(s);
    std::cout << "\n  claimed:   "
              << (!e.claimed_by.empty() ? "by rule " + e.claimed_by
                  : e.below_error      ? std::string("no (printed below the error level: not raised)")
                                       : "no: unclassified-failure, " + std::string(to_string(e.severity)))
              << "\n  example:\n";
    for (std::size_t k = 0; k < e.example.size() && k < 8; ++k) {
      std::string line = e.example[k].size() > 200 ? e.example[k].substr(0, 200) + "…" : e.example[k];
      std::cout << "    " << sanitize_utf8(line) << "\n";
    }
    if (e.example.size() > 8) std::cout << "    … (" << e.example.size() - 8 << " more lines)\n";
    std::cout << "\n";
  }
  std::cerr << "faultline: " << inventory.size() << " fingerprint(s), " << unclassified
            << " unclassified (no rule claims them)\n";
  return unclassified == 0 ? 0 : 1;
}

}  // namespace faultline::app
