// Checks on a decoded rule beyond the types of its values: the spelling of ids and event names, names inside the
// rule that refer to no event, a sequence with nothing required; and the rule's content hash.
#include <algorithm>
#include <cstdio>

#include "rule_reader.hpp"

namespace faultline::rules_detail {

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

void RuleReader::validate(const YAML::Node& node, const Rule& r) {
  auto check_event = [&](const std::string& name, const Position& where, std::string_view role) {
    if (r.event_index(name) < 0) {
      error_at(where, std::string(role) + " names unknown event '" + excerpt(name) + "' in rule '" + excerpt(r.id) + "'");
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
  // attribution.when and attribution.gpu name fields the rule's events capture or set.
  auto has_field = [&](const std::string& f) {
    return std::any_of(r.events.begin(), r.events.end(), [&](const EventPattern& e) {
      return std::find(e.captures.begin(), e.captures.end(), f) != e.captures.end() || find_field(e.set, f);
    });
  };
  auto check_field = [&](const std::string& f, std::string_view role) {
    if (!has_field(f)) {
      error(node["attribution"], std::string(role) + " names field '" + excerpt(f) + "' that no event of rule '" +
                                     excerpt(r.id) + "' captures or sets");
    }
  };
  for (const auto& [f, values] : r.attribution.when) check_field(f, "attribution.when");
  for (const auto& f : r.attribution.gpu) check_field(f, "attribution.gpu");
}

std::string content_hash(const YAML::Node& rule) {
  YAML::Node copy = YAML::Clone(rule);
  if (copy.IsMap()) copy.remove("tests");
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(YAML::Dump(copy))));
  return buf;
}

}  // namespace faultline::rules_detail
