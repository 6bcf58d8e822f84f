// The shape of a failure story, as the Detector reads it line by line: which lines continue a story (frames, dump
// lines, chain markers), which anchor hits may open one, which exceptions are no failure, and the severity a closed
// story is raised at (docs/fingerprints.md, "Severity"). Pure functions; private to the fingerprint room.
#pragma once

#include <string_view>
#include <vector>

#include "faultline/fingerprint.hpp"
#include "faultline/match.hpp"

namespace faultline::fingerprint_detail {

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && (is_blank(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

inline bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

inline bool below_error(Level l) {
  return l == Level::trace || l == Level::debug || l == Level::info || l == Level::warning;
}

// Anchors that report the end of a process rather than a failure's cause: when one follows a story closely, it is
// that story's consequence.
bool consequence_anchor(StoryAnchor a);
// Anchors after which the process is gone.
bool fatal_anchor(StoryAnchor a);
// Anchors that mark a frame: they continue a story (a traceback's body) and open one only where no head was logged.
bool frame_anchor(StoryAnchor a);
// Is this line (logger prefix removed) part of a failure story: a frame, a dump line, a chain marker?
bool story_line(std::string_view stripped);
// Exceptions that report a client or an operator going away, not a failure (CancelledError, ...).
bool benign_type(std::string_view type);
// Is the story's next unindented line part of it: a traceback's exception, a panic's message on its own line?
bool awaits_message(const std::vector<StoryAnchor>& anchors, std::string_view stripped);
// May a line with these anchors begin a story (the anchors' literal text is common enough to need a second look)?
bool opens_story(const std::vector<StoryAnchor>& anchors, std::string_view text, Level level);

// What severity needs to know of a closed story.
struct StoryFacts {
  const std::vector<StoryAnchor>& anchors;
  std::string_view context_text;  // the line before the story
  bool first_unprefixed = false;  // its first line has no logger prefix
  Level first_level = Level::unknown;
};
// info: the server survived; critical: the process or engine ended; else warning.
Severity story_severity(const StoryFacts& story, const FailureSignature& sig, Level level,
                        const std::vector<std::string_view>& texts);

}  // namespace faultline::fingerprint_detail
