// evidence: the lines an incident shows — the hits that made it, the context lines before its decisive hits (from
// the batch being read, then from each stream's ring of last lines), in stream order, one entry per line, capped.
// Also the table of streams the correlator knows, whose rings hold those last lines. Pipeline thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "event_clock.hpp"
#include "faultline/decode.hpp"
#include "faultline/incident.hpp"

namespace faultline::correlate {

constexpr std::size_t kContextText = 512;  // a context line's text is cut here
constexpr std::size_t kHitsPerStep = 3;    // evidence lines kept per step: the first ones and the latest

struct ContextLine {
  std::uint64_t line = 0;
  std::uint64_t offset = 0;
  Time time{};
  std::string text;  // already cut at kContextText
};

// A stream's last lines, at most a given number, in a circular buffer. It holds no memory while empty (a std::deque
// keeps a map and a node even then, ~0.6 KiB for each stream that ever was), and a new line, once it is full, takes
// the oldest one's place and its text's capacity.
class LineRing {
 public:
  bool empty() const { return lines_.empty(); }
  std::size_t size() const { return lines_.size(); }
  // The i-th newest line (0: the newest); i < size().
  const ContextLine& from_newest(std::size_t i) const { return lines_[(head_ + lines_.size() - 1 - i) % lines_.size()]; }
  const ContextLine& newest() const { return from_newest(0); }
  // The place of a new newest line: a new one while fewer than `capacity` are held, else the oldest's (to be
  // filled in over it).
  ContextLine& push(std::size_t capacity);
  void clear();    // no lines; the memory is kept for the next ones
  void release();  // no lines, no memory
 private:
  std::vector<ContextLine> lines_;
  std::size_t head_ = 0;  // the oldest line, once the ring is full
};

struct StreamState {
  StreamIdentity id;
  std::uint64_t generation = 0;  // grows with every new instance
  LineRing ring;                 // last lines before the current batch
  std::uint64_t last_line = 0;
  EventClock clock;              // the stream's own time
  std::uint64_t clock_line = 0;  // the last line that moved it (lines are looked at for their time once, in order)
  bool described = false;        // set_identity() named it (not only a restored checkpoint)
  bool ended = false;            // end_stream(): no line of it will come
};

// The streams by index (records carry the index). Asking for an index not seen yet adds it.
class Streams {
 public:
  StreamState& operator[](std::uint32_t index);
  const StreamState& at(std::uint32_t index) const { return streams_.at(index); }
  std::size_t size() const { return streams_.size(); }
  // Describes stream `index`; a clock restored for its name (from a checkpoint) becomes its clock. An index that
  // a checkpoint named otherwise does not keep that stream's clock.
  void set_identity(std::uint32_t index, StreamIdentity identity);
  // A checkpoint's clock of the stream named `name`: given to it now if it is described, else when set_identity
  // names it.
  void restore_clock(const std::string& name, Time now, Time log_now, bool log_time_seen);
  // The stream's name, empty when the index was never seen.
  std::string name_of(std::uint32_t index) const;
  // The first stream of that name, added when there is none (a restored checkpoint names its streams).
  std::uint32_t find_or_add(const std::string& name);
  // The first stream of that name (ended or not), by a lookup: none when no stream has it.
  std::optional<std::uint32_t> find(const std::string& name) const;
  // The stream's logical identity (its name when it has none): what stories are keyed by.
  const std::string& logical_of(std::uint32_t index);  // valid until a stream is added

  // Keeps each stream's last lines of `batch` for context in later batches. `see` gives each the time it is taken
  // at (and moves its stream's clock).
  void keep_last_lines(const RecordBatch& batch, const std::function<Time(const RecordMeta&)>& see);
  // Frees the rings of streams idle for a while on their own clocks (a node that sees thousands of short-lived pods).
  void free_idle_rings();
  // Stream `index` ended (no line of it will come): its ring and keep_last_lines' scratch for it are freed.
  void end(std::uint32_t index);

  // ---- clocks ----
  Time now_of(std::uint32_t index) { return (*this)[index].clock.now(); }
  // The clock a story or incident last seen on stream `index` runs on: its node's for a rule keyed by node only.
  Time now_for(bool node_keyed, std::uint32_t index) { return node_keyed ? node_now_of(index) : now_of(index); }
  // The clock of the stream's node: the latest time any of the node's streams' (bounded) clocks reached. Node-keyed
  // rules run on it.
  Time node_now_of(std::uint32_t index);
  // Call after the stream's clock moved: its node's clock follows.
  void clock_moved(std::uint32_t index);
  // The latest of the streams' clocks.
  Time latest() const;
  // The latest of every clock, the nodes' included (a node's stays ahead of a stream whose time went back).
  Time latest_of_all() const;
  // Node clocks by node name (checkpoints).
  const std::map<std::string, Time, std::less<>>& node_clocks() const { return node_clocks_; }
  void restore_node(const std::string& node, Time now) { node_clocks_[node] = now; }
  // The name a stream's node is known by ("local" when it has no node label), as node-keyed stories are.
  std::string node_name(std::uint32_t index);

 private:
  // A stream was named `name` (not empty) at `index`: the first of that name is the lower index.
  void name_taken(const std::string& name, std::uint32_t index);

  std::vector<StreamState> streams_;
  // Name → the first stream of that name (names that are not empty): the incidents of a stream are found by its
  // name without a walk over every stream (a scan of 20,000 files has 20,000).
  std::unordered_map<std::string, std::uint32_t> first_named_;
  std::vector<std::vector<std::size_t>> newest_;  // keep_last_lines' scratch: per stream, its last records
  std::vector<std::uint32_t> present_;            // keep_last_lines' scratch: the batch's streams
  Time ring_due_ = Time::max();  // no ring goes idle before this (a lower bound): the sweep is skipped till then
  std::map<std::string, Time, std::less<>> node_clocks_;  // node → the latest time of its streams' clocks
  struct RestoredClock {
    Time now{}, log_now{};
    bool log_time_seen = false;
  };
  std::map<std::string, RestoredClock> restored_;  // by stream name, for streams not described yet
};

// The one way an EvidenceLine is made: from anything with a line, offset and time (a record, a ring line, a hit),
// its text cut at `limit` and marked truncated when cut. set_evidence_line fills in one that exists (all but its
// event), its strings' capacity used again.
template <class At>
void set_evidence_line(EvidenceLine& e, const StreamState& stream, const At& at, std::string_view text,
                       std::size_t limit) {
  e.stream.assign(stream.id.name);
  e.line = at.line;
  e.offset = at.offset;
  e.time = at.time;
  e.truncated = text.size() > limit;
  e.text.assign(text.substr(0, limit));
}

template <class At>
EvidenceLine evidence_line(const StreamState& stream, const At& at, std::string_view text, std::size_t limit) {
  EvidenceLine e;
  set_evidence_line(e, stream, at, text, limit);
  return e;
}

// Appends the up to `want` lines of the same stream before record `rec` of `batch` (then from the stream's ring),
// oldest first.
void collect_context(Streams& streams, const RecordBatch& batch, std::uint32_t rec, std::size_t want,
                     std::vector<EvidenceLine>& into);

// A step's evidence: the first kHitsPerStep - 1 lines and the latest. The place of the step's next line: a new one,
// or the latest's (to be filled in over it, its strings' capacity used again: a phase marker hits thousands of lines).
EvidenceLine& step_evidence_slot(std::vector<EvidenceLine>& lines);

// An incident's evidence from all the lines its story gathered: stream order, one entry per line (a line that
// matched an event wins over the same line as context), at most kMaxEvidenceLines (context lines dropped first).
std::vector<EvidenceLine> assemble_evidence(std::vector<EvidenceLine> all);

// `ev` with `add` in its place, unless that line is there already; the oldest line goes beyond the cap.
std::vector<EvidenceLine> merge_evidence(std::vector<EvidenceLine> ev, const EvidenceLine& add);

}  // namespace faultline::correlate
