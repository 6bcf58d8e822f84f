// The decisive pattern of a drafted rule (rule_draft_pattern.hpp): the terminal line laid along its template, each
// placeholder generalised to a regex class, checked with RE2 against the line it came from.
#include "rule_draft_pattern.hpp"

#include <re2/re2.h>

#include <optional>

#include "faultline/fingerprint.hpp"

namespace faultline::app::rule_draft {

std::string regex_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string collapse_spaces(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool blank = c == ' ' || c == '\t' || c == '\r';
    if (blank) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// A literal run of the line: escaped, each run of blanks as [ \t]+ (the log may align with tabs or more spaces).
std::string literal_regex(std::string_view s) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ') {
      out += "[ \\t]+";
      while (i < s.size() && s[i] == ' ') ++i;
      continue;
    }
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    out += regex_escape(s.substr(i, j - i));
    i = j;
  }
  return out;
}

struct Piece {
  std::string kind;  // empty: literal; else the placeholder's name ("num", "path", ...)
  std::string text;  // as the line printed it
};

// The line split along its template: literal runs and the text each placeholder stands for. nullopt when the
// template cannot be laid over the line (then the whole line is one literal).
std::optional<std::vector<Piece>> align(std::string_view line, std::string_view tmpl) {
  static constexpr std::string_view kKinds[] = {"num", "size", "hex", "uuid", "path", "url",
                                                "addr", "time", "date", "shape", "id"};
  std::vector<Piece> parts;  // the template's pieces, variable ones without their text yet
  std::size_t i = 0;
  std::string literal;
  while (i < tmpl.size()) {
    bool placeholder = false;
    if (tmpl[i] == '<') {
      for (auto k : kKinds) {
        if (tmpl.substr(i + 1).starts_with(k) && i + 1 + k.size() < tmpl.size() && tmpl[i + 1 + k.size()] == '>') {
          if (!literal.empty()) parts.push_back({"", std::exchange(literal, {})});
          if (!parts.empty() && !parts.back().kind.empty()) parts.back().kind = "mixed";  // two in a row: one
          else parts.push_back({std::string(k), ""});
          i += k.size() + 2;
          placeholder = true;
          break;
        }
      }
    }
    if (!placeholder) literal += tmpl[i++];
  }
  if (!literal.empty()) parts.push_back({"", literal});
  std::size_t pos = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (parts[k].kind.empty()) {
      if (line.substr(pos, parts[k].text.size()) != parts[k].text) return std::nullopt;
      pos += parts[k].text.size();
      continue;
    }
    std::size_t end = line.size();
    if (k + 1 < parts.size()) {
      end = line.find(parts[k + 1].text, pos + 1);
      if (end == std::string_view::npos) return std::nullopt;
    }
    if (end <= pos) return std::nullopt;
    parts[k].text = std::string(line.substr(pos, end - pos));
    pos = end;
  }
  if (pos != line.size()) return std::nullopt;
  return parts;
}

// The class a placeholder's text is generalised to, and whether it is worth a capture.
struct Generalised {
  std::string regex;
  std::string field;  // the capture's base name; empty: no capture
};

Generalised class_of(const Piece& p) {
  static const std::pair<std::string_view, Generalised> kClasses[] = {
      {"num", {R"(-?\d+(?:[.,:]\d+)*)", "num"}},
      {"size", {R"(\d+(?:\.\d+)? ?[KMGT]?i?B|\d+(?:\.\d+)? ?(?:bytes|[KMG]))", "size"}},
      {"hex", {R"((?:0[xX])?[0-9a-fA-F]+)", "hex"}},
      {"uuid", {R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})", "uuid"}},
      {"path", {R"([^\s'"(),\]]{1,300})", "path"}},
      {"url", {R"([a-z0-9]{2,5}://[^\s'")]{1,300})", "url"}},
      {"addr", {R"(\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?)", "address"}},
      {"time", {R"(\d[\d:.,]{3,30})", ""}},
      {"date", {R"(\d[\d\-:.,TZ+]{5,40})", ""}},
      {"shape", {R"([\[(][\d, \-]{0,200}[\])]|\d+(?:x\d+)+)", "shape"}},
  };
  for (const auto& [kind, g] : kClasses) {
    if (p.kind == kind) return g;
  }
  return {};
}

constexpr std::size_t kMaxCaptures = 6;
constexpr std::size_t kMaxPatternText = 200;

// The decisive pattern from the terminal line (its logger prefix removed): the literal text escaped, what the
// template varies on as classes, the first kMaxCaptures of them (numbers, sizes, names, paths...) as captures.
Pattern pattern_of(std::string_view terminal) {
  std::string line = collapse_spaces(strip_log_prefix(terminal));
  if (line.size() > kMaxPatternText) {
    auto cut = line.rfind(' ', kMaxPatternText);
    line.resize(cut == std::string::npos || cut < kMaxPatternText / 2 ? kMaxPatternText : cut);
  }
  Pattern out;
  auto pieces = align(line, message_template(line));
  if (!pieces) {
    out.regex = literal_regex(line);
    return out;
  }
  // What varies at the start is left out: the pattern is searched anywhere in the line, and anchored on its literal.
  std::size_t first = 0;
  while (first < pieces->size() && (!(*pieces)[first].kind.empty() || (*pieces)[first].text == " ")) ++first;
  if (first < pieces->size() && first > 0) {
    auto& lead = (*pieces)[first].text;
    while (!lead.empty() && lead.front() == ' ') lead.erase(0, 1);
  }
  std::vector<std::string> names;
  for (std::size_t k = first; k < pieces->size(); ++k) {
    const Piece& p = (*pieces)[k];
    if (p.kind.empty()) {
      out.regex += literal_regex(p.text);
      continue;
    }
    // A quoted identifier: the quotes stay literal, the name between them is captured.
    if (p.kind == "id" && p.text.size() >= 3) {
      const std::string inner = p.text.substr(1, p.text.size() - 2);
      const std::string cls = R"([^\s'"`]{1,200})";
      if (!RE2::FullMatch(inner, RE2(cls))) {
        out.regex += literal_regex(p.text);
        continue;
      }
      std::string body = cls;
      if (out.fields.size() < kMaxCaptures) {
        std::string name = "name";
        for (int n = 2; std::count(names.begin(), names.end(), name); ++n) name = "name_" + std::to_string(n);
        names.push_back(name);
        out.fields.emplace_back(name, inner);
        body = "(?P<" + name + ">" + cls + ")";
      }
      out.regex += regex_escape(p.text.substr(0, 1)) + body + regex_escape(p.text.substr(p.text.size() - 1));
      continue;
    }
    Generalised g = class_of(p);
    if (g.regex.empty() || !RE2::FullMatch(p.text, RE2(g.regex))) {
      out.regex += literal_regex(p.text);  // a placeholder no class fits: kept as printed
      continue;
    }
    if (!g.field.empty() && out.fields.size() < kMaxCaptures) {
      std::string name = g.field;
      for (int n = 2; std::count(names.begin(), names.end(), name); ++n) name = g.field + "_" + std::to_string(n);
      names.push_back(name);
      out.fields.emplace_back(name, p.text);
      out.regex += "(?P<" + name + ">" + g.regex + ")";
    } else {
      out.regex += "(?:" + g.regex + ")";
    }
  }
  if (!RE2::PartialMatch(line, RE2(out.regex))) out = Pattern{literal_regex(line), {}};  // never a pattern that misses
  return out;
}

}  // namespace faultline::app::rule_draft
