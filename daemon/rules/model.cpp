// The rule model's own behaviour: diagnostics as text, the by-name indexes of rules and events, templates.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <utility>

#include "faultline/rules.hpp"

namespace faultline {

namespace {

using NameIndex = std::vector<std::pair<std::string, std::uint32_t>>;

template <typename T, typename Name>
NameIndex build(const std::vector<T>& items, Name name) {
  NameIndex index;
  index.reserve(items.size());
  for (std::uint32_t i = 0; i < items.size(); ++i) index.emplace_back(name(items[i]), i);
  // Stable: with a repeated name (an error the loader reports) the first one wins, as a scan would find it.
  std::stable_sort(index.begin(), index.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return index;
}

// The position the index gives for `key`, checked against the items, else a scan.
template <typename T, typename Name>
int lookup(const NameIndex& index, const std::vector<T>& items, std::string_view key, Name name) {
  auto it = std::lower_bound(index.begin(), index.end(), key,
                             [](const auto& entry, std::string_view k) { return entry.first < k; });
  if (it != index.end() && it->first == key && it->second < items.size() && name(items[it->second]) == key) {
    return static_cast<int>(it->second);
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (name(items[i]) == key) return static_cast<int>(i);
  }
  return -1;
}

const std::string& event_name(const EventPattern& e) { return e.name; }
const std::string& rule_id(const Rule& r) { return r.id; }

}  // namespace

bool any_unreadable(const std::vector<Diagnostic>& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) { return d.unreadable; });
}

bool LoadResult::ok() const {
  return std::none_of(diagnostics.begin(), diagnostics.end(),
                      [](const Diagnostic& d) { return d.kind == Diagnostic::Kind::error; });
}

void Rule::index_events() { events_by_name_ = build(events, event_name); }

int Rule::event_index(std::string_view name) const { return lookup(events_by_name_, events, name, event_name); }

const EventPattern* Rule::find_event(std::string_view name) const {
  int i = event_index(name);
  return i < 0 ? nullptr : &events[static_cast<std::size_t>(i)];
}

void RuleSet::build_index() {
  rules_by_id_ = build(rules, rule_id);
  for (auto& r : rules) r.index_events();
}

const Rule* RuleSet::find(std::string_view id) const {
  int i = lookup(rules_by_id_, rules, id, rule_id);
  return i < 0 ? nullptr : &rules[static_cast<std::size_t>(i)];
}

namespace {

struct Placeholder {
  std::string_view name;
  std::optional<std::string_view> fallback;
  std::size_t end = 0;  // one past the closing '}'
};

// The placeholder opening at text[i] == '{', if it is one.
std::optional<Placeholder> placeholder_at(std::string_view text, std::size_t i) {
  auto close = text.find('}', i + 1);
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view inner = text.substr(i + 1, close - i - 1);
  auto bar = inner.find('|');
  std::string_view name = inner.substr(0, bar);
  bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  if (!plain) return std::nullopt;
  Placeholder p;
  p.name = name;
  if (bar != std::string_view::npos) p.fallback = inner.substr(bar + 1);
  p.end = close + 1;
  return p;
}

constexpr int kMaxSegmentDepth = 8;

bool opens_segment(std::string_view text, std::size_t i) { return text.compare(i, 2, "[[") == 0; }
bool closes_segment(std::string_view text, std::size_t i) { return text.compare(i, 2, "]]") == 0; }

// One pass over the template from `i` to its end, or to the `]]` closing a segment when `depth` > 0; returns the
// position after what it read. Visitors: `text(piece)`, `field(placeholder, offset)` and
// `segment(start, depth)` which reads a nested segment and returns where it ended.
struct Walker {
  std::string_view text;

  template <typename Sink>
  std::size_t walk(std::size_t i, int depth, Sink& sink) const {
    while (i < text.size()) {
      if (opens_segment(text, i)) {
        if (depth >= kMaxSegmentDepth) {
          sink.too_deep(i);  // read as text: recursion stays bounded whatever the rule file holds
        } else {
          i = sink.segment(*this, i + 2, depth + 1);
          continue;
        }
      }
      if (depth > 0 && closes_segment(text, i)) return i + 2;
      if (text[i] == '{') {
        if (auto p = placeholder_at(text, i)) {
          sink.field(*p, i);
          i = p->end;
          continue;
        }
      }
      sink.literal(text[i]);
      ++i;
    }
    if (depth > 0) sink.unclosed(depth);
    return i;
  }
};

struct Renderer {
  const Fields& fields;
  std::string out;
  bool missing = false;  // a placeholder without a default named an absent field

  void literal(char c) { out += c; }
  void field(const Placeholder& p, std::size_t) {
    if (const auto* v = find_field(fields, p.name); v && !v->empty()) {
      out += *v;
    } else if (p.fallback) {
      out += *p.fallback;
    } else {
      missing = true;
    }
  }
  std::size_t segment(const Walker& w, std::size_t start, int depth) {
    Renderer inner{fields, {}, false};
    std::size_t next = w.walk(start, depth, inner);
    if (!inner.missing) out += inner.out;
    return next;
  }
  void unclosed(int) {}
  void too_deep(std::size_t) {}
};

struct Parser {
  TemplateSyntax syntax;
  std::vector<std::size_t> opened;  // offsets of the `[[` being read
  bool depth_reported = false;

  void literal(char) {}
  void field(const Placeholder& p, std::size_t offset) {
    TemplatePlaceholder tp;
    tp.name = std::string(p.name);
    if (p.fallback) tp.fallback = std::string(*p.fallback);
    tp.offset = offset;
    syntax.placeholders.push_back(std::move(tp));
  }
  std::size_t segment(const Walker& w, std::size_t start, int depth) {
    opened.push_back(start - 2);
    std::size_t next = w.walk(start, depth, *this);
    opened.pop_back();
    return next;
  }
  void unclosed(int) {
    if (!opened.empty()) syntax.problems.push_back({opened.back(), "optional segment '[[' is never closed with ']]'"});
  }
  void too_deep(std::size_t offset) {
    if (std::exchange(depth_reported, true)) return;
    syntax.problems.push_back({offset, "optional segments nest more than " + std::to_string(kMaxSegmentDepth) + " deep"});
  }
};

}  // namespace

std::string expand_template(std::string_view text, const Fields& fields) {
  Renderer r{fields, {}, false};
  r.out.reserve(text.size());
  Walker{text}.walk(0, 0, r);
  return std::move(r.out);
}

TemplateSyntax parse_template(std::string_view text) {
  Parser p;
  Walker{text}.walk(0, 0, p);
  return std::move(p.syntax);
}

std::vector<std::string> Rule::field_names() const {
  std::vector<std::string> names;
  for (const auto& e : events) {
    names.insert(names.end(), e.captures.begin(), e.captures.end());
    for (const auto& [k, v] : e.set) names.push_back(k);
    for (const auto& [field, transform] : e.normalise) {
      if (transform == FieldTransform::sm_arch) names.push_back(field + "_gpu");  // the family it adds
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace faultline
