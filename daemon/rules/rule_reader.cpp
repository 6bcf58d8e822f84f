// Decodes one rule mapping into the typed model: its fields, events, sequence steps, key, tolerance, lifetime and
// cascade. Wrong types, unknown keys and bad values become diagnostics at the value; the rule's tests are read in
// loader.cpp, the names inside it checked in validate.cpp.
#include <algorithm>

#include "rule_reader.hpp"

namespace faultline::rules_detail {

std::optional<Severity> RuleReader::severity(const YAML::Node& node, std::string_view what) {
  if (node.IsScalar()) {
    if (auto s = parse_severity(node.Scalar())) return s;
  }
  error(node, std::string(what) + " must be info, warning or critical");
  return std::nullopt;
}

void RuleReader::events(const YAML::Node& node, Rule& rule) {
  if (!node.IsMap() || node.size() == 0) {
    error(node, "events must be a non-empty mapping of event names to events");
    return;
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    EventPattern ev;
    const YAML::Node name = it->first;  // copies: the iterator yields a temporary
    const YAML::Node body = it->second;
    ev.name = name.as<std::string>("");
    if (!is_event_name(ev.name)) error(name, "event name '" + excerpt(ev.name) + "' must match [a-z0-9_]+");
    if (rule.event_index(ev.name) >= 0) continue;  // a duplicate key, reported when the file was loaded
    if (body.IsScalar()) {  // shorthand: name: 'regex'
      ev.regex = body.Scalar();
      ev.pos = pos(body);
    } else if (body.IsMap()) {
      check_keys(body, {"regex", "level", "caseless", "set", "normalise"}, "event '" + excerpt(ev.name) + "'");
      if (auto r = body["regex"]) {
        string(r, ev.regex, "regex");
        ev.pos = pos(r);
      } else {
        error(body, "event '" + excerpt(ev.name) + "' has no regex");
      }
      if (auto l = body["level"]) {
        std::vector<std::string> levels;
        if (string_list(l, levels, "level")) {
          for (const auto& level : levels) {
            auto lv = parse_level(level);
            if (!lv || (level != to_string(*lv))) {
              error(l, "unknown level '" + excerpt(level) + "' (expected trace, debug, info, warning, error, critical or unknown)");
            } else {
              ev.levels.push_back(*lv);
            }
          }
        }
      }
      if (auto c = body["caseless"]) boolean(c, ev.caseless, "caseless");
      if (auto s = body["set"]) string_map(s, ev.set, "set");
      if (auto n = body["normalise"]) {
        Fields names;
        if (string_map(n, names, "normalise")) {
          for (const auto& [field, transform] : names) {
            if (auto t = parse_field_transform(transform)) {
              ev.normalise.emplace_back(field, *t);
            } else {
              error(n, "event '" + excerpt(ev.name) + "': unknown transform '" + excerpt(transform) +
                           "' for field '" + excerpt(field) + "' (expected sm_arch)");
            }
          }
        }
      }
    } else {
      error(body, "event '" + excerpt(ev.name) + "' must be a regex string or a mapping with 'regex'");
      continue;
    }
    if (ev.regex.empty()) error(body, "event '" + excerpt(ev.name) + "' has an empty regex");
    ev.captures = capture_names(ev.regex);
    for (const auto& [field, transform] : ev.normalise) {
      bool captured = std::find(ev.captures.begin(), ev.captures.end(), field) != ev.captures.end();
      if (!captured && find_field(ev.set, field) == nullptr) {
        error(body["normalise"], "event '" + excerpt(ev.name) + "': normalise names '" + excerpt(field) +
                                     "', which the event neither captures nor sets");
      }
    }
    rule.events.push_back(std::move(ev));
  }
}

void RuleReader::step(const YAML::Node& node, Rule& rule) {
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

void RuleReader::key(const YAML::Node& node, Rule& r) {
  std::vector<std::string> parts;
  if (!string_list(node, parts, "key")) return;
  r.key.stream = false;
  for (const auto& p : parts) {
    if (p == "stream") {
      r.key.stream = true;
    } else if (p == "node") {
      r.key.node = true;
    } else if (p.rfind("field:", 0) == 0 && p.size() > 6) {
      r.key.fields.push_back(p.substr(6));
    } else {
      error(node, "key parts are stream, node or field:<name> (got '" + excerpt(p) + "')");
    }
  }
  if (!r.key.stream && !r.key.node && r.key.fields.empty()) r.key.stream = true;
}

void RuleReader::extent(const YAML::Node& node, Rule& r) {
  if (auto v = node["tolerance"]) {
    if (!v.IsMap()) {
      error(v, "tolerance must be a mapping {lines: N, time: D}");
    } else {
      check_keys(v, {"lines", "time"}, "tolerance");
      if (auto l = v["lines"]) integer(l, r.tolerance.lines, "tolerance.lines", 0, 10000);
      if (auto t = v["time"]) duration(t, r.tolerance.time, "tolerance.time");
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
  if (auto v = node["cascade"]) {
    r.cascade.enabled = true;
    if (v.IsMap()) {
      check_keys(v, {"window", "hold"}, "cascade");
      if (auto w = v["window"]) duration(w, r.cascade.window, "cascade.window");
      if (auto h = v["hold"]) duration(h, r.cascade.hold, "cascade.hold");
    } else if (!(v.IsScalar() && yaml::parse_boolean(v.Scalar()) == std::optional<bool>(true))) {
      error(v, "cascade must be true or a mapping {window: D, hold: D}");
    }
  }
  if (auto v = node["attribution"]) {
    if (!v.IsMap()) {
      error(v, "attribution must be a mapping {explains: [rule or category], when: {field: [values]}, gpu: [fields]}");
    } else {
      check_keys(v, {"explains", "when", "gpu"}, "attribution");
      if (auto e = v["explains"]) string_list(e, r.attribution.explains, "attribution.explains");
      if (auto g = v["gpu"]) string_list(g, r.attribution.gpu, "attribution.gpu");
      if (auto w = v["when"]) {
        if (!w.IsMap() || w.size() == 0) {
          error(w, "attribution.when must be a mapping {field: [values]}");
        } else {
          for (const auto& kv : w) {
            std::vector<std::string> values;
            if (string_list(kv.second, values, "attribution.when values")) {
              r.attribution.when.emplace_back(kv.first.Scalar(), std::move(values));
            }
          }
        }
      }
    }
  }
}

std::optional<Rule> RuleReader::rule(const YAML::Node& node) {
  if (!node.IsMap()) {
    error(node, "a rule must be a mapping");
    return std::nullopt;
  }
  std::size_t before = mark();
  check_keys(node,
             {"id", "title", "severity", "summary", "remediation", "references", "labels", "events", "sequence",
              "reset_on", "tolerance", "key", "lifetime", "priority", "cascade", "attribution", "context_lines",
              "tests"},
             "rule");
  Rule r;
  r.pos = pos(node);
  if (auto v = node["id"]) {
    if (string(v, r.id, "id") && !is_kebab(r.id)) error(v, "id '" + excerpt(r.id) + "' must be kebab-case ([a-z0-9]+(-[a-z0-9]+)*)");
  } else {
    error(node, "rule has no id");
  }
  if (auto v = node["title"]) {
    string(v, r.title, "title");
  } else {
    error(node, "rule '" + excerpt(r.id) + "' has no title");
  }
  if (auto v = node["severity"]) {
    if (auto s = severity(v, "severity")) r.severity = *s;
  } else {
    error(node, "rule '" + excerpt(r.id) + "' has no severity");
  }
  if (auto v = node["summary"]) string(v, r.summary, "summary");
  if (auto v = node["remediation"]) string(v, r.remediation, "remediation");
  if (auto v = node["references"]) string_list(v, r.references, "references");
  if (auto v = node["labels"]) string_map(v, r.labels, "labels");
  if (auto v = node["events"]) {
    events(v, r);
  } else {
    error(node, "rule '" + excerpt(r.id) + "' has no events");
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
    error(node, "rule '" + excerpt(r.id) + "' has several events and needs a sequence");
  }
  if (auto v = node["reset_on"]) string_list(v, r.reset_on, "reset_on");
  if (auto v = node["key"]) key(v, r);
  extent(node, r);
  if (auto v = node["priority"]) integer(v, r.priority, "priority", -1000, 1000);
  if (auto v = node["context_lines"]) integer(v, r.context_lines, "context_lines", 0, 20);
  validate(node, r);

  if (auto v = node["tests"]) {
    if (!v.IsSequence()) {
      error(v, "tests must be a list");
    } else {
      for (const auto& t : v) test(t, r);
    }
  }
  if (content_hash_) r.content_hash = content_hash(node);
  if (errors_since(before)) return std::nullopt;
  return r;
}

}  // namespace faultline::rules_detail
