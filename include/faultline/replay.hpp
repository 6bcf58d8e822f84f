// replay: recorded input — files, byte strings, test lines — fed through a Pipeline on a virtual clock, with the
// incidents it raises collected as the latest revision of each, in order of first emission. The one driver behind
// `faultline scan`, `faultline test`, the unit tests and the benchmark. Owned by one thread; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "faultline/incident.hpp"
#include "faultline/pipeline.hpp"

namespace faultline {

// One whole input held in memory (a mapped file), for Replay::feed_whole().
struct WholeInput {
  std::uint32_t stream = 0;
  std::string_view bytes;  // all of it, valid until feed_whole() returns
  Time read_time{};        // the time it is read at (what start() is given before it is fed)
  // Called, in order, with each range [from, to) of `bytes` that no batch refers to any more, and whether some of
  // it was read where it is (a mapped file then lets those pages go; when every byte came through `copy`, none was
  // faulted in and there is nothing to give back). May be empty.
  std::function<void(std::size_t from, std::size_t to, bool read_in_place)> done;
  // Copies bytes [offset, offset + size) of `bytes` into `out`; false if it could not (the file shrank, a read
  // failed). May be empty. When set, each part is decoded from such a copy, in a buffer that is used again, and
  // `bytes` is touched only where a part begins or where a line runs past its copy: reading a file's pages through
  // the page cache costs a fraction of faulting them into the process (a first pass over a 765 MB mapped file,
  // 390-420 ms of CPU; read in 4 MiB pieces, 100 ms).
  std::function<bool(std::size_t offset, char* out, std::size_t size)> copy;
};

struct ReplayOptions {
  Time start{};  // the virtual clock at first: the read time of what is fed before start()/after()/advance()
  PipelineOptions pipeline;
  // Every revision, as it is emitted (`scan --json` prints them; unit tests keep them all). May be empty.
  std::function<void(const Incident&)> on_incident;
};

class Replay {
 public:
  explicit Replay(std::shared_ptr<const CompiledRules> rules, ReplayOptions options = {});
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // Registers a stream. Times its lines print without a date are read against the clock as it is now, unless
  // `decode.time.reference` is set.
  std::uint32_t add_stream(StreamIdentity identity, DecodeOptions decode = {});
  // Bytes of a stream, read at the clock's time; lines are scanned and correlated as batches fill.
  void feed(std::uint32_t stream, std::string_view bytes);
  // One line of a stream (a newline is added), scanned and correlated at once.
  void line(std::uint32_t stream, std::string_view text);
  // End of a stream's input: a last line without its newline becomes a record, and all of it is processed.
  void end_stream(std::uint32_t stream);
  // A stream that gets no more input at all (a file `scan` has read to its end): end_stream, then the pipeline lets go
  // of what it holds for the stream, as for a log that is gone (Pipeline::end_stream). Its unclassified story is
  // raised now, the partial sequences that only its own lines could move on are dropped; what waits on time (an
  // absence, an open incident's quiet) and what is keyed wider than the stream (a node) stays.
  void close_stream(std::uint32_t stream);
  // Whole inputs, one after the other, each as start(read_time), feed(bytes) and end_stream(stream) would take it in.
  // Each input is cut into batches where its bytes say (the first line start at or after every multiple of the
  // batch size where no line is left open, so a CRI or docker line continued over several lines is never cut), not
  // where reading happened to stop; parts of those batches are decoded and matched on `threads` threads (the
  // caller's among them) and correlated in input order on the caller's. So the incidents, their order and their
  // revisions are the same whatever `threads` is.
  void feed_whole(const std::vector<WholeInput>& inputs, unsigned threads);

  // The virtual clock. start(t): what is fed next was read at `t`; the event clock does not move.
  void start(Time t);
  // Time runs on by `d` from the latest time seen — the event clock once any line was read, else the clock — and
  // the event clock moves there (windows close, absences fire, holds are released).
  void after(Duration d);
  // The clock and the event clock move to `t`.
  void advance(Time t);
  Time clock() const { return clock_; }

  // End of input: every stream's partial line is flushed and held incidents are released.
  void finish();

  // The latest revision of every incident, in order of first emission.
  const std::vector<Incident>& incidents() const { return incidents_; }
  const PipelineStats& stats() const { return pipeline_.stats(); }
  // For what Replay does not wrap: --explain tracing, state, new instances of a stream.
  Pipeline& pipeline() { return pipeline_; }
  const Pipeline& pipeline() const { return pipeline_; }

 private:
  void collect(const Incident& incident);

  std::function<void(const Incident&)> on_incident_;
  std::shared_ptr<const CompiledRules> rules_;
  std::size_t batch_bytes_;
  std::vector<Incident> incidents_;
  std::unordered_map<std::string, std::size_t> index_;  // incident id → its place in incidents_
  Time clock_;
  // What feed_whole keeps from call to call (whole_input.cpp): its threads' scanners and the parts' buffers. `scan`
  // calls it once per group of files, and a Hyperscan scratch alone takes ~0.2 ms to make.
  struct WholeWork;
  struct WholeWorkFree {
    void operator()(WholeWork* work) const;
  };
  std::unique_ptr<WholeWork, WholeWorkFree> whole_;
  Pipeline pipeline_;  // last: its handler refers to the members above
};

}  // namespace faultline
