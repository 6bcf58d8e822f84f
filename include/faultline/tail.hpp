// tail: finds the files of the configured sources (paths, globs, Kubernetes and docker layouts, symlinks), follows
// each by identity (device + inode + a fingerprint of its first bytes) across rename rotation, copytruncate and
// deletion, reads standard input and the kernel log (/dev/kmsg), and hands the bytes to a TailHandler. It wakes on
// inotify; while inotify covers every directory and file it stats only what an event named, otherwise it rescans
// periodically as a fallback. Time is injected (Clock) and all work happens in explicit
// poll_once() steps, so tests never sleep. A Tailer, its handler and its clock belong to one thread; so does an
// InotifyReader.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/clock.hpp"
#include "faultline/decode.hpp"
#include "faultline/incident.hpp"
#include "faultline/result.hpp"
#include "faultline/types.hpp"

namespace faultline {

enum class StartAt : std::uint8_t { beginning, end };
std::string_view to_string(StartAt start);
std::optional<StartAt> parse_start_at(std::string_view text);  // beginning | end

enum class SourceKind : std::uint8_t { files, stdin_stream, kmsg };

// One configured source.
struct SourceSpec {
  SourceKind kind = SourceKind::files;
  std::vector<std::string> paths;    // files: paths and globs (*, ?, [..] in any component); kmsg: the device or file
  std::vector<std::string> exclude;  // globs matched against the path as found and against its resolved path
  ContainerFormat format = ContainerFormat::auto_detect;
  StartAt start_at = StartAt::end;   // for files that exist at the very first start (no checkpoint yet)
  // Stream name; placeholders {path} {file} {stem} {namespace} {pod} {container}. Empty: derived from the path
  // (Kubernetes files: "namespace/pod/container"; others: the path).
  std::string name;
  std::string source;                // the `source` label; empty: "file", "stdin" or "kmsg"
  Fields labels;                     // static labels added to every stream of the source
  bool optional = false;             // kmsg: a device that cannot be opened is logged, not an error
};

// What the path of a log file says about its stream (Kubernetes pod logs, /var/log/containers symlinks, docker).
struct PathIdentity {
  bool kubernetes = false;
  bool docker = false;
  std::string namespace_, pod, uid, container, restart, container_id;
  ContainerFormat format_hint = ContainerFormat::auto_detect;
};
// /var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log, /var/log/containers/<pod>_<ns>_<container>-<id>.log,
// /var/lib/docker/containers/<id>/<id>-json.log. Anything else: no identity.
PathIdentity parse_log_path(std::string_view path);

// One /dev/kmsg record: "pri,seq,usec,flags[,..];message\n[ KEY=value\n]..."
struct KmsgRecord {
  int facility = 0;
  int priority = 0;  // 0 emerg .. 7 debug
  std::uint64_t seq = 0;
  std::uint64_t usec = 0;  // since boot (monotonic)
  std::string message;     // non-printable bytes as the kernel escapes them (\xNN)
};
std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);
// The line fed to the decoder: "<RFC 3339 time> <LEVEL> kernel: <message>".
std::string format_kmsg_line(const KmsgRecord& record, Time boot_time);

// Identity of a file's content: a hash of its first `bytes` bytes (FNV-1a 64). Tells a reused inode from the file.
struct Fingerprint {
  std::uint64_t hash = 0;
  std::uint32_t bytes = 0;
  bool operator==(const Fingerprint&) const = default;
};

// Where one file was read to. Part of the checkpoint (checkpoint.hpp).
struct FilePosition {
  std::string path;
  std::uint64_t dev = 0;
  std::uint64_t inode = 0;
  Fingerprint fingerprint;
  std::uint64_t offset = 0;  // every byte before it has been turned into records and processed
  std::uint64_t line = 1;    // number of the line that starts at `offset`
  std::uint64_t size = 0;    // size when the checkpoint was taken (bytes rotated away unread are counted from it)
  bool finished = false;     // read to its end and left behind (rotated); not read again
};

struct KmsgPosition {
  std::string boot_id;
  std::uint64_t seq = 0;     // last record processed
  std::uint64_t offset = 0;  // synthetic stream offset and line after it (records are fed as lines)
  std::uint64_t line = 1;
  bool valid = false;
};

struct TailPositions {
  std::vector<FilePosition> files;
  KmsgPosition kmsg;
};

struct TailOptions {
  // Glob rescan and stat of every file (inotify fallback); while inotify covers everything, only the files an event
  // named (or that inotify cannot vouch for: rotated, deleted, hard-linked) are stat'ed this often.
  Duration rescan_interval = std::chrono::seconds(1);
  // While inotify covers everything: the full rescan still runs this often (directory events trigger it at once),
  // for what no watch announces (a directory the glob names literally, renamed with its parent; a filesystem mounted
  // over a watched directory).
  Duration covered_rescan_interval = std::chrono::seconds(30);
  Duration partial_timeout = std::chrono::seconds(2);   // a line without its newline is flushed after this
  Duration rotate_wait = std::chrono::milliseconds(500);  // a rotated file is read this long after its last growth
  std::size_t read_chunk_bytes = 256 * 1024;
  std::size_t max_bytes_per_poll = 4 * 1024 * 1024;     // reading budget of one poll_once() over all files
  // Descriptors held at most; beyond it live files wait without one and descriptors rotate among them (idle files
  // are closed, least recently grown first, and reopened by name where they were left).
  std::size_t max_open_files = 8192;
  std::size_t fingerprint_bytes = 1024;
  std::size_t max_finished = 16384;                     // finished files remembered (so they are not read again)
  std::vector<std::string> exclude_self = {"faultline", "faultline-*"};  // pod or container names never tailed
  std::string node_name;                                // `node` label of every stream
  bool use_inotify = true;
};

struct TailStats {
  std::uint64_t bytes = 0;
  std::uint64_t files_opened = 0;
  std::uint64_t rotations = 0;        // a stream moved on to its next file
  std::uint64_t truncations = 0;      // copytruncate: size fell below the read offset
  std::uint64_t deleted = 0;          // files read to their end after deletion
  std::uint64_t streams_ended = 0;    // streams whose last file was deleted, with none after it (their state let go)
  std::uint64_t unreadable = 0;       // permission denied, vanished, not a regular file
  std::uint64_t rotated_unread_bytes = 0;  // bytes that went away before they were read (lower bound)
  std::uint64_t late_bytes = 0;       // bytes written to a file after the stream moved on (not read)
  std::uint64_t open_deferred = 0;    // files found while every descriptor was taken (parked at once)
  std::uint64_t file_reopens = 0;     // parked files given a descriptor again
  std::uint64_t files_waiting = 0;    // gauge: parked files with bytes that may be unread (want a descriptor)
  std::uint64_t rescans = 0;
  std::uint64_t inotify_events = 0;
  std::uint64_t inotify_overflows = 0;
  std::uint64_t kmsg_records = 0;
  std::uint64_t kmsg_lost = 0;        // records overwritten in the kernel ring before they were read
  std::uint64_t watched_files = 0;    // gauge: files followed now
  std::uint64_t watched_dirs = 0;     // gauge
};

// The counters of TailStats that belong to one source, charged to the source the file (or stream) came from. A file
// found by two sources counts for the first that found it; a checkpointed file that went away while stopped counts
// for the first source whose glob names it.
struct SourceTailStats {
  std::string source;  // the `source` label (SourceSpec::source, or "file", "stdin", "kmsg")
  std::uint64_t bytes = 0;
  std::uint64_t files_opened = 0;
  std::uint64_t rotations = 0;
  std::uint64_t truncations = 0;
  std::uint64_t deleted = 0;
  std::uint64_t unreadable = 0;
  std::uint64_t rotated_unread_bytes = 0;
  std::uint64_t late_bytes = 0;
  bool operator==(const SourceTailStats&) const = default;
};

// How a stream continues in a file.
enum class FileStart : std::uint8_t {
  first,         // the stream's first file, from `offset` (0, or the end when starting at the end)
  resumed,       // from a checkpoint
  rotated,       // the next file of the same instance (rename rotation, delete and recreate)
  new_instance,  // a new container instance (new restart number, new pod)
  truncated,     // the same file, truncated (copytruncate): from 0
};
std::string_view to_string(FileStart start);

// Receives what the Tailer reads. Called only from poll_once() (and finish_stdin), on the Tailer's thread.
class TailHandler {
 public:
  virtual ~TailHandler() = default;
  // A logical stream appears (once per stream). Returns the handler's handle for it (a Pipeline stream index).
  virtual std::uint32_t open_stream(const StreamIdentity& identity, ContainerFormat format) = 0;
  // The stream continues in a (new) file, at `offset`, the line starting there numbered `line`. `identity` is the
  // stream's identity in this file (a new instance has a new `instance` and `restart` label).
  virtual void begin_file(std::uint32_t stream, FileStart how, const StreamIdentity& identity, std::uint64_t offset,
                          std::uint64_t line) = 0;
  virtual void data(std::uint32_t stream, std::string_view bytes, Time read_time) = 0;
  // Nothing arrived for partial_timeout after the last bytes: a pending partial line may be flushed.
  virtual void idle(std::uint32_t stream, Time read_time) = 0;
  // End of a stream that will not continue: stdin at EOF, or a stream whose file was deleted, read to its end, with
  // no file after it (a pod that is gone). The handle is not used again: a file of the same logical stream found
  // later is a stream of its own (open_stream again).
  virtual void end_of_stream(std::uint32_t stream, Time read_time) = 0;
  // Offset up to which the stream's bytes are processed, and the number of the line starting there
  // (Decoder::committed_offset/committed_line after Pipeline::drain). line 0: unknown (the Tailer counts).
  struct Committed {
    std::uint64_t offset = 0;
    std::uint64_t line = 0;
  };
  virtual Committed committed(std::uint32_t stream) = 0;
};

class Tailer {
 public:
  Tailer(TailOptions options, Clock& clock, TailHandler& handler);
  ~Tailer();
  Tailer(const Tailer&) = delete;
  Tailer& operator=(const Tailer&) = delete;

  // Call before the first poll_once(). `restored` is the checkpoint's positions, null on the first start.
  void add_source(SourceSpec source);
  void restore(const TailPositions* restored);

  // Descriptors to wait on (inotify, stdin, kmsg) before the next poll_once().
  std::vector<int> wait_fds() const;
  // One step: inotify events, rescan when due, reading (bounded by max_bytes_per_poll), rotation, truncation,
  // deletion, partial-line timeouts. Returns true when more is ready now (the budget ran out).
  bool poll_once();
  // How long the caller may sleep on wait_fds() before the next poll_once() is due.
  std::chrono::milliseconds next_timeout() const;
  // Stop reading (shutdown): no more data() calls.
  void stop();

  // Positions for a checkpoint. The caller drains its pipeline first so committed offsets are final.
  TailPositions positions();

  // Bytes not read yet per `source` label (as of the last stat of each file). Valid until the next poll_once().
  const std::vector<std::pair<std::string, std::uint64_t>>& lag_by_source() const;

  bool stdin_finished() const;  // standard input reached its end
  bool has_file_sources() const;
  const TailStats& stats() const;
  // The per-source part of stats(), one entry per `source` label of the configured sources, sorted by label.
  std::vector<SourceTailStats> source_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One inotify event as read: `name` is the entry in the watched directory (empty for the directory itself) and is
// valid only during the callback. An overflow comes with wd -1 and IN_Q_OVERFLOW.
struct InotifyEvent {
  int wd = -1;
  std::uint32_t mask = 0;  // IN_* bits (sys/inotify.h)
  std::string_view name;
};

// An inotify descriptor (non-blocking, close-on-exec) owned for its lifetime, with its watches. Move-only.
class InotifyReader {
 public:
  InotifyReader() = default;  // holds nothing: valid() is false
  static Result<InotifyReader> open();
  ~InotifyReader();
  InotifyReader(InotifyReader&& other) noexcept;
  InotifyReader& operator=(InotifyReader&& other) noexcept;
  InotifyReader(const InotifyReader&) = delete;
  InotifyReader& operator=(const InotifyReader&) = delete;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }  // to poll for POLLIN
  // The watch descriptor (the same one again for a path already watched under another name).
  Result<int> add_watch(const std::string& path, std::uint32_t mask);
  void remove_watch(int wd);
  // Reads every event queued now, without blocking, calling `on_event` for each. Returns how many there were.
  std::size_t drain(const std::function<void(const InotifyEvent&)>& on_event);

 private:
  explicit InotifyReader(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Expands one glob (components may hold * ? [..]; no ** ) into existing paths, sorted. `dirs` receives every
// directory looked into (what to watch). `complete` is cleared when a directory the pattern names literally (not the
// last component) is missing or not a directory, or a directory cannot be listed: a watch on `dirs` would not
// announce its appearance.
std::vector<std::string> expand_glob(const std::string& pattern, std::vector<std::string>* dirs = nullptr,
                                     bool* complete = nullptr);

// Raises RLIMIT_NOFILE to its hard limit. Returns the new soft limit.
std::uint64_t raise_open_files_limit();

}  // namespace faultline
