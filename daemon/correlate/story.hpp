// story: one (rule, key) state machine — a cursor over the rule's required steps, optional evidence beside it,
// counts and windows, `after` conditions, absences, resets, and a short memory of recent hits so that a line that
// arrives a little out of order (stdout and stderr interleave) still counts. The story raises and revises its
// incident through the IncidentBook. Pipeline thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "evidence.hpp"
#include "faultline/correlate.hpp"
#include "keys.hpp"
#include "parts.hpp"

namespace faultline::correlate {

class IncidentBook;

constexpr std::size_t kRecentHits = 32;  // remembered for out-of-order tolerance

// A hit as a story keeps it (the batch it came from is gone by the time a late partner arrives).
struct RecentHit {
  std::uint32_t event = 0;
  std::uint32_t stream = 0;
  std::uint64_t line = 0;
  std::uint64_t offset = 0;
  Time time{};
  std::string text;
  Fields fields;
  bool explained = false;  // --explain said once that the tolerance window did not take it
};

// The events a story has seen (what `after` asks about), exact for any number of events.
class EventSet {
 public:
  bool contains(std::size_t event) const { return event < bits_.size() && bits_[event]; }
  void insert(std::size_t event) {
    if (event >= bits_.size()) bits_.resize(event + 1);
    bits_[event] = true;
  }
  void clear() { bits_.clear(); }
  // Checkpoint form: events 0–63 as a mask (the form older checkpoints have), the others by index.
  std::uint64_t low_mask() const;
  std::vector<std::size_t> high_events() const;
  static EventSet from(std::uint64_t low_mask, const std::vector<std::size_t>& high_events);

 private:
  std::vector<bool> bits_;
};

// The times of a step's latest hits, oldest first. Allocates nothing until a time goes in: every step of every live
// story has one, and most are never used (a std::deque allocates ~600 bytes as it is made).
class TimeQueue {
 public:
  bool empty() const { return head_ == times_.size(); }
  std::size_t size() const { return times_.size() - head_; }
  Time front() const { return times_[head_]; }
  void push_back(Time t) { times_.push_back(t); }
  // Amortised O(1): the spent front is cut off once it is half the vector.
  void pop_front() {
    if (++head_ * 2 < times_.size()) return;
    times_.erase(times_.begin(), times_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  void clear() {
    times_.clear();
    head_ = 0;
  }
  std::vector<Time>::const_iterator begin() const { return times_.begin() + static_cast<std::ptrdiff_t>(head_); }
  std::vector<Time>::const_iterator end() const { return times_.end(); }

 private:
  std::vector<Time> times_;
  std::size_t head_ = 0;
};

struct StepState {
  std::uint32_t hits = 0;
  TimeQueue times;  // for count + within
  std::vector<EvidenceLine> lines;
};

struct Story {
  std::uint32_t rule = 0;
  std::string key;
  std::uint32_t stream = 0;
  std::uint64_t generation = 0;
  std::size_t cursor = 0;  // index of the next required step
  std::vector<StepState> steps;
  Time progress_time{};    // when the last required step completed
  bool started = false;
  EventSet seen_events;
  Fields fields;
  std::vector<EvidenceLine> context;  // context lines of decisive hits
  std::vector<RecentHit> recent;      // oldest first, at most kRecentHits; tolerant rules only
  std::string first_decisive;         // "instance@offset:line" of the first hit that counted
  Time first_decisive_time{};
  std::optional<Severity> raised;     // severity this story raised its incident at
  Time last_activity{};

  // A hit of `event` reached the story: it has begun, and `after` conditions see the event.
  void saw(std::uint32_t event) {
    started = true;
    seen_events.insert(event);
  }
  // Every line the story gathered, for its incident's evidence: context lines, then each step's hits.
  std::vector<EvidenceLine> evidence() const;
  // Back to its start (as make_story leaves it) under the same rule and key, keeping the capacity of its containers
  // (a fresh story allocates a deque per step): a story restarts each time its rule fires, a window passes, a reset_on
  // event hits or its stream begins a new instance.
  void restart(const Rule& r, std::uint32_t stream_index, std::uint64_t stream_generation);
};

// A story at its start: no step seen, the cursor on the first required step.
Story make_story(const Rule& r, std::uint32_t rule_index, std::string key, std::uint32_t stream,
                 std::uint64_t generation);

// The rule's first required step at or after `from` (the sequence's size when none is left).
std::size_t first_required(const Rule& r, std::size_t from);

// True when an optional step before the rule's last required step has not been seen: an incident raised now may
// still gain that evidence.
bool missing_optional(const Story& s, const Rule& r);

// How long the event of the absence step the story waits at must stay away; none when its next step is no absence.
std::optional<Duration> absence_awaited(const Story& s, const Rule& r);

// The live stories, by (rule, key). Bounded: beyond max_stories the least recently active one is shed (counted).
class StoryTable {
 public:
  using Map = std::unordered_map<StoryKey, Story, StoryKeyHash, StoryKeyEqual>;

  StoryTable(const ActiveRules& rules, Streams& streams, CorrelatorStats& stats, std::size_t max_stories)
      : rules_(rules), streams_(streams), stats_(stats), max_stories_(max_stories) {}

  // The key text a hit of rule `r` on `stream` with `fields` is correlated under, written over `key` (a buffer used
  // for hit after hit).
  void key_for(const Rule& r, std::uint32_t stream, const Fields& fields, std::string& key);
  // The story of (rule, key), begun on `stream` when there is none.
  Story& get(std::uint32_t rule, std::string_view key, std::uint32_t stream);
  // A restored story (replaces one of the same key).
  void put(Story s);
  // After a reload: stories of rules that `survives` maps to a new index are kept under it, the others dropped.
  template <class Survives>
  void rekey(Survives&& survives) {
    Map kept;
    for (auto& [k, s] : stories_) {
      if (auto n = survives(s.rule)) {
        s.rule = *n;
        kept.emplace(StoryKey{*n, s.key}, std::move(s));
      }
    }
    stories_ = std::move(kept);
  }

  // Stream `stream` ended: its stories that only its lines could move on are dropped (a rule keyed by the stream,
  // not waiting out an absence). Returns how many.
  std::size_t drop_ended(std::uint32_t stream);

  Map& all() { return stories_; }
  const Map& all() const { return stories_; }

 private:
  void shed_oldest();

  const ActiveRules& rules_;
  Streams& streams_;
  CorrelatorStats& stats_;
  std::size_t max_stories_;
  Map stories_;
};

// Moves stories through their rules' steps.
class StoryMachine {
 public:
  StoryMachine(const ActiveRules& rules, Streams& streams, IncidentBook& book, const Trace& trace)
      : rules_(rules), streams_(streams), book_(book), trace_(trace) {}

  // Applies one hit. `record` is its index in call.batch when it comes from the batch (context lines are read
  // around it), none when it is a remembered early hit. Returns true when the hit counted for a required step.
  bool apply(Story& s, const RecentHit& h, std::optional<std::uint32_t> record, Call& call);
  // The story's current required step is done at `at`: move on, raise what the step or the rule says.
  void complete_step(Story& s, Time at, Call& call);
  // Back to the start (progress, evidence, fields and memory dropped).
  void reset(Story& s, const char* why);
  // Absence steps whose wait has passed on their story's clock (its stream's, or its node's) complete, in key order.
  void complete_absences(StoryTable& table, Call& call);
  // "instance@offset:line" of a hit: the part of an incident id that tells occurrences apart.
  std::string position_of(const RecentHit& h);

  // Remembers `h`, a hit of a tolerant rule that did not count: it may be the early half of an out-of-order pair.
  // Hits of its stream that lie more lines behind it than the rule's tolerance are forgotten first (no completion
  // can take them any more), then the oldest while kRecentHits are kept.
  void remember_early(Story& s, const RecentHit& h);

  // --explain (call only with the trace on): why a hit that apply() did not count never will. `forgotten`: a
  // tolerant rule's memory of early hits was full and this, the oldest, was dropped; otherwise a hit of a later
  // step of a rule without tolerance, which is not taken once its earlier step completes.
  void explain_not_counted(const Story& s, const RecentHit& h, bool forgotten) const;

 private:
  bool after_ok(const Story& s, const Rule& r, const Step& st) const;
  std::string tolerance_text(const Rule& r) const;
  void set_evidence(EvidenceLine& e, const RecentHit& h, const EventPattern& ev);  // h as the evidence of `ev`

  const ActiveRules& rules_;
  Streams& streams_;
  IncidentBook& book_;
  const Trace& trace_;
};

}  // namespace faultline::correlate
