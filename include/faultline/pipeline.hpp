// pipeline: decode → match → correlate for any number of streams, the same for `scan` (files, stdin) and `run`
// (tailed sources). Callers feed bytes per stream; records gather in one batch that is scanned in one Hyperscan
// call and handed to the correlator. Owned by one thread (the pipeline thread); not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/correlate.hpp"
#include "faultline/decode.hpp"
#include "faultline/fingerprint.hpp"
#include "faultline/incident.hpp"
#include "faultline/match.hpp"
#include "faultline/result.hpp"

namespace faultline {

struct PipelineOptions {
  std::size_t batch_bytes = 256 * 1024;  // scan when the batch holds this much text
  CorrelatorOptions correlator;
  DetectorOptions fingerprint;  // failure stories no rule claims (`enabled = false`: typed incidents only)
};

struct PipelineStats {
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t truncated = 0;
  std::uint64_t hits = 0;
  std::uint64_t incidents = 0;
};

// A batch decoded and matched away from the pipeline thread (scan -j): its records, their hits and story anchors,
// and how many bytes of the stream it covers.
struct MatchedBatch {
  RecordBatch batch;
  std::vector<Hit> hits;
  std::vector<AnchorHit> anchors;
  std::uint64_t bytes = 0;          // of the stream, fed to make it
  std::uint64_t lines_before = 0;   // physical lines of the stream before what it was decoded from (added to its own)
};

class Pipeline {
 public:
  using IncidentHandler = std::function<void(const Incident&)>;
  // Called for every hit (rule index, event index) — for per-event metrics and --explain.
  using HitObserver = std::function<void(const Hit&, const RecordBatch&)>;

  Pipeline(std::shared_ptr<const CompiledRules> rules, IncidentHandler on_incident, PipelineOptions options = {});
  ~Pipeline();

  // Registers a stream; returns its index.
  std::uint32_t add_stream(StreamIdentity identity, DecodeOptions decode);
  // The stream is now a new instance (a new container, a new file): decoder state and sequences start over, and the
  // stream takes the new instance's identity (its `instance`, its `restart` label).
  void new_instance(std::uint32_t stream, StreamIdentity identity, std::uint64_t offset = 0);
  // The stream ended for good (Correlator::end_stream, Detector::end_stream): what is batched is correlated, its
  // decoder is freed (flush a pending partial line first: flush_partial), an open failure story is raised or claimed
  // now, and its partial sequences are dropped. Its index is not used again; its decode stats and progress read as a
  // fresh decoder's.
  void end_stream(std::uint32_t stream);
  // Continue a stream from a checkpoint.
  void resume(std::uint32_t stream, std::uint64_t offset, std::uint64_t line);

  void feed(std::uint32_t stream, std::string_view bytes, Time read_time);
  // Emits a pending partial line of the stream (end of input, or the partial-line timeout).
  void flush_partial(std::uint32_t stream, Time read_time);
  // Scans and correlates what is batched. Called automatically when the batch is full.
  void drain();
  // Correlates a batch matched elsewhere, as drain() would have after feeding its bytes: batches of a stream must
  // come in the stream's order, each numbered and decoded as if the ones before it had been fed here. It takes each
  // stream's latest time from what came before it and leaves its own for what follows; it is cleared.
  void correlate(MatchedBatch& matched);
  // The decode options a stream was added with.
  const DecodeOptions& decode_options(std::uint32_t stream) const;
  // Drains, then moves the correlator's clock (absences, held incidents, lifetimes).
  void advance(Time now);
  // Live sources: moves each stream's event clock by the wall time that passed since its lines last moved it. While
  // lines flow a stream's clock follows their own timestamps; in silence it runs on with the wall clock. So following
  // a live log and replaying an old one give the same incidents (windows, holds and lifetimes all run on event time).
  void tick(Time wall_now);
  // End of input: flushes partial lines, settles what each stream's own clock has passed (no clock is moved: the
  // input ending says nothing about time) and releases held incidents.
  void finish(Time read_time);
  // Emits every held incident now (the daemon stopping), without ending the input.
  void release_held();

  void replace_rules(std::shared_ptr<const CompiledRules> rules);

  // How far a stream's bytes are processed: what a checkpoint may record (after drain()).
  struct StreamProgress {
    std::uint64_t committed_offset = 0;  // every byte before it is turned into records and processed
    std::uint64_t committed_line = 1;    // the number of the line that starts there
    bool has_partial = false;            // a line without its newline is pending
  };
  StreamProgress progress(std::uint32_t stream) const;
  const DecodeStats& decode_stats(std::uint32_t stream) const;

  // In-flight correlation state (stories, open incidents) for checkpoints; versioned JSON.
  std::string save_state() const;
  Result<void> load_state(std::string_view json);
  // The detector's fingerprint inventory and its unclassified incidents, saved and restored beside the correlation
  // state (inventory_state_json): after a restart a known failure continues its incident.
  std::string save_fingerprints() const;
  Result<void> load_fingerprints(std::string_view json);
  // `scan --explain`: a line of text for every state change of the correlator.
  void set_trace(std::function<void(const std::string&)> trace);
  // The event clock: where correlation stands (the latest of the streams' clocks, moved on by advance()/tick()).
  Time now() const;
  const CorrelatorStats& correlator_stats() const;
  // The failure stories no rule claims: the inventory of fingerprints and its counters.
  const Detector& detector() const;

  const CompiledRules& rules() const;
  void set_hit_observer(HitObserver observer);
  const PipelineStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
