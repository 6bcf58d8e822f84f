// rule_draft_pattern: the decisive pattern of a drafted rule (`faultline rules draft`, cmd_rules_draft.cpp) from
// the story's terminal line — its logger prefix off, escaped, what the fingerprint's template varies on generalised
// as regex classes, the first few as RE2 captures (docs/fingerprints.md, section 6). Pure functions; app room only.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace faultline::app::rule_draft {

struct Pattern {
  std::string regex;
  std::vector<std::pair<std::string, std::string>> fields;  // capture name → the value in the drafted-from line
};

// The pattern for `terminal` (a raw log line): it always matches the line's message.
Pattern pattern_of(std::string_view terminal);

// The message with every run of blanks as one space, none at the end.
std::string collapse_spaces(std::string_view s);

}  // namespace faultline::app::rule_draft
