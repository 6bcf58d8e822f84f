// The tail room's internals shared by its parts: the context every source reads through (options, clock, handler,
// counters, the stream table, the reading buffer), the logical streams, and Source — one kind of input (files,
// standard input, the kernel log) driven by the scheduler in tailer.cpp. One thread: the Tailer's.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "faultline/tail.hpp"

namespace faultline::tail {

using Steady = std::chrono::steady_clock::time_point;

inline std::chrono::steady_clock::duration to_steady(Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

class Source;
struct FollowedFile;

// One stream as the handler knows it (a path, a Kubernetes container, stdin, the kernel log).
struct LogicalStream {
  StreamIdentity identity;
  ContainerFormat format = ContainerFormat::auto_detect;
  Source* source = nullptr;  // the kind that reads it
  std::uint32_t handle = 0;  // the handler's
  bool opened = false;       // handler.open_stream was called
  bool had_file = false;     // begin_file was called at least once
  Steady last_data{};
  bool idle_sent = true;  // the partial-line timeout was signalled since the last data
  bool active = false;    // listed in StreamTable::active()
  // Files kind: the file read now and those waiting their turn (ordered by restart number, then discovery).
  std::string last_instance_key;
  FollowedFile* current = nullptr;
  std::vector<FollowedFile*> pending;
};

// The logical streams by index, and the active list: streams that are not quiet, the only ones an idle poll_once()
// looks at (touching every stream's state at every wake-up is most of the idle cost once the rescan is cheap).
class StreamTable {
 public:
  // The stream with this logical identity, made (not yet opened) when new.
  std::uint32_t find_or_add(const StreamIdentity& identity, ContainerFormat format, Source& source);
  LogicalStream& operator[](std::uint32_t index) { return *streams_[index]; }
  std::size_t size() const { return streams_.size(); }
  void activate(std::uint32_t index);
  void activate_all();
  std::vector<std::uint32_t>& active() { return active_; }
  // handler.open_stream, once.
  static void open(LogicalStream& s, TailHandler& handler);

 private:
  std::vector<std::unique_ptr<LogicalStream>> streams_;
  std::unordered_map<std::string, std::uint32_t> by_logical_;
  std::vector<std::uint32_t> active_;
};

// SourceTailStats by `source` label; references stay valid for the Tailer's life.
class SourceStatsBook {
 public:
  SourceTailStats& of(const std::string& label);
  std::vector<SourceTailStats> list() const;

 private:
  std::map<std::string, SourceTailStats> by_label_;
};

// What every source reads and writes through; owned by the Tailer.
struct TailContext {
  TailContext(const TailOptions& o, Clock& c, TailHandler& h) : options(o), clock(c), handler(h) {
    read_buf.resize(options.read_chunk_bytes);
  }
  const TailOptions& options;
  Clock& clock;
  TailHandler& handler;
  TailStats stats;
  SourceStatsBook source_stats;
  StreamTable streams;
  std::string read_buf;     // one reading buffer for every source (read_chunk_bytes)
  std::string check_buf;    // a file's leading bytes, read to tell a grown file from a replaced one
  bool first_start = true;  // no checkpoint
  bool stopped = false;     // Tailer::stop(): no more data() calls
  bool lag_stale = true;    // a file's size, offset or state changed since lag_by_source() was computed
};

// One kind of input. The scheduler calls prepare() and read() once per poll_once(), and the per-stream hooks for the
// active streams this source reads.
class Source {
 public:
  virtual ~Source() = default;
  virtual SourceKind kind() const = 0;
  // Descriptor to wait on before the next poll_once(); -1: none.
  virtual int wait_fd() const { return -1; }
  // When prepare() next has work (a rescan); nullopt: only when woken by wait_fd().
  virtual std::optional<Steady> due() const { return std::nullopt; }
  // The start of a poll_once(): wake-ups and discovery.
  virtual void prepare() {}
  // What the source reads by itself (stdin, kmsg), up to `budget` bytes. True: more is ready now.
  virtual bool read(std::size_t /*budget*/) { return false; }
  virtual bool ended() const { return false; }  // will never read again (stdin at EOF)
  virtual void positions(TailPositions& /*out*/) {}

  // Per stream, for the scheduler's round robin (files kind).
  virtual bool ready(const LogicalStream& /*s*/) const { return false; }  // bytes may be waiting now
  virtual std::size_t read_stream(LogicalStream& /*s*/, std::size_t /*budget*/) { return 0; }
  // After reading: move on to the stream's next file when the current one is done.
  virtual void settle(LogicalStream& /*s*/, Steady /*now*/) {}
  // The stream's own timers (beside the partial-line timeout, which the scheduler keeps).
  virtual void deadline(const LogicalStream& /*s*/, std::optional<Steady>& /*best*/) const {}
  // Nothing to read and no successor waiting (with the partial-line timer done, the stream leaves the active list).
  virtual bool quiet(const LogicalStream& /*s*/) const { return true; }
};

// Standard input, from its start.
std::unique_ptr<Source> open_stdin_source(TailContext& ctx, const SourceSpec& spec);
// The kernel log (/dev/kmsg, or a file of kmsg-format records). Null when it cannot be opened (logged, counted as
// unreadable). `restored`: the checkpoint's position, null on the first start.
std::unique_ptr<Source> open_kmsg_source(TailContext& ctx, const SourceSpec& spec, const KmsgPosition* restored);

}  // namespace faultline::tail
