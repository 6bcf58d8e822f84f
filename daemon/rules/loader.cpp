// Loads rule files in stages: read YAML (syntax errors carry their mark), decode into the typed model (unknown keys,
// wrong types, bad durations), then validate across the set (duplicate ids, names that refer to nothing).
// Every problem becomes a Diagnostic; nothing escapes as an exception.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "faultline/rules.hpp"

namespace faultline {

namespace fs = std::filesystem;

namespace {

// The one place where yaml-cpp's 0-based marks become 1-based positions.
Position position_of(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return Position{file, 0, 0};
  return Position{file, static_cast<std::uint32_t>(mark.line + 1), static_cast<std::uint32_t>(mark.column + 1)};
}

std::string hex64(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool is_kebab(std::string_view s) {
  if (s.empty() || s.front() == '-' || s.back() == '-') return false;
  char prev = 0;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || (c == '-' && prev == '-')) return false;
    prev = c;
  }
  return true;
}

bool is_event_name(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

// Names of (?P<name>...) groups, in order.
std::vector<std::string> capture_names(std::string_view regex) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 4 < regex.size(); ++i) {
    if (regex[i] == '\\') {
      ++i;
      continue;
    }
    if (regex.compare(i, 4, "(?P<") == 0) {
      auto end = regex.find('>', i + 4);
      if (end == std::string_view::npos) break;
      out.emplace_back(regex.substr(i + 4, end - i - 4));
      i = end;
    }
  }
  return out;
}

class Decoder {
 public:
  Decoder(std::string file, std::vector<Diagnostic>& diags) : file_(std::move(file)), diags_(diags) {}

  void error(const YAML::Node& node, const std::string& message) {
    diags_.push_back({Diagnostic::Kind::error, position_of(file_, node.Mark()), message});
  }
  void error_at(const YAML::Mark& mark, const std::string& message) {
    diags_.push_back({Diagnostic::Kind::error, position_of(file_, mark), message});
  }
  Position pos(const YAML::Node& node) const { return position_of(file_, node.Mark()); }
  const std::string& file() const { return file_; }

  // Reports keys of `map` that are not in `allowed`.
  void check_keys(const YAML::Node& map, std::initializer_list<std::string_view> allowed, std::string_view what) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      auto key = it->first.as<std::string>("");
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (auto a : allowed) {
          if (!list.empty()) list += ", ";
          list += a;
        }
        error(it->first, "unknown key '" + key + "' in " + std::string(what) + " (expected one of: " + list + ")");
      }
    }
  }

  bool string(const YAML::Node& node, std::string& out, std::string_view what) {
    if (!node.IsScalar()) {
      error(node, std::string(what) + " must be a string");
      return false;
    }
    out = node.Scalar();
    return true;
  }

  bool boolean(const YAML::Node& node, bool& out, std::string_view what) {
    if (node.IsScalar()) {
      const auto& s = node.Scalar();
      if (s == "true" || s == "yes" || s == "on") return out = true, true;
      if (s == "false" || s == "no" || s == "off") return out = false, true;
    }
    error(node, std::string(what) + " must be true or false");
    return false;
  }

  template <typename Int>
  bool integer(const YAML::Node& node, Int& out, std::string_view what, long long lo, long long hi) {
    if (node.IsScalar()) {
      const auto& s = node.Scalar();
      char* end = nullptr;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end && *end == '\0' && v >= lo && v <= hi) {
        out = static_cast<Int>(v);
        return true;
      }
    }
    error(node, std::string(what) + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    return false;
  }

  bool duration(const YAML::Node& node, Duration& out, std::string_view what) {
    if (node.IsScalar()) {
      if (auto d = parse_duration(node.Scalar())) {
        out = *d;
        return true;
      }
    }
    error(node, std::string(what) + " must be a duration such as 500ms, 5s, 10m, 2h (got '" +
                    (node.IsScalar() ? node.Scalar() : std::string("non-scalar")) + "')");
    return false;
  }

  bool string_list(const YAML::Node& node, std::vector<std::string>& out, std::string_view what) {
    if (node.IsScalar()) {
      out.push_back(node.Scalar());
      return true;
    }
    if (!node.IsSequence()) {
      error(node, std::string(what) + " must be a list of strings");
      return false;
    }
    for (const auto& item : node) {
      if (!item.IsScalar()) {
        error(item, std::string(what) + " must contain strings");
        return false;
      }
      out.push_back(item.Scalar());
    }
    return true;
  }

  bool string_map(const YAML::Node& node, Fields& out, std::string_view what) {
    if (!node.IsMap()) {
      error(node, std::string(what) + " must be a mapping of names to strings");
      return false;
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->second.IsScalar()) {
        error(it->second, std::string(what) + " values must be strings");
        return false;
      }
      set_field(out, it->first.Scalar(), it->second.Scalar());
    }
    return true;
  }

  std::optional<Severity> severity(const YAML::Node& node, std::string_view what) {
    if (node.IsScalar()) {
      if (auto s = parse_severity(node.Scalar())) return s;
    }
    error(node, std::string(what) + " must be info, warning or critical");
    return std::nullopt;
  }

  std::optional<Rule> rule(const YAML::Node& node);

 private:
  void events(const YAML::Node& node, Rule& rule);
  void step(const YAML::Node& node, Rule& rule);
  void test(const YAML::Node& node, Rule& rule);
  void expected(const YAML::Node& node, RuleTest& test);

  std::string file_;
  std::vector<Diagnostic>& diags_;
};

void Decoder::events(const YAML::Node& node, Rule& rule) {
  if (!node.IsMap() || node.size() == 0) {
    error(node, "events must be a non-empty mapping of event names to events");
    return;
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    EventPattern ev;
    ev.name = it->first.as<std::string>("");
    if (!is_event_name(ev.name)) error(it->first, "event name '" + ev.name + "' must match [a-z0-9_]+");
    if (rule.find_event(ev.name)) error(it->first, "duplicate event '" + ev.name + "'");
    const YAML::Node body = it->second;  // a copy: the iterator yields a temporary
    if (body.IsScalar()) {  // shorthand: name: 'regex'
      ev.regex = body.Scalar();
      ev.pos = pos(body);
    } else if (body.IsMap()) {
      check_keys(body, {"regex", "level", "caseless", "set"}, "event '" + ev.name + "'");
      if (auto r = body["regex"]) {
        string(r, ev.regex, "regex");
        ev.pos = pos(r);
      } else {
        error(body, "event '" + ev.name + "' has no regex");
      }
      if (auto l = body["level"]) {
        std::vector<std::string> levels;
        if (string_list(l, levels, "level")) {
          for (const auto& name : levels) {
            auto lv = parse_level(name);
            if (!lv || (name != to_string(*lv))) {
              error(l, "unknown level '" + name +
                           "' (expected trace, debug, info, warning, error, critical or unknown)");
            } else {
              ev.levels.push_back(*lv);
            }
          }
        }
      }
      if (auto c = body["caseless"]) boolean(c, ev.caseless, "caseless");
      if (auto s = body["set"]) string_map(s, ev.set, "set");
    } else {
      error(body, "event '" + ev.name + "' must be a regex string or a mapping with 'regex'");
      continue;
    }
    if (ev.regex.empty()) error(body, "event '" + ev.name + "' has an empty regex");
    ev.captures = capture_names(ev.regex);
    rule.events.push_back(std::move(ev));
  }
}

void Decoder::step(const YAML::Node& node, Rule& rule) {
  Step st;
  st.pos = pos(node);
  if (node.IsScalar()) {  // shorthand: - event_name
    st.events.push_back(node.Scalar());
    rule.sequence.push_back(std::move(st));
    return;
  }
  if (!node.IsMap()) {
    error(node, "a sequence step must be an event name or a mapping");
    return;
  }
  check_keys(node, {"event", "any", "count", "within", "optional", "severity", "after", "absent", "for"}, "step");
  int kinds = (node["event"] ? 1 : 0) + (node["any"] ? 1 : 0) + (node["absent"] ? 1 : 0);
  if (kinds != 1) error(node, "a step needs exactly one of 'event', 'any' or 'absent'");
  if (auto e = node["event"]) {
    std::string name;
    if (string(e, name, "event")) st.events.push_back(name);
  }
  if (auto a = node["any"]) string_list(a, st.events, "any");
  if (auto a = node["absent"]) {
    string_list(a, st.events, "absent");
    if (auto f = node["for"]) {
      Duration d{};
      if (duration(f, d, "for")) st.absent_for = d;
    } else {
      error(node, "an 'absent' step needs 'for' (how long the event must stay away)");
    }
  } else if (auto f = node["for"]) {
    error(f, "'for' belongs to an 'absent' step");
  }
  if (auto c = node["count"]) integer(c, st.count, "count", 1, 100000);
  if (auto w = node["within"]) {
    Duration d{};
    if (duration(w, d, "within")) st.within = d;
  }
  if (auto o = node["optional"]) boolean(o, st.optional, "optional");
  if (auto s = node["severity"]) st.severity = severity(s, "step severity");
  if (auto a = node["after"]) string_list(a, st.after, "after");
  if (st.absent_for && st.optional) error(node, "an 'absent' step cannot be optional");
  rule.sequence.push_back(std::move(st));
}

void Decoder::expected(const YAML::Node& node, RuleTest& test) {
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

void Decoder::test(const YAML::Node& node, Rule& rule) {
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

std::optional<Rule> Decoder::rule(const YAML::Node& node) {
  if (!node.IsMap()) {
    error(node, "a rule must be a mapping");
    return std::nullopt;
  }
  std::size_t errors_before = diags_.size();
  check_keys(node,
             {"id", "title", "severity", "summary", "remediation", "references", "labels", "events", "sequence",
              "reset_on", "tolerance", "key", "lifetime", "priority", "cascade", "context_lines", "tests"},
             "rule");
  Rule r;
  r.pos = pos(node);
  if (auto v = node["id"]) {
    if (string(v, r.id, "id") && !is_kebab(r.id)) error(v, "id '" + r.id + "' must be kebab-case ([a-z0-9]+(-[a-z0-9]+)*)");
  } else {
    error(node, "rule has no id");
  }
  if (auto v = node["title"]) {
    string(v, r.title, "title");
  } else {
    error(node, "rule '" + r.id + "' has no title");
  }
  if (auto v = node["severity"]) {
    if (auto s = severity(v, "severity")) r.severity = *s;
  } else {
    error(node, "rule '" + r.id + "' has no severity");
  }
  if (auto v = node["summary"]) string(v, r.summary, "summary");
  if (auto v = node["remediation"]) string(v, r.remediation, "remediation");
  if (auto v = node["references"]) string_list(v, r.references, "references");
  if (auto v = node["labels"]) string_map(v, r.labels, "labels");
  if (auto v = node["events"]) {
    events(v, r);
  } else {
    error(node, "rule '" + r.id + "' has no events");
  }
  if (auto v = node["sequence"]) {
    if (!v.IsSequence() || v.size() == 0) {
      error(v, "sequence must be a non-empty list of steps");
    } else {
      for (const auto& s : v) step(s, r);
    }
  } else if (r.events.size() == 1) {
    Step st;
    st.events.push_back(r.events.front().name);
    st.pos = r.events.front().pos;
    r.sequence.push_back(std::move(st));
  } else if (!r.events.empty()) {
    error(node, "rule '" + r.id + "' has several events and needs a sequence");
  }
  if (auto v = node["reset_on"]) string_list(v, r.reset_on, "reset_on");
  if (auto v = node["tolerance"]) {
    if (!v.IsMap()) {
      error(v, "tolerance must be a mapping {lines: N, time: D}");
    } else {
      check_keys(v, {"lines", "time"}, "tolerance");
      if (auto l = v["lines"]) integer(l, r.tolerance.lines, "tolerance.lines", 0, 10000);
      if (auto t = v["time"]) duration(t, r.tolerance.time, "tolerance.time");
    }
  }
  if (auto v = node["key"]) {
    std::vector<std::string> parts;
    if (string_list(v, parts, "key")) {
      r.key.stream = false;
      for (const auto& p : parts) {
        if (p == "stream") {
          r.key.stream = true;
        } else if (p == "node") {
          r.key.node = true;
        } else if (p.rfind("field:", 0) == 0 && p.size() > 6) {
          r.key.fields.push_back(p.substr(6));
        } else {
          error(v, "key parts are stream, node or field:<name> (got '" + p + "')");
        }
      }
      if (!r.key.stream && !r.key.node && r.key.fields.empty()) r.key.stream = true;
    }
  }
  if (auto v = node["lifetime"]) {
    if (!v.IsMap()) {
      error(v, "lifetime must be a mapping {quiet: D, resolve_on: [events]}");
    } else {
      check_keys(v, {"quiet", "resolve_on"}, "lifetime");
      if (auto q = v["quiet"]) duration(q, r.lifetime.quiet, "lifetime.quiet");
      if (auto q = v["resolve_on"]) string_list(q, r.lifetime.resolve_on, "lifetime.resolve_on");
    }
  }
  if (auto v = node["priority"]) integer(v, r.priority, "priority", -1000, 1000);
  if (auto v = node["cascade"]) {
    r.cascade.enabled = true;
    if (v.IsMap()) {
      check_keys(v, {"window", "hold"}, "cascade");
      if (auto w = v["window"]) duration(w, r.cascade.window, "cascade.window");
      if (auto h = v["hold"]) duration(h, r.cascade.hold, "cascade.hold");
    } else if (!(v.IsScalar() && v.Scalar() == "true")) {
      error(v, "cascade must be true or a mapping {window: D, hold: D}");
    }
  }
  if (auto v = node["context_lines"]) integer(v, r.context_lines, "context_lines", 0, 20);

  // References between names inside the rule.
  auto check_event = [&](const std::string& name, const Position& where, std::string_view role) {
    if (!r.find_event(name)) {
      diags_.push_back({Diagnostic::Kind::error, where,
                        std::string(role) + " names unknown event '" + name + "' in rule '" + r.id + "'"});
    }
  };
  for (const auto& st : r.sequence) {
    for (const auto& e : st.events) check_event(e, st.pos, "step");
    for (const auto& e : st.after) check_event(e, st.pos, "after");
  }
  if (!r.sequence.empty()) {
    bool any_required = std::any_of(r.sequence.begin(), r.sequence.end(), [](const Step& s) { return !s.optional; });
    if (!any_required) error(node["sequence"] ? node["sequence"] : node, "the sequence has no required step");
  }
  for (const auto& e : r.reset_on) check_event(e, pos(node["reset_on"]), "reset_on");
  for (const auto& e : r.lifetime.resolve_on) check_event(e, pos(node["lifetime"]), "resolve_on");

  if (auto v = node["tests"]) {
    if (!v.IsSequence()) {
      error(v, "tests must be a list");
    } else {
      for (const auto& t : v) test(t, r);
    }
  }
  // Content hash: the rule's definition without its tests (tests do not change behaviour).
  YAML::Node copy = YAML::Clone(node);
  if (copy.IsMap()) copy.remove("tests");
  r.content_hash = hex64(fnv1a64(YAML::Dump(copy)));
  if (diags_.size() != errors_before) {
    bool has_error = std::any_of(diags_.begin() + static_cast<long>(errors_before), diags_.end(),
                                 [](const Diagnostic& d) { return d.kind == Diagnostic::Kind::error; });
    if (has_error) return std::nullopt;
  }
  return r;
}

void load_document(const YAML::Node& root, Decoder& dec, RuleSet& out) {
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

void load_text(std::string_view text, const std::string& file, LoadResult& result,
               std::map<std::string, Position>& ids) {
  Decoder dec(file, result.diagnostics);
  RuleSet loaded;
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(std::string(text));
    for (const auto& doc : docs) load_document(doc, dec, loaded);
  } catch (const YAML::Exception& e) {
    result.diagnostics.push_back({Diagnostic::Kind::error, position_of(file, e.mark), e.msg});
    return;
  }
  for (auto& r : loaded.rules) {
    auto [it, inserted] = ids.emplace(r.id, r.pos);
    if (!inserted) {
      result.diagnostics.push_back(
          {Diagnostic::Kind::error, r.pos, "duplicate rule id '" + r.id + "' (first defined at " + it->second.str() + ")"});
      continue;
    }
    result.rules.rules.push_back(std::move(r));
  }
}

}  // namespace

std::string Diagnostic::str() const {
  return pos.str() + (kind == Kind::error ? ": error: " : ": warning: ") + message;
}

const EventPattern* Rule::find_event(std::string_view name) const {
  for (const auto& e : events) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

int Rule::event_index(std::string_view name) const {
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

const Rule* RuleSet::find(std::string_view id) const {
  for (const auto& r : rules) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

bool LoadResult::ok() const {
  return std::none_of(diagnostics.begin(), diagnostics.end(),
                      [](const Diagnostic& d) { return d.kind == Diagnostic::Kind::error; });
}

LoadResult load_rules_from_string(std::string_view yaml, std::string_view file_name) {
  LoadResult result;
  std::map<std::string, Position> ids;
  load_text(yaml, std::string(file_name), result, ids);
  return result;
}

LoadResult load_rules(const std::vector<std::string>& paths) {
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
      if (ec) result.diagnostics.push_back({Diagnostic::Kind::error, Position{p, 0, 0}, "cannot read directory: " + ec.message()});
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      result.diagnostics.push_back({Diagnostic::Kind::error, Position{p, 0, 0}, "no such file or directory"});
    }
  }
  std::map<std::string, Position> ids;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      result.diagnostics.push_back({Diagnostic::Kind::error, Position{f, 0, 0}, "cannot open file"});
      continue;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    load_text(ss.str(), f, result, ids);
  }
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

std::string expand_template(std::string_view text, const Fields& fields) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{') {
      auto end = text.find('}', i + 1);
      if (end != std::string_view::npos) {
        std::string_view inner = text.substr(i + 1, end - i - 1);
        auto bar = inner.find('|');
        std::string_view name = inner.substr(0, bar);
        bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        });
        if (plain) {
          if (const auto* v = find_field(fields, name); v && !v->empty()) {
            out += *v;
          } else if (bar != std::string_view::npos) {
            out += inner.substr(bar + 1);
          }
          i = end;
          continue;
        }
      }
    }
    out += text[i];
  }
  return out;
}

}  // namespace faultline
