// The rule model's own behaviour: diagnostics as text, the by-name indexes of rules and events, templates.
#include <algorithm>
#include <cctype>

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
