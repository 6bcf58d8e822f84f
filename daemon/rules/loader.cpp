// Loads rule files in stages: read YAML (syntax errors and repeated keys carry their mark), decode into the typed
// model (rule_reader.cpp: unknown keys, wrong types, bad durations), then validate within each rule (validate.cpp)
// and across the set (duplicate ids). Every problem becomes a Diagnostic; nothing escapes as an exception.
// This file also reads a rule's tests and finds the rule files.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <map>
#include <thread>

#include "faultline/durable_file.hpp"
#include "faultline/rules.hpp"
#include "parsed_cache.hpp"
#include "rule_reader.hpp"

namespace faultline {

namespace rules_detail {

namespace fs = std::filesystem;

void RuleReader::expected(const YAML::Node& node, RuleTest& test) {
  if (!node.IsMap()) {
    error(node, "each expected incident must be a mapping");
    return;
  }
  check_keys(node, {"rule", "severity", "status", "fields", "count", "min_evidence", "caused_by"}, "expected incident");
  ExpectedIncident ex;
  ex.pos = pos(node);
  if (auto r = node["rule"]) string(r, ex.rule, "rule");
  if (auto s = node["severity"]) ex.severity = severity(s, "severity");
  if (auto s = node["status"]) {
    std::string st;
    if (string(s, st, "status")) {
      if (st != "firing" && st != "resolved") error(s, "status must be firing or resolved");
      ex.status = st;
    }
  }
  if (auto f = node["fields"]) string_map(f, ex.fields, "fields");
  if (auto c = node["count"]) {
    std::uint32_t n = 0;
    if (integer(c, n, "count", 1, 1000000)) ex.count = n;
  }
  if (auto c = node["min_evidence"]) {
    std::uint32_t n = 0;
    if (integer(c, n, "min_evidence", 0, 1000)) ex.min_evidence = n;
  }
  if (auto c = node["caused_by"]) {
    if (c.IsNull()) {
      ex.caused_by = std::string();
    } else {
      std::string v;
      if (string(c, v, "caused_by")) ex.caused_by = v;
    }
  }
  test.expect.push_back(std::move(ex));
}

// A test's `file:`: "corpus:NAME" names a real log in the one store of them, tests/corpus/real/ of the nearest
// directory above the rule file that has one (the source tree, whether run from it or from a build); anything else
// is relative to the rule file. A corpus name with no store above it stays as written, so the test that reads it
// reports "test file 'corpus:NAME' cannot be read".
std::string resolve_test_file(const std::string& rule_file, const std::string& value) {
  fs::path dir = fs::path(rule_file).parent_path();
  constexpr std::string_view kCorpus = "corpus:";
  if (value.compare(0, kCorpus.size(), kCorpus) != 0) return (dir / value).string();
  std::error_code ec;
  fs::path at = dir.empty() ? fs::current_path(ec) : fs::absolute(dir, ec);
  if (ec) return value;
  for (;;) {
    fs::path store = at / "tests" / "corpus" / "real";
    if (fs::is_directory(store, ec)) return (store / value.substr(kCorpus.size())).string();
    if (!at.has_relative_path()) return value;
    at = at.parent_path();
  }
}

void RuleReader::test(const YAML::Node& node, Rule& rule) {
  if (!node.IsMap()) {
    error(node, "each test must be a mapping");
    return;
  }
  check_keys(node, {"name", "lines", "file", "format", "start", "advance", "expect"}, "test");
  RuleTest t;
  t.pos = pos(node);
  if (auto n = node["name"]) string(n, t.name, "name");
  if (t.name.empty()) t.name = "test " + std::to_string(rule.tests.size() + 1);
  if (auto l = node["lines"]) {
    if (l.IsScalar()) {
      std::string_view text = l.Scalar();
      while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        t.lines.push_back({std::string(line), Duration{0}});
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
      }
    } else if (l.IsSequence()) {
      for (const auto& item : l) {
        if (item.IsScalar()) {
          t.lines.push_back({item.Scalar(), Duration{0}});
        } else if (item.IsMap()) {
          check_keys(item, {"text", "after"}, "test line");
          TestLine tl;
          if (auto x = item["text"]) string(x, tl.text, "text");
          if (auto a = item["after"]) duration(a, tl.after, "after");
          t.lines.push_back(std::move(tl));
        } else {
          error(item, "a test line must be a string or {after, text}");
        }
      }
    } else {
      error(l, "lines must be a block of text or a list");
    }
  }
  if (auto f = node["file"]) {
    // Existence is checked when the test runs: installed catalogs and ConfigMaps carry no fixtures.
    if (string(f, t.file, "file")) t.file = resolve_test_file(file(), t.file);
  }
  if (t.lines.empty() && t.file.empty()) error(node, "a test needs 'lines' or 'file'");
  if (auto f = node["format"]) {
    if (string(f, t.format, "format") && t.format != "auto" && t.format != "raw" && t.format != "cri" &&
        t.format != "docker") {
      error(f, "format must be auto, raw, cri or docker");
    }
  }
  if (auto s = node["start"]) {
    std::string text;
    if (string(s, text, "start")) {
      if (auto tm = parse_rfc3339(text)) {
        t.start = *tm;
      } else {
        error(s, "start must be an RFC 3339 time such as 2026-11-29T10:00:00Z");
      }
    }
  }
  if (auto a = node["advance"]) duration(a, t.advance, "advance");
  if (auto e = node["expect"]) {
    if (!e.IsSequence()) {
      error(e, "expect must be a list of expected incidents ([] for none)");
    } else {
      for (const auto& item : e) expected(item, t);
    }
  } else {
    error(node, "a test needs 'expect' ([] when the rule must raise nothing)");
  }
  rule.tests.push_back(std::move(t));
}

}  // namespace rules_detail

namespace {

namespace fs = std::filesystem;
using rules_detail::FileRules;
using rules_detail::RuleReader;

void load_document(const YAML::Node& root, RuleReader& dec, RuleSet& out) {
  if (root.IsNull()) return;
  if (root.IsSequence()) {
    for (const auto& item : root) {
      if (auto r = dec.rule(item)) out.rules.push_back(std::move(*r));
    }
    return;
  }
  if (root.IsMap() && root["rules"] && !root["id"]) {
    dec.check_keys(root, {"rules"}, "rule file");
    const auto& list = root["rules"];
    if (!list.IsSequence()) {
      dec.error(list, "rules must be a list of rules");
      return;
    }
    for (const auto& item : list) {
      if (auto r = dec.rule(item)) out.rules.push_back(std::move(*r));
    }
    return;
  }
  if (auto r = dec.rule(root)) out.rules.push_back(std::move(*r));
}

// The rule file's text with the `tests:` block of its top-level mapping blanked: every line of it left empty, so that
// each position after it stays where it was. The block is the line `tests:` at the first column (nothing after it
// but a comment) and every line after it that is blank, indented, a comment or a sequence item at the first column
// (a list may sit at its key's indentation), up to the next line at the first column (the next key, or `---`).
// Anything else — `tests: []` on one line, tests of rules in a list — is left as it is, and parsed.
std::string without_tests(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_tests = false;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    const std::string_view rest = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (in_tests) {
      const char c = line.empty() ? ' ' : line[0];
      const char d = line.size() > 1 ? line[1] : ' ';
      const bool item = c == '-' && (d == ' ' || d == '\t' || d == '\r');
      in_tests = c == ' ' || c == '\t' || c == '\r' || c == '#' || item;
    }
    if (!in_tests && line.substr(0, 6) == "tests:") {
      const std::size_t after = line.find_first_not_of(" \t\r", 6);
      in_tests = after == std::string_view::npos || line[after] == '#';
    }
    if (!in_tests) out.append(line);
    if (nl != std::string_view::npos) out.push_back('\n');
    text = rest;
  }
  return out;
}

// The comment lines a file opens with, blanked (each line left empty, so every position stays where it was): yaml-cpp
// reads a comment byte by byte, and the catalog's files open with long ones. Before the first line that is neither
// blank nor a comment at the first column, no scalar can be open, so these lines are comments and nothing else.
void blank_leading_comments(std::string& text) {
  std::size_t p = 0;
  while (p < text.size()) {
    std::size_t nl = text.find('\n', p);
    if (nl == std::string::npos) nl = text.size();
    if (text[p] == '#') {
      text.erase(p, nl - p);
      nl = p;
    } else if (text.find_first_not_of(" \t\r", p) < nl) {
      break;
    }
    p = nl + 1;
  }
}

void parse_text(std::string_view text, const std::string& file, FileRules& out, bool hash) {
  RuleReader dec(file, out.diagnostics);
  dec.set_content_hash(hash);
  auto docs = dec.load_all(text);
  if (!docs) return;
  try {
    for (const auto& doc : *docs) {
      dec.enter(doc);
      dec.set_source(doc.text);
      load_document(doc.root, dec, out.rules);
    }
  } catch (const YAML::Exception& e) {  // the room boundary for yaml-cpp's own throws
    dec.error_at(dec.at(e.mark), e.msg);
    out.rules.rules.clear();
  }
}

// Adds one file's rules to the set, in order; a rule id met before is an error.
void add_rules(FileRules& loaded, LoadResult& result, std::map<std::string, Position>& ids) {
  result.diagnostics.insert(result.diagnostics.end(), std::make_move_iterator(loaded.diagnostics.begin()),
                            std::make_move_iterator(loaded.diagnostics.end()));
  for (auto& r : loaded.rules.rules) {
    auto [it, inserted] = ids.emplace(r.id, r.pos);
    if (!inserted) {
      result.diagnostics.push_back(
          {Diagnostic::Kind::error, r.pos, "duplicate rule id '" + r.id + "' (first defined at " + it->second.str() + ")"});
      continue;
    }
    result.rules.rules.push_back(std::move(r));
  }
}

void load_text(std::string_view text, const std::string& file, LoadResult& result,
               std::map<std::string, Position>& ids) {
  FileRules loaded;
  parse_text(text, file, loaded, true);
  add_rules(loaded, result, ids);
}

FileRules read_rule_file(const std::string& file, const LoadOptions& options) {
  FileRules out;
  RuleReader reader(file, out.diagnostics);
  if (auto text = reader.read_file()) {
    std::string body = options.tests ? *text : without_tests(*text);
    blank_leading_comments(body);
    parse_text(body, file, out, options.content_hash);
    out.text = std::move(*text);
  }
  return out;
}

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Reads every file, on up to 8 threads (yaml-cpp's parsing is most of the start-up and each file is parsed alone);
// the result is the same as reading them one after the other, in order.
std::vector<FileRules> read_rule_files(const std::vector<std::string>& files, const LoadOptions& options) {
  std::vector<FileRules> out(files.size());
  const unsigned threads = std::min<unsigned>({usable_cores(), 8u, static_cast<unsigned>(files.size())});
  if (threads <= 1) {
    for (std::size_t i = 0; i < files.size(); ++i) out[i] = read_rule_file(files[i], options);
    return out;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> failed(threads);
  const auto work = [&](unsigned w) {
    try {
      for (std::size_t i = next++; i < files.size(); i = next++) out[i] = read_rule_file(files[i], options);
    } catch (...) {
      failed[w] = std::current_exception();
      next = files.size();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < threads; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  for (const auto& e : failed) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

}  // namespace

LoadResult load_rules_from_string(std::string_view yaml, std::string_view file_name) {
  LoadResult result;
  std::map<std::string, Position> ids;
  load_text(yaml, std::string(file_name), result, ids);
  result.rules.build_index();
  return result;
}

LoadResult load_rules(const std::vector<std::string>& paths) { return load_rules(paths, LoadOptions{}); }

LoadResult load_rules(const std::vector<std::string>& paths, const LoadOptions& options) {
  LoadResult result;
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::follow_directory_symlink, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const auto& path = it->path();
        auto name = path.filename().string();
        // Skip hidden entries (Kubernetes ConfigMap mounts keep old copies under ..<timestamp>/).
        if (!name.empty() && name[0] == '.') {
          if (it->is_directory()) it.disable_recursion_pending();
          continue;
        }
        // Fixtures of rule tests live in tests/ directories next to the rules.
        if (it->is_directory() && name == "tests") {
          it.disable_recursion_pending();
          continue;
        }
        auto ext = path.extension().string();
        if ((ext == ".yaml" || ext == ".yml") && it->is_regular_file()) found.push_back(path.string());
      }
      if (ec)
        result.diagnostics.push_back(
            {Diagnostic::Kind::error, Position{p, 0, 0}, "cannot read directory: " + ec.message(), true});
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      result.diagnostics.push_back({Diagnostic::Kind::error, Position{p, 0, 0}, "no such file or directory", true});
    }
  }
  std::map<std::string, Position> ids;
  std::vector<FileRules> read;
  // Without tests (a command that only matches), the files' parsed rules may come from the cache: each file is
  // hashed, and an entry for exactly these texts (compared byte for byte) is used instead of parsing them.
  std::vector<rules_detail::ParsedSource> sources;
  if (!options.tests && !options.cache_dir.empty()) {
    for (const auto& f : files) {
      auto source = rules_detail::source_of_file(f);
      if (!source) {  // unreadable: read as usual, which says why
        sources.clear();
        break;
      }
      sources.push_back(std::move(*source));
    }
    if (sources.size() == files.size()) {
      if (auto cached = rules_detail::load_parsed(options.cache_dir, sources, options.content_hash)) read = std::move(*cached);
    }
  }
  if (read.empty() || read.size() != files.size()) {
    read = read_rule_files(files, options);
    // Kept when every file was read as it was just hashed, without an error.
    bool keep = sources.size() == files.size() && !files.empty();
    for (std::size_t i = 0; keep && i < read.size(); ++i) {
      keep = rules_detail::source_of_text(files[i], read[i].text) == sources[i] &&
             std::none_of(read[i].diagnostics.begin(), read[i].diagnostics.end(),
                          [](const Diagnostic& d) { return d.kind == Diagnostic::Kind::error; });
    }
    if (keep) rules_detail::store_parsed(options.cache_dir, files, options.content_hash, read);
  }
  for (auto& loaded : read) add_rules(loaded, result, ids);
  if (result.rules.rules.empty() && result.ok() && !paths.empty()) {
    std::string named;
    for (const auto& p : paths) named += (named.empty() ? "'" : ", '") + excerpt(p) + "'";
    result.diagnostics.push_back({Diagnostic::Kind::error, Position{paths.front(), 0, 0},
                                  "no rules found in " + named + " (rule files end in .yaml or .yml)", true});
  }
  result.rules.build_index();
  return result;
}

std::string default_rules_dir() {
  std::error_code ec;
  if (const char* env = std::getenv("FAULTLINE_RULES_DIR"); env && *env) return env;
  // An installed binary uses the rules installed beside it.
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "faultline" / "rules";
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  if (fs::is_directory(FAULTLINE_SOURCE_RULES_DIR, ec)) return FAULTLINE_SOURCE_RULES_DIR;
  return FAULTLINE_INSTALL_RULES_DIR;
}

}  // namespace faultline
