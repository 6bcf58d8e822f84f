// Checks on a decoded rule beyond the types of its values: the spelling of ids and event names, names inside the
// rule that refer to no event, a sequence with nothing required or that opens with an absence; and the rule's
// content hash.
#include <algorithm>
#include <cctype>

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
    auto first = std::find_if(r.sequence.begin(), r.sequence.end(), [](const Step& s) { return !s.optional; });
    if (first == r.sequence.end()) {
      error(node["sequence"] ? node["sequence"] : node, "the sequence has no required step");
    } else if (first->absent_for) {
      // An absence is timed from the completion of the required step before it; the first has none to follow.
      error_at(first->pos, "the first required step cannot be an 'absent' step: an absence is timed from the step "
                           "before it (put the event it follows first)");
    }
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

  const std::vector<std::string> fields = r.field_names();
  if (auto v = node["title"]) validate_template(v, r.title, fields, "title", r);
  if (auto v = node["summary"]) validate_template(v, r.summary, fields, "summary", r);
  if (auto v = node["remediation"]) validate_template(v, r.remediation, fields, "remediation", r);
}

Position RuleReader::position_in(const YAML::Node& value, std::string_view text, std::size_t offset,
                                 std::size_t length) const {
  Position at = pos(value);
  const YAML::Mark mark = value.Mark();
  if (source_.empty() || mark.is_null() || mark.pos < 0 || static_cast<std::size_t>(mark.pos) > source_.size()) {
    return at;
  }
  // The piece as written: a placeholder or `[[` reads the same in the source (folding only touches line breaks and
  // indentation between words). Its n-th occurrence in the text is its n-th in the source after the scalar's start.
  std::string_view piece = text.substr(offset, length);
  std::size_t nth = 0;
  for (auto k = text.find(piece); k != std::string_view::npos && k < offset; k = text.find(piece, k + 1)) ++nth;
  std::size_t found = static_cast<std::size_t>(mark.pos);
  for (std::size_t n = 0;; ++n) {
    found = source_.find(piece, found);
    if (found == std::string_view::npos || found - static_cast<std::size_t>(mark.pos) > yaml::kMaxScalarBytes) return at;
    if (n == nth) break;
    found += piece.size();
  }
  std::size_t line_start = source_.rfind('\n', found);
  line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
  at.line = pos(value).line - static_cast<std::uint32_t>(mark.line) +
            static_cast<std::uint32_t>(std::count(source_.begin(), source_.begin() + static_cast<std::ptrdiff_t>(found), '\n'));
  at.column = static_cast<std::uint32_t>(found - line_start + 1);
  return at;
}

void RuleReader::validate_template(const YAML::Node& value, std::string_view text,
                                   const std::vector<std::string>& fields, std::string_view what, const Rule& r) {
  TemplateSyntax syntax = parse_template(text);
  for (const auto& problem : syntax.problems) {
    error_at(position_in(value, text, problem.offset, 2), std::string(what) + ": " + problem.message);
  }
  for (const auto& p : syntax.placeholders) {
    std::size_t length = text.find('}', p.offset) + 1 - p.offset;
    std::string shown(text.substr(p.offset, length));
    if (!std::binary_search(fields.begin(), fields.end(), p.name)) {
      std::string known;
      for (const auto& f : fields) known += (known.empty() ? "" : ", ") + f;
      error_at(position_in(value, text, p.offset, length),
               std::string(what) + ": placeholder " + excerpt(shown) + " names no field of rule '" + excerpt(r.id) +
                   "' (its fields: " + (known.empty() ? std::string("none") : excerpt(known)) + ")");
      continue;
    }
    if (p.fallback && !p.fallback->empty() &&
        std::none_of(p.fallback->begin(), p.fallback->end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })) {
      error_at(position_in(value, text, p.offset, length),
               std::string(what) + ": placeholder " + excerpt(shown) + " would print '" + excerpt(*p.fallback) +
                   "' when " + p.name + " is absent: say in words what is unknown, or put the clause in [[ ... ]]");
    }
  }
}

std::string content_hash(const YAML::Node& rule) {
  YAML::Node copy = YAML::Clone(rule);
  if (copy.IsMap()) copy.remove("tests");
  return hex16(fnv1a64(YAML::Dump(copy)));
}

}  // namespace faultline::rules_detail
