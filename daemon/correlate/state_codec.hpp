// state_codec: the correlator's in-flight state (the streams' and nodes' clocks, started stories, open incidents) as versioned JSON, for
// checkpoints. Stories of rules whose content changed are dropped on restore (they start over); open incidents come
// back by rule id. Pipeline thread only.
#pragma once

#include <string>
#include <string_view>

#include "event_clock.hpp"
#include "evidence.hpp"
#include "faultline/result.hpp"
#include "incident_book.hpp"
#include "parts.hpp"
#include "story.hpp"

namespace faultline::correlate {

// What a checkpoint holds, by reference to where it lives.
struct StateParts {
  const ActiveRules& rules;
  Streams& streams;
  StoryTable& stories;
  IncidentBook& book;
  Time wall_now{};  // restored clocks are held to the same bound as the lines' times
};

std::string encode_state(const StateParts& parts);
// Restores into `parts` (on top of what is there). Malformed JSON or a state from a newer build is an Error.
Result<void> decode_state(std::string_view text, const StateParts& parts);

}  // namespace faultline::correlate
