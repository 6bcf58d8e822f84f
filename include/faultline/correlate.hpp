// correlate: per (rule, key) state machines driven by event time. Hits advance ordered steps (counts, windows,
// optional evidence, absences, resets); completed fingerprints become incidents with deterministic ids, repeats
// become revisions, quiet periods and resolve events end them, and cascade incidents are attributed to the root
// cause that explains them. Deterministic: the same records give the same incidents however they are batched.
// Owned by the pipeline thread; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/decode.hpp"
#include "faultline/incident.hpp"
#include "faultline/match.hpp"

namespace faultline {

struct CorrelatorOptions {
  std::size_t max_stories = 100000;  // live state machines; the oldest idle one is dropped beyond this (counted)
};

struct CorrelatorStats {
  std::uint64_t hits = 0;
  std::uint64_t incidents = 0;        // revisions emitted
  std::uint64_t stories_dropped = 0;  // state machines shed at max_stories
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

  // Consumes one scanned batch; `hits` are those the Scanner found in it. Appends emitted revisions to `out`.
  void process(const RecordBatch& batch, const std::vector<Hit>& hits, std::vector<Incident>& out);
  // Moves the clock to `now` (event time): absences complete, held incidents are released, lifetimes end.
  void advance(Time now, std::vector<Incident>& out);
  // End of input: releases every held incident (nothing more can arrive to change it).
  void finish(std::vector<Incident>& out);

  // Swaps in a new rule set. State machines of rules whose content hash is unchanged survive.
  void replace_rules(std::shared_ptr<const CompiledRules> rules);

  // Snapshot of in-flight state (stories, open incidents), for checkpoints. Versioned JSON.
  std::string save_state() const;
  bool load_state(std::string_view json, std::string* error = nullptr);

  // `scan --explain`: a line of text for every state change.
  void set_trace(std::function<void(const std::string&)> trace);

  std::vector<Incident> open_incidents() const;
  Time now() const;
  // The latest time the lines themselves carried (never moved by advance()).
  Time log_now() const;
  const CorrelatorStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
