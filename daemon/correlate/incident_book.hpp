// incident_book: the open incident of each (rule, key). Stories raise it and revise it (repeats, escalations, late
// evidence); it is held while optional evidence may still arrive (tolerance) or while a root cause may still be
// printed (cascade), released by line count or event time; it resolves on a resolve event or after its quiet
// period, and is then forgotten. What the book holds is bounded in bytes: beyond the bound a firing incident is
// resolved early. Every revision that goes out is appended to the call's output. Pipeline thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attribution.hpp"
#include "evidence.hpp"
#include "faultline/correlate.hpp"
#include "keys.hpp"
#include "parts.hpp"
#include "story.hpp"

namespace faultline::correlate {

// Why and until when an incident is kept back instead of emitted.
struct Held {
  bool held = false;
  Time until_time{};  // on the clock of the incident's stream (its node's, for a node-keyed rule)
  // Live sources: on the steady clock too, so that a stream whose clock stands still (or lags hours behind) never
  // keeps a hold longer than its duration. Unset: event time only (replay).
  std::optional<std::chrono::steady_clock::time_point> until_steady;
  std::uint64_t until_line = 0;
  std::uint32_t stream = 0;
  bool cascade = false;  // held for a root cause, not for late evidence
  // Held for late evidence and let go when its tolerance passed, not once the evidence came (--explain says so of
  // evidence that arrives after).
  bool released_by_tolerance = false;
};

struct OpenIncident {
  Incident incident;
  std::uint32_t rule = 0;
  Held hold;
  bool emitted = false;   // at least one revision went out
  std::uint32_t stream = 0;
  Time last_completion{};
  bool boundary = false;  // a reset or a new instance happened since the last completion
  std::size_t bytes = 0;  // what the book counted for it when it last changed
};

class IncidentBook {
 public:
  using Map = std::map<StoryKey, OpenIncident, StoryKeyOrder>;  // ordered: deterministic release

  // `wall_bound`: holds also end when their duration passed on the steady clock (live sources). `max_bytes`: what
  // the open incidents may hold (CorrelatorOptions::max_open_incident_bytes).
  IncidentBook(const ActiveRules& rules, Streams& streams, Attribution& attribution, const Trace& trace,
               CorrelatorStats& stats, bool wall_bound, std::size_t max_bytes)
      : rules_(rules), streams_(streams), attribution_(attribution), trace_(trace), stats_(stats),
        wall_bound_(wall_bound), max_bytes_(max_bytes) {}

  // Raises or revises the open incident of story `s` at `severity`; `completion` counts a full fingerprint.
  void raise(Story& s, Severity severity, bool completion, Time at, Call& call);
  // Story `s` saw optional evidence `line`: a held incident of it gains it, and goes out once nothing is missing.
  void late_evidence(const Story& s, const EvidenceLine& line, Call& call);
  void resolve(OpenIncident& oi, Time at, const char* why, Call& call);
  // A root cause was remembered (raised here or outside the rules): held cascades it explains point at it.
  void root_cause_arrived();

  // Releases held incidents whose line or time deadline a hit at (stream, line, t) passes, and resolves quiet ones,
  // among those that run on that stream's clock (or its node's).
  void settle_before(std::uint32_t stream, std::uint64_t line, Time t, Call& call);
  // Releases held incidents whose line tolerance their stream's last line has passed.
  void release_lines_passed(Call& call);
  // Releases held incidents whose hold has passed on their own clock (or on the steady clock, for live sources).
  void release_time_passed(Call& call);
  // Resolves incidents quiet on their own clocks and forgets them.
  void expire(Call& call);
  // End of input: nothing more can arrive to change a held incident.
  void release_all(Call& call);
  // A new instance of `stream`: the next completion there is a repeat, not the same occurrence printed again.
  void mark_boundary(std::uint32_t stream);
  // The time of `stream` went back (a new epoch): its holds end (their deadlines were in the old epoch's time) and
  // the next completion there is a repeat.
  void time_went_back(std::uint32_t stream, Call& call);

  OpenIncident* find(StoryKeyView key);
  // A restored incident.
  void put(StoryKey key, OpenIncident oi) { open_[std::move(key)] = std::move(oi); }
  // After a reload: incidents survive by rule id (they are facts already reported), under their rule's new index.
  void rekey(const std::map<std::string, std::uint32_t>& new_index);
  // Rebuilds the expiry index, the held count and the byte count (after a reload or a restore).
  void rebuild_index();
  const Map& all() const { return open_; }

 private:
  void release(OpenIncident& oi, const char* why, Call& call);
  void emit(OpenIncident& oi, Call& call);
  void schedule(const StoryKey& key, const OpenIncident& oi);
  // When `oi` goes quiet unless it is seen again: its last sighting and its rule's quiet period.
  Time quiet_due(const OpenIncident& oi) const { return oi.incident.last_seen + rules_[oi.rule].lifetime.quiet; }
  // Counts `oi` (of `key`) again after it changed.
  void recount(const StoryKey& key, OpenIncident& oi);
  // Forgets `it` (its bytes with it).
  Map::iterator forget(Map::iterator it);
  // Brings the book within its byte bound: resolved incidents are forgotten first, then firing ones are resolved
  // early, the one due to go quiet soonest first. Held incidents and `keep` (the one just raised or revised) stay.
  void keep_within_bound(const StoryKey& keep, Call& call);
  void attribute(OpenIncident& oi) { attribution_.attribute(oi.incident, oi.rule, oi.stream); }
  void hold_if_needed(OpenIncident& oi, const Story& s, Time at, const Call& call);
  bool hold_passed(const OpenIncident& oi, Time now, const Call& call) const;
  // Whether `oi` runs on the clock a hit on `stream` moves (the same stream, or its node for node-keyed rules).
  bool on_clock_of(const OpenIncident& oi, std::uint32_t stream);
  Time now_of(const OpenIncident& oi) { return streams_.now_for(node_keyed(rules_[oi.rule]), oi.stream); }
  // Resolves the incidents that `clock_of` says are quiet (nullopt: not looked at now), and forgets them.
  template <class ClockOf>
  void expire_by(Time bound, ClockOf&& clock_of, Call& call);

  const ActiveRules& rules_;
  Streams& streams_;
  Attribution& attribution_;
  const Trace& trace_;
  CorrelatorStats& stats_;
  bool wall_bound_ = false;
  Map open_;
  std::multimap<Time, StoryKey> expiry_;  // when an open incident may go quiet → its key
  std::size_t held_ = 0;                  // open incidents currently held
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;  // the sum of the open incidents' `bytes`
};

}  // namespace faultline::correlate
