// `faultline rules draft --from <incident id | fingerprint | FILE:LINE>`: a rule YAML skeleton from one failure
// story — its terminal line escaped as the decisive pattern, what the fingerprint's template varied on generalised as
// regex classes (the first few as captures), reset and lifetime defaults, and a test built from the story's lines —
// that passes `faultline check` and `faultline test` unchanged. Comments say what the author must still decide. The
// pattern itself is made in rule_draft_pattern.cpp.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "rule_draft_pattern.hpp"
#include "commands.hpp"
#include "input.hpp"
#include "faultline/catalog.hpp"
#include "faultline/fingerprint.hpp"
#include "faultline/replay.hpp"

namespace faultline::app {

// Named, not anonymous: the unity build puts the app's files together.
namespace rule_draft {

// The story a draft is made from, wherever it came from.
struct Source {
  std::string described;            // "app.log:120", "incident 3f..", "fingerprint 3f.."
  std::vector<EvidenceLine> lines;  // the story, ending at (or holding) its terminal line
  std::size_t terminal = 0;         // index in `lines` of the decisive line
  std::string fingerprint;
  Severity severity = Severity::critical;
};

struct Flags {
  std::string from;
  std::string state_dir;
  std::string output;
  std::vector<std::string> rules;
  std::vector<std::string> inputs;
  std::optional<Time> now;
};

bool all_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// "path/app.log:120" → (path, 120) when the path names a file.
std::optional<std::pair<std::string, std::uint64_t>> file_line(const std::string& from) {
  auto colon = from.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= from.size()) return std::nullopt;
  std::string_view digits = std::string_view(from).substr(colon + 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  std::string path = from.substr(0, colon);
  if (!std::ifstream(path)) return std::nullopt;
  return std::make_pair(path, std::stoull(std::string(digits)));
}

// Every story of the inputs, replayed as `scan` replays them (the same catalog, the same clocks).
Result<std::vector<ClosedStory>> stories_of(const std::vector<std::string>& inputs, const Flags& f) {
  Catalog catalog = load_and_compile(f.rules, {}, "", CatalogPolicy{OnLoadError::compile_the_rest});
  for (const auto& d : catalog.diagnostics) std::cerr << d.str() << "\n";
  if (!catalog.compiled) return Error{"the rules do not compile"};
  std::vector<ClosedStory> stories;
  ReplayOptions options;
  options.pipeline.fingerprint.on_story = [&stories](const ClosedStory& s) { stories.push_back(s); };
  Replay replay(catalog.compiled, std::move(options));
  for (const auto& input : inputs) {
    ScanInput in(input);
    if (!in.ok()) return Error{"cannot open " + input + ": " + in.error()};
    const Time read_time = input_read_time(input, f.now);
    DecodeOptions decode;
    decode.time.reference = read_time;
    const std::uint32_t stream = replay.add_stream(input_identity(input), decode);
    if (!feed_input(replay, stream, in, decode, read_time)) return Error{"cannot read " + input + ": " + in.error()};
    replay.end_stream(stream);
  }
  replay.finish();
  return stories;
}

std::size_t terminal_of(const std::vector<EvidenceLine>& lines) {
  for (std::size_t k = 0; k < lines.size(); ++k) {
    if (lines[k].event == "terminal") return k;
  }
  return lines.empty() ? 0 : lines.size() - 1;
}

// FILE:LINE: the story holding that line, cut there, the line itself decisive. A line outside any story (a plain
// ERROR line no anchor knows) is drafted with the lines just before it as its context.
Result<Source> from_file_line(const std::string& path, std::uint64_t line, const Flags& f) {
  auto stories = stories_of({path}, f);
  if (!stories) return stories.error();
  Source src;
  src.described = path + ":" + std::to_string(line);
  for (const auto& s : *stories) {
    if (s.lines.empty() || s.lines.front().line > line || s.lines.back().line < line) continue;
    for (const auto& l : s.lines) {
      if (l.line > line) break;
      src.lines.push_back(l);
    }
    if (src.lines.empty() || src.lines.back().line != line) {
      src.lines.clear();
      continue;  // the line lingered between the story's lines without being one of them
    }
    src.terminal = src.lines.size() - 1;
    src.fingerprint = s.signature.fingerprint;
    src.severity = s.severity;
    return src;
  }
  // No story: the line and a few before it, as decode reads them.
  ScanInput in(path);
  std::string bytes;
  std::string_view piece;
  while (in.next(piece)) bytes.append(piece);
  if (!in.ok()) return Error{"cannot read " + path + ": " + in.error()};
  const Time read_time = input_read_time(path, f.now);
  DecodeOptions decode;
  decode.time.reference = read_time;
  Decoder decoder(0, decode);
  RecordBatch batch;
  decoder.feed(bytes, read_time, batch);
  decoder.flush(read_time, batch);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].line + 8 < line || batch[i].line > line) continue;
    src.lines.push_back(EvidenceLine{path, batch[i].line, batch[i].offset, batch[i].time,
                                     batch[i].line == line ? "terminal" : "", std::string(batch.text(i)), false});
  }
  if (src.lines.empty() || src.lines.back().line != line)
    return Error{path + " has no line " + std::to_string(line)};
  src.terminal = src.lines.size() - 1;
  std::vector<std::string_view> texts;
  for (const auto& l : src.lines) texts.push_back(l.text);
  src.fingerprint = signature_of(texts).fingerprint;
  return src;
}

// A fingerprint: the first story of the inputs with it.
Result<Source> from_fingerprint(const std::string& fingerprint, const Flags& f) {
  auto stories = stories_of(f.inputs, f);
  if (!stories) return stories.error();
  for (const auto& s : *stories) {
    if (s.signature.fingerprint != fingerprint) continue;
    Source src;
    src.described = "fingerprint " + fingerprint;
    src.lines = s.lines;
    src.terminal = terminal_of(src.lines);
    src.lines.resize(src.terminal + 1);
    src.fingerprint = fingerprint;
    src.severity = s.severity;
    return src;
  }
  return Error{"no story with fingerprint " + fingerprint + " in the files given"};
}

// An incident id: its latest revision in the state dir's incident store (what GET /api/v1/incidents/<id> serves).
Result<std::optional<Source>> from_incident(const std::string& id, const Flags& f) {
  const std::string path = f.state_dir + "/incidents.jsonl";
  std::ifstream in(path);
  if (!in) return Error{"cannot read " + path + " (the incident store of the state dir)"};
  std::optional<Incident> found;
  std::string text;
  while (std::getline(in, text)) {
    if (text.find(id) == std::string::npos) continue;
    auto inc = incident_from_json(text);
    if (inc && inc->id == id && (!found || inc->revision >= found->revision)) found = std::move(*inc);
  }
  if (!found) return std::optional<Source>{};
  if (found->rule != kUnclassifiedRule)
    std::cerr << "faultline rules draft: incident " << id << " is already typed (rule " << found->rule
              << "); drafting from its last decisive line anyway\n";
  Source src;
  src.described = "incident " + id;
  src.lines = found->evidence;
  if (src.lines.empty()) return Error{"incident " + id + " holds no evidence lines"};
  src.terminal = terminal_of(src.lines);
  if (found->rule != kUnclassifiedRule) {
    for (std::size_t k = src.lines.size(); k-- > 0;) {
      if (!src.lines[k].event.empty()) {
        src.terminal = k;
        break;
      }
    }
  }
  src.lines.resize(src.terminal + 1);
  src.fingerprint = found->fingerprint.empty() ? found->id : found->fingerprint;
  src.severity = found->severity;
  return std::optional<Source>(std::move(src));
}

// ---- the YAML ----

// A YAML single-quoted scalar of any line: quotes doubled, control characters and invalid UTF-8 replaced.
std::string quoted(std::string_view s) {
  std::string clean = sanitize_utf8(s);
  std::string out = "'";
  for (char c : clean) {
    if (c == '\'') out += "''";
    else if (static_cast<unsigned char>(c) < 0x20 && c != '\t') out += '?';
    else if (c == 0x7f) out += '?';
    else out += c;
  }
  return out + "'";
}

std::string kebab(std::string_view type) {
  auto dot = type.rfind('.');
  if (dot != std::string_view::npos) type = type.substr(dot + 1);
  std::string out;
  for (std::size_t i = 0; i < type.size(); ++i) {
    const char c = type[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != '-' && i > 0 && !std::isupper(static_cast<unsigned char>(type[i - 1])))
        out += '-';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (std::isalnum(static_cast<unsigned char>(c))) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "failure" : out.substr(0, 40);
}

std::string draft_yaml(const Source& src) {
  std::vector<std::string_view> texts;
  for (const auto& l : src.lines) texts.push_back(l.text);
  const FailureSignature sig = signature_of(texts);
  const EvidenceLine& decisive = src.lines[src.terminal];
  const Pattern pattern = pattern_of(decisive.text);
  std::string type = sig.type.empty() ? "failure" : sig.type;
  std::string id = "draft-" + kebab(type);
  while (id.back() == '-') id.pop_back();
  id += "-" + src.fingerprint.substr(0, 8);
  std::string what = collapse_spaces(strip_log_prefix(decisive.text));
  std::string title;
  for (char c : message_template(what)) {
    if (c != '{' && c != '}') title += c;
  }
  if (title.size() > 110) title = title.substr(0, 107) + "...";

  std::ostringstream y;
  y << "# Drafted by `faultline rules draft` from " << src.described << " (fingerprint " << src.fingerprint
    << ", " << type << ").\n"
    << "# As it is, it passes `faultline check` and `faultline test`, and the story it was drafted from becomes a\n"
    << "# typed incident instead of unclassified-failure. Still to decide (each marked DECIDE below):\n"
    << "#   - the id: stable and kebab-case (a metric label and an API key); file it as rules/<family>/<id>.yaml;\n"
    << "#   - the pattern: it is the terminal line with its varying parts generalised; widen or narrow it (read\n"
    << "#     the emitting source; anchor on its rarest literal text), and add the steps that lead to it if any;\n"
    << "#   - which captures are worth fields, and the title, summary and remediation that on-call people read;\n"
    << "#   - the severity (drafted from how the story ended) and the priority against the rules it explains or\n"
    << "#     that explain it (a device fault before it, an engine-dead cascade after it);\n"
    << "#   - the reset event (a restarted server is a new story) and how long an incident lasts without repeats.\n";
  y << "id: " << id << "  # DECIDE: a stable name for this failure\n";
  y << "title: " << quoted(type == "failure" || title.starts_with(type) ? title : type + ": " + title)
    << "  # DECIDE: one line for people; {field} placeholders allowed\n";
  y << "severity: " << to_string(src.severity)
    << "  # DECIDE: critical pages; drafted from how the story ended\n";
  y << "priority: 50  # DECIDE: among root causes, the higher explains the lower\n";
  y << "summary: >\n  " << sanitize_utf8(sig.type.empty() ? "A failure" : sig.type)
    << " ended a failure story that no other rule knew. DECIDE: what it means and what it breaks.\n";
  y << "remediation: >\n  DECIDE: what to do about it.\n";
  y << "references: []  # DECIDE: the upstream issue or the emitting source\n";
  y << "labels:\n  category: drafted  # DECIDE: component and category, as the catalog's rules have\n\n";
  y << "events:\n";
  y << "  server_start:  # DECIDE: your server's start-up line (a restart is a new story)\n";
  y << "    regex: 'vLLM API server version \\d|Initializing an? (?:V1 )?LLM engine|server_args=ServerArgs\\(|"
       "Starting TensorRT-LLM init'\n";
  y << "  failure:  # the story's terminal line: " << quoted(what.substr(0, 100)) << "\n";
  y << "    regex: " << quoted(pattern.regex) << "\n\n";
  y << "sequence:\n  - event: failure\n\n";
  y << "reset_on: [server_start]\n";
  y << "lifetime: {quiet: 30m}  # DECIDE: an incident ends after this long without a repeat\n";
  y << "context_lines: 12\n\n";
  y << "tests:\n";
  y << "  - name: " << quoted("the story it was drafted from (" + src.described + ")") << "\n";
  if (decisive.time != Time{}) y << "    start: " << format_time(src.lines.front().time) << "\n";
  y << "    lines:\n";
  for (const auto& l : src.lines) y << "      - " << quoted(l.text) << "\n";
  y << "    expect:\n      - severity: " << to_string(src.severity) << "\n";
  if (!pattern.fields.empty()) {
    y << "        fields: {";
    for (std::size_t k = 0; k < pattern.fields.size(); ++k)
      y << (k ? ", " : "") << pattern.fields[k].first << ": " << quoted(pattern.fields[k].second);
    y << "}\n";
  }
  y << "  # DECIDE: add the story as printed by another version or stack, and a healthy log that raises nothing:\n"
       "  # - name: healthy start-up raises nothing\n"
       "  #   file: corpus:healthy_startup__johnpfeiffer-b300-gemma4.log\n"
       "  #   expect: []\n";
  return y.str();
}

cli::Parser parser(Flags& f) {
  cli::Parser cli("rules draft",
                  "Writes a rule YAML skeleton for one failure story: its terminal line as the decisive pattern (the "
                  "parts its fingerprint's template varies on generalised, the first few as captures), reset and "
                  "lifetime defaults, and a test made of the story's lines. It passes `faultline check` and "
                  "`faultline test` as written; comments marked DECIDE say what is left to the author.");
  cli.option("--from", "WHAT", f.from,
             "FILE:LINE (the story that ends at that line of FILE), a fingerprint (16 hex digits, as "
             "`faultline fingerprints` prints it; the story is looked for in FILE...), or an incident id (read from "
             "the incident store of --state-dir)");
  cli.option("--state-dir", "DIR", f.state_dir, "the daemon's state dir, for --from <incident id>");
  cli.option("--rules", "PATH", f.rules, "rule file or directory the files are scanned with (repeatable; default: "
                                         "the shipped catalog)");
  cli.option("--output", "FILE", f.output, "write the draft to FILE (default: standard output)").alias("-o");
  cli.option("--now", "TIME", f.now, parse_rfc3339, "an RFC 3339 time",
             "reference time for times printed without a year (default: the file's mtime)");
  cli.positionals("FILE", f.inputs);
  cli.footer("Exit status: 0 a draft was written, 1 no such story, incident or line, 2 usage error.");
  return cli;
}

}  // namespace rule_draft

int cmd_rules_draft(const Args& args) {
  using namespace rule_draft;
  Flags f;
  if (auto status = parser(f).handle(args, std::cout, std::cerr)) return *status;
  if (f.from.empty()) {
    std::cerr << "faultline rules draft: --from is required (see --help)\n";
    return 2;
  }
  Result<Source> src = Error{""};
  if (auto fl = file_line(f.from)) {
    src = from_file_line(fl->first, fl->second, f);
  } else if (!f.state_dir.empty()) {
    auto inc = from_incident(f.from, f);
    if (!inc) src = inc.error();
    else if (*inc) src = std::move(**inc);
    else if (all_hex(f.from) && f.from.size() == 16 && !f.inputs.empty()) src = from_fingerprint(f.from, f);
    else src = Error{"no incident " + f.from + " in " + f.state_dir + "/incidents.jsonl"};
  } else if (all_hex(f.from) && f.from.size() == 16) {
    if (f.inputs.empty()) {
      std::cerr << "faultline rules draft: a fingerprint is looked for in the files given after the flags\n";
      return 2;
    }
    src = from_fingerprint(f.from, f);
  } else {
    std::cerr << "faultline rules draft: --from " << f.from
              << " is neither FILE:LINE of an existing file nor a fingerprint (for an incident id give --state-dir)\n";
    return 2;
  }
  if (!src) {
    std::cerr << "faultline rules draft: " << src.error().message << "\n";
    return 1;
  }
  const std::string yaml = draft_yaml(*src);
  if (f.output.empty()) {
    std::cout << yaml;
  } else {
    std::ofstream out(f.output, std::ios::binary | std::ios::trunc);
    out << yaml;
    if (!out.flush()) {
      std::cerr << "faultline rules draft: cannot write " << f.output << "\n";
      return 2;
    }
    std::cerr << "faultline: drafted " << f.output << " from " << src->described << "; check it with `faultline check "
              << f.output << "` and `faultline test " << f.output << "`\n";
  }
  return 0;
}

}  // namespace faultline::app
