// correlate: per (rule, key) state machines driven by event time. Hits advance ordered steps (counts, windows,
// optional evidence, absences, resets); completed fingerprints become incidents with deterministic ids, repeats
// become revisions, quiet periods and resolve events end them, and cascade incidents are attributed to the root
// cause that explains them. Deterministic: the same records give the same incidents however they are batched.
// Owned by the pipeline thread; not thread-safe.
//
// The room's words:
//   story          the state of one rule for one key (a stream, a node, captured fields): which steps were seen,
//                  with what evidence; it begins at the rule's first required step and resets after it fires.
//   raised         a story raised its incident when it completed, or reached a step with a severity (an early
//                  warning); raising again revises the same open incident (escalation, repeat) instead of a new one.
//   held           a raised incident not emitted yet: waiting for optional evidence that may arrive a little out of
//                  order (the rule's tolerance) or for a root cause printed after it (cascade); released by line
//                  count, its stream's event time (live sources: or wall time), end of input or the daemon stopping.
//   event clock    each stream's own "now", moved by its lines within bounds (event_clock.hpp); a node-keyed
//                  rule's is the latest of its node's streams' clocks.
//   epoch          a stream's time went back far (a restart replaying its log, a clock corrected): its clock goes
//                  back too, and what follows is a new stretch of the stream (stories start over, repeats count).
//   boundary       a reset or a new instance of the stream since an incident's last completion: the next completion
//                  is a repeat, not the same failure printed again.
//   decisive line  a hit that counted for a required step (or an optional step with a severity); the first one
//                  fixes the incident's id and first_seen.
//   cascade        a rule whose incidents are symptoms of some other failure: held for a while, then emitted pointing
//                  at the incident that explains them, if any.
//   root cause     the incident that explains another (caused_by): a non-cascade incident on a related stream (same
//                  stream, same pod, or same node for node-keyed rules) close in time — of higher priority, unless
//                  the one explained is a cascade; the closer (own stream or pod) first. A rule's attribution limits
//                  what it explains (attribution.hpp); an unclassified failure explains cascades only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/clock.hpp"
#include "faultline/decode.hpp"
#include "faultline/incident.hpp"
#include "faultline/match.hpp"
#include "faultline/result.hpp"

namespace faultline {

struct CorrelatorOptions {
  std::size_t max_stories = 100000;  // live state machines; the oldest idle one is dropped beyond this (counted)
  // What the open incidents may hold (their text and evidence, as heap_bytes counts it). Beyond it, incidents already
  // resolved are forgotten first, then firing ones are resolved early, the one due to go quiet soonest first
  // (counted); held incidents and the one just raised or revised are kept.
  std::size_t max_open_incident_bytes = std::size_t{16} << 20;
  // Stamps Incident::read_at (the incident latency metric starts there); its wall time bounds the times lines may
  // give their stream's clock (see event_clock.hpp). Must outlive the correlator.
  const Clock* clock = &SystemClock::instance();
  // Live sources: a hold (tolerance, cascade) also ends once its duration has passed on the clock's steady time, so
  // a stream whose time stands still or lags never keeps an incident back longer than that. Off for replays, whose
  // results must not depend on how fast the input is read.
  bool holds_bounded_by_wall = false;
};

struct CorrelatorStats {
  std::uint64_t hits = 0;
  std::uint64_t incidents = 0;        // revisions emitted
  std::uint64_t stories_dropped = 0;  // state machines shed at max_stories
  std::uint64_t incidents_resolved_early = 0;  // firing incidents resolved at max_open_incident_bytes
  std::uint64_t times_rejected_future = 0;  // lines dated too far ahead of the wall clock: kept their stream's time
  std::uint64_t times_went_back = 0;        // lines far before their stream's time: a new epoch of the stream
};

class Correlator {
 public:
  explicit Correlator(std::shared_ptr<const CompiledRules> rules, CorrelatorOptions options = {});
  ~Correlator();
  Correlator(Correlator&&) noexcept;
  Correlator& operator=(Correlator&&) noexcept;

  // Describes stream `index` (records carry the index). Call before its first records.
  void set_stream(std::uint32_t index, StreamIdentity identity);
  // The stream started a new instance (a new container or file): no sequence continues across it.
  void new_instance(std::uint32_t index, std::string instance);
  // The stream ended for good (its last file was deleted with nothing after it: a pod that is gone). Its stories
  // that only its own lines could move on are dropped, and its recent lines freed; a story waiting out an absence
  // still completes, and its open incidents still go quiet on its clock. A later file of the same logical stream is
  // described as a new stream.
  void end_stream(std::uint32_t index);

  // Consumes one scanned batch; `hits` are those the Scanner found in it. Appends emitted revisions to `out`.
  // Each stream has its own event clock, moved (within bounds) by its lines.
  void process(const RecordBatch& batch, const std::vector<Hit>& hits, std::vector<Incident>& out);
  // Moves every stream's clock to at least `now` (event time): absences complete, held incidents are released,
  // lifetimes end.
  void advance(Time now, std::vector<Incident>& out);
  // Live sources: each stream's clock runs on by the wall time that passed since its lines last moved it, then
  // deadlines are settled as in advance().
  void tick(Time wall_now, std::vector<Incident>& out);
  // End of input: deadlines that each stream's own clock has passed are settled (no clock is moved), then every held
  // incident is released (nothing more can arrive to change it).
  void finish(std::vector<Incident>& out);
  // Releases every held incident now (the daemon stopping: a hold must not outlive the process that keeps it).
  void release_held(std::vector<Incident>& out);
  // Incidents raised outside the rules on these streams (the fingerprint detector's `unclassified-failure`): root
  // causes that cascade incidents may be attributed to, held ones now and later ones within their window. They
  // never explain a typed incident, and one at info (a failure the server survived) explains nothing. Call before
  // the hold of a cascade they explain ends (the pipeline runs the detector first).
  void add_root_causes(const std::vector<Incident>& incidents);

  // Swaps in a new rule set. State machines of rules whose content hash is unchanged survive.
  void replace_rules(std::shared_ptr<const CompiledRules> rules);

  // Snapshot of in-flight state (stories, open incidents), for checkpoints. Versioned JSON.
  std::string save_state() const;
  // Restores a snapshot on top of the current state. Malformed JSON or a newer version is an Error.
  Result<void> load_state(std::string_view json);

  // `scan --explain`: a line of text for every state change.
  void set_trace(std::function<void(const std::string&)> trace);

  std::vector<Incident> open_incidents() const;
  // The latest of the streams' clocks (or of what advance() was given).
  Time now() const;
  // The latest time the lines themselves carried, over all streams (never moved by advance()).
  Time log_now() const;
  const CorrelatorStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
