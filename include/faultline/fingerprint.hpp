// fingerprint: failure stories that no rule claims. The story anchors (match.hpp, StoryAnchor) ride on the one
// Hyperscan pass; the Detector gathers each failure's story from its stream's lines (a Python traceback with its
// chained exceptions, a C++ terminate, a glog check, a CUDA status, a panic, a supervisor's exit line), works out a
// stable fingerprint — exception type + terminal message as a template + the innermost frames — and raises one
// `unclassified-failure` incident per fingerprint and stream, unless a typed rule matched a line of the same story.
// It also keeps the inventory of every fingerprint seen. The algorithm is documented in docs/fingerprints.md.
// The free functions are pure and thread-safe; a Detector belongs to the pipeline thread, not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/clock.hpp"
#include "faultline/decode.hpp"
#include "faultline/incident.hpp"
#include "faultline/match.hpp"
#include "faultline/result.hpp"
#include "faultline/types.hpp"

namespace faultline {

// The rule id of every fingerprinted incident: a fixed metric label and API key.
inline constexpr std::string_view kUnclassifiedRule = "unclassified-failure";

// The message of a log line without the logger's prefix: vLLM's "(EngineCore_0 pid=88) ERROR 11-29 10:08:01
// [core.py:866] ", SGLang's "[2025-01-01 10:00:00 TP0] ", TensorRT-LLM's "[TensorRT-LLM][ERROR] ", glog's "F0420
// 23:07:59.585644 78855 file.cc:89] ", journald's "Dec 01 10:00:00 host unit[12]: ", "[rank0]: ", "ERROR:    ".
// One space after the prefix is removed; the indentation of a traceback's frame lines is kept.
std::string_view strip_log_prefix(std::string_view line);

// The message with its variable parts replaced by placeholders: <num>, <size>, <hex>, <uuid>, <path>, <url>,
// <addr>, <time>, <date>, <shape>, <id> (a quoted identifier). Runs of whitespace become one space.
std::string message_template(std::string_view message);

// What a story is, as far as grouping goes.
struct FailureSignature {
  std::string type;              // "RuntimeError", "torch.distributed.DistStoreError", "terminate std::runtime_error",
                                 // "Fatal Python error", "Check failed", "panic", "exit"
  std::string message;           // the terminal message as printed
  std::string message_template;  // message_template(message)
  std::vector<std::string> frames;  // the innermost frames, innermost first: "file.py:function" (no line, no prefix)
  std::string terminal;          // the terminal line, its logger prefix removed
  std::size_t terminal_index = 0;  // of the terminal line in the story's lines
  std::string fingerprint;       // 16 hex digits: FNV-1a 64 over the type's last dotted name, the template, frames
  int rank = 0;                  // how decisive the terminal is: 3 an exception/abort message, 0 an exit line
};

// The signature of a story from its lines (logger prefixes are removed here). The root cause wins: of the terminal
// lines of highest rank, the first.
FailureSignature signature_of(const std::vector<std::string_view>& lines);

// A fingerprint's severity set by configuration: raised at `severity`, or not raised at all (`silence`, with `why`).
struct FingerprintOverride {
  std::string fingerprint;
  std::optional<Severity> severity;
  bool silence = false;
  std::string why;
};

// A story as it closed: what `faultline rules draft` builds a rule from. The lines are the story's (up to its last
// relevant line), with their positions; `event` is "terminal" on the terminal line.
struct ClosedStory {
  FailureSignature signature;
  std::vector<EvidenceLine> lines;
  std::string claimed_by;  // the rule that claims it; empty: none
  bool below_error = false;
  Severity severity = Severity::warning;  // as it would be raised (before overrides)
};

struct DetectorOptions {
  bool enabled = true;
  std::size_t max_story_lines = 400;   // a longer story keeps its first and last lines
  std::uint32_t linger_lines = 20;     // lines of the stream after the story's last line that may still continue it
  Duration linger_time = std::chrono::seconds(5);  // event time after which an open story is closed
  std::uint32_t consequence_lines = 50;  // an exit or signal line this close after a story is its consequence
  std::size_t max_fingerprints = 4096;   // inventory and incident book bound; the oldest entry is dropped beyond it
  std::vector<FingerprintOverride> overrides;
  const Clock* clock = &SystemClock::instance();  // stamps Incident::read_at; must outlive the detector
  // Every story as it closes (claimed, quiet or raised; not the consequences of another), on the detector's thread.
  std::function<void(const ClosedStory&)> on_story;
};

// One fingerprint of the inventory.
struct FingerprintEntry {
  std::string fingerprint;
  std::string type;
  std::string message_template;
  std::uint64_t count = 0;
  Time first_seen{};
  Time last_seen{};
  std::vector<std::string> streams;  // where it was seen (at most 8)
  std::vector<std::string> example;  // the first story's lines (at most kMaxEvidenceLines)
  std::string claimed_by;            // the rule whose event matched a line of the story; empty: unclassified
  Severity severity = Severity::warning;
  bool below_error = false;          // printed at DEBUG/INFO/WARNING, or a benign type (a cancelled request, a
                                     // client gone, Ctrl-C): inventoried, never raised
};

struct DetectorStats {
  std::uint64_t stories = 0;
  std::uint64_t raised = 0;       // stories raised as unclassified-failure (new incidents and repeats)
  std::uint64_t claimed = 0;      // a typed rule matched a line of the story
  std::uint64_t below_error = 0;  // printed below the error level (a DEBUG traceback, a warning with scary words),
                                  // or rooted in a benign exception (CancelledError, ClientDisconnected, ...)
  std::uint64_t silenced = 0;     // by an override
  std::uint64_t consequences = 0; // exit/signal lines that followed a story
  std::array<std::uint64_t, 3> incidents{};  // revisions emitted, by Severity
  std::uint64_t fingerprints_dropped = 0;
};

// An unclassified incident across a restart: what its next revision continues from.
struct UnclassifiedContinuation {
  std::string stream;  // the logical stream the incident is kept for
  std::string fingerprint;
  std::string id;
  std::uint32_t revision = 1;
  std::uint32_t count = 1;
  Severity severity = Severity::warning;
  Time first_seen{};
};

class Detector {
 public:
  explicit Detector(std::shared_ptr<const CompiledRules> rules, DetectorOptions options = {});
  ~Detector();
  Detector(Detector&&) noexcept;
  Detector& operator=(Detector&&) noexcept;

  void set_stream(std::uint32_t index, StreamIdentity identity);
  // A new instance of the stream: an open story ends with it.
  void new_instance(std::uint32_t index, std::vector<Incident>& out);
  // The stream ended for good (Pipeline::end_stream): an open story ends with it, and what is kept of the stream
  // is let go. Its index is not used again.
  void end_stream(std::uint32_t index, std::vector<Incident>& out);
  // The rules whose hits claim stories (cascade rules never do: they report consequences).
  void replace_rules(std::shared_ptr<const CompiledRules> rules);

  // One scanned batch: its anchors and the rule hits the Scanner found in it. Appends raised revisions to `out`.
  void process(const RecordBatch& batch, const std::vector<AnchorHit>& anchors, const std::vector<Hit>& hits,
               std::vector<Incident>& out);
  // Event time moved to `now`: stories quiet for linger_time are closed.
  void advance(Time now, std::vector<Incident>& out);
  // Wall time moved on (options.clock): stories whose stream printed nothing for linger_time are closed. The daemon
  // calls it every tick, so a story that ends a log (a process that died) is raised without another line.
  void tick(std::vector<Incident>& out);
  // End of input: every open story is closed.
  void finish(std::vector<Incident>& out);
  // The unclassified incident `id` explains a cascade raised at `severity`: the cause pages at least as loud as the
  // symptom it silences (a new revision, appended to `out`, when it was lower). False when it is not in the book.
  bool escalate(std::string_view id, Severity severity, std::vector<Incident>& out);

  // Every fingerprint seen, in order of first sight.
  std::vector<FingerprintEntry> inventory() const;
  // The inventory a previous run saved (inventory_state_json): its entries are known from now on, with their counts
  // and first sight; a story seen again counts on. Replaces the current inventory; bounded by max_fingerprints.
  void restore_inventory(std::vector<FingerprintEntry> entries);
  // The unclassified incidents of the book, as a checkpoint keeps them: a repeat after a restart is the next revision
  // of the same incident (with its count), not its first revision again, which sinks would drop as already seen.
  std::vector<UnclassifiedContinuation> book_state() const;
  // What a previous run's book_state() said; the next story of each is raised as its continuation.
  void restore_book(std::vector<UnclassifiedContinuation> entries);
  std::size_t distinct() const;
  // Grows whenever the inventory changes: a reader copies inventory() only when it moved.
  std::uint64_t inventory_version() const;
  const DetectorStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One inventory entry as JSON: the object `faultline fingerprints --json` prints per line and the elements of
// `GET /api/v1/fingerprints` (docs/fingerprints.md).
std::string fingerprint_json(const FingerprintEntry& entry);
// The body of `GET /api/v1/fingerprints`: {"count": N, "fingerprints": [entry, ...]}, in order of first sight.
std::string inventory_json(const std::vector<FingerprintEntry>& inventory);

// The inventory as the daemon's checkpoint keeps it across a restart: {"version": 1, "entries": [...]}, bounded —
// the kMaxSavedFingerprints most recently seen entries (in order of first sight), each example cut to
// kMaxSavedExampleLines lines of kMaxSavedExampleText bytes (well under 3 MiB in all).
inline constexpr std::size_t kMaxSavedFingerprints = 512;
inline constexpr std::size_t kMaxSavedExampleLines = 8;
inline constexpr std::size_t kMaxSavedExampleText = 256;
// `book`: the detector's unclassified incidents (Detector::book_state), kept under "incidents" (at most
// kMaxSavedFingerprints; a checkpoint written before it has none).
std::string inventory_state_json(const std::vector<FingerprintEntry>& inventory,
                                 const std::vector<UnclassifiedContinuation>& book = {});
// An Error says what is wrong (an unknown version, a field of the wrong type); nothing is half-read.
Result<std::vector<FingerprintEntry>> inventory_from_state_json(std::string_view json);
Result<std::vector<UnclassifiedContinuation>> book_from_state_json(std::string_view json);

// The inventory as another thread reads it (the daemon's HTTP API): the pipeline thread publishes a copy, readers
// take the latest. Thread-safe.
class InventoryBoard {
 public:
  void publish(std::vector<FingerprintEntry> inventory);
  std::shared_ptr<const std::vector<FingerprintEntry>> latest() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const std::vector<FingerprintEntry>> latest_ = std::make_shared<std::vector<FingerprintEntry>>();
};

}  // namespace faultline
