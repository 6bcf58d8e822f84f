// sinks: where incidents go once found. A Dispatcher takes each revision from the pipeline thread through one bounded
// queue and, on the io thread (io_thread.hpp), redacts it once, records it in the IncidentStore (the API's view and
// the memory of what was seen) and fans it out to isolated Sinks: webhooks (Standard Webhooks JSON or Alertmanager
// v2, each with a durable spool, its own delivery loop and backoff). The JSON-lines output is a Sink too, written on
// the caller's thread (the app's journal relies on it being written before it is journalled).
//
// Threading: Dispatcher::submit/backpressure/wait_for_space/flush are thread-safe and meant for the pipeline thread;
// sinks' deliver() runs on the io thread; Spool and IncidentStore are plain single-threaded classes (the store's
// firing_counts() excepted). Delivery is at least once: each accepted revision is written (fsync'd, one fsync per
// batch) to every matching sink's spool before its first attempt and removed only after a 2xx; Dispatcher::deliver
// tells the caller when a batch is durable, so that it records the batch as emitted only then. Receivers deduplicate on `webhook-id` =
// "<incident id>-<revision>".
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "faultline/clock.hpp"
#include "faultline/incident.hpp"
#include "faultline/incident_view.hpp"
#include "faultline/net.hpp"
#include "faultline/result.hpp"
#include "faultline/sink_config.hpp"
#include "faultline/types.hpp"

namespace faultline {

class IoThread;
class Metrics;

// ---------------------------------------------------------------------------------------------------------------
// Sink configuration: SinkConfig, WebhookFormat and validate_sink are in sink_config.hpp.

// For `--webhook URL` and `--alertmanager URL`: a sink named `name` (default "webhook" / "alertmanager") with
// defaults. Returns nullopt and sets `error` for a URL that is not http(s)://host[:port][/path].
std::optional<SinkConfig> sink_from_url(std::string_view url, WebhookFormat format, std::string_view name = {},
                                        std::string* error = nullptr);

// Whether a sink takes this revision. `sent_before`: an earlier revision of the incident went to this sink (its
// resolution then goes too even when filters would now refuse it).
bool sink_accepts(const SinkConfig& sink, const Incident& incident, bool sent_before);

// ---------------------------------------------------------------------------------------------------------------
// Redaction and caps, applied once to every incident before it is stored, served or sent.

// RedactionOptions is in sink_config.hpp.

class Redactor {
 public:
  // Returns nullptr and sets `error` when a pattern does not compile.
  static std::unique_ptr<Redactor> create(const RedactionOptions& options, std::string* error = nullptr);
  ~Redactor();
  std::string redact(std::string_view text) const;
  // Evidence text, title, summary, remediation and field values; evidence capped in count and bytes.
  void apply(Incident& incident) const;

 private:
  struct Impl;
  explicit Redactor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------------------------
// Payloads

// Standard Webhooks: "v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>".
std::string standard_webhooks_signature(std::string_view key, std::string_view id, std::int64_t timestamp,
                                        std::string_view body);
// A secret as stored in a file: "whsec_<base64>" decodes to its key bytes; anything else is used as it is (trimmed).
std::string decode_webhook_secret(std::string_view secret);
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

// "flashinfer-fmha-unsupported-arch" → "FaultlineFlashinferFmhaUnsupportedArch".
std::string alertname_for_rule(std::string_view rule);

// An Alertmanager sink's request target: "/api/v2/alerts" appended to the URL's path unless it ends so already
// (trailing slashes dropped, the query kept).
std::string alertmanager_alerts_target(std::string_view target);

struct AlertmanagerContext {
  std::string external_url;  // for generatorURL: <external_url>/api/v1/incidents/<id>
  Duration resend_interval = std::chrono::minutes(1);
};
// One Alertmanager v2 alert object (JSON) for an incident. A firing alert ends at now + 4 × resend interval unless
// re-sent; a resolved one ends at `resolved_at`.
std::string alertmanager_alert(const Incident& incident, const AlertmanagerContext& context,
                               std::chrono::system_clock::time_point now,
                               std::optional<std::chrono::system_clock::time_point> resolved_at = std::nullopt);

// ---------------------------------------------------------------------------------------------------------------
// Spool: one directory per sink, one file per batch of pending deliveries (one revision or many, taken together),
// written to a temporary name, fsync'd, renamed — one fsync per batch, not per revision. File format (versioned JSON):
// {"format":"faultline-spool","version":2,"deliveries":[{"delivery_id":..., "incident_id":..., "revision":...,
// "created_ms":..., "body":"<incident JSON>"}, ...]}; version 1 files (one delivery, its fields at the top level) are
// still read. A file is removed once every delivery in it is done; until then "<seq>.done" beside it lists the ids
// of those already done (delivered or dropped), so a restart resumes only the rest. Unreadable files are dropped and
// counted.

struct SpoolEntry {
  std::uint64_t seq = 0;    // order of the delivery in the spool
  std::string path;         // the file holding it (shared by the deliveries of one batch)
  std::string delivery_id;  // "<incident id>-<revision>"
  std::string incident_id;
  std::uint32_t revision = 0;
  std::int64_t created_ms = 0;  // Unix ms when first spooled
  std::uint64_t bytes = 0;      // its share of the file
};

// One delivery to write: what put_batch() takes.
struct SpoolItem {
  std::string incident_id;
  std::uint32_t revision = 0;
  std::string body;
  std::string delivery_id() const { return incident_id + "-" + std::to_string(revision); }
};

struct SpoolDrops {
  std::vector<SpoolEntry> spool_full;
  std::vector<SpoolEntry> max_age;
  std::vector<std::string> corrupt;  // file names
};

class Spool {
 public:
  Spool(std::string dir, std::uint64_t max_bytes, Duration max_age);
  // Creates the directory, removes leftover temporaries, indexes existing deliveries (they resume in order).
  Result<void> open(SpoolDrops* drops = nullptr);

  enum class PutResult : std::uint8_t { stored, duplicate, failed };
  // Writes one delivery durably (a batch of one).
  PutResult put(const Incident& incident, std::string_view body, std::int64_t now_ms, SpoolDrops* drops = nullptr,
                std::string* error = nullptr);
  // Writes `items` durably in one file (one fsync); deliveries already pending are skipped (all of them:
  // `duplicate`). `failed`: nothing of the batch was stored (`error` says why). Oldest deliveries beyond max_bytes
  // are dropped (reported in `drops`).
  PutResult put_batch(const std::vector<SpoolItem>& items, std::int64_t now_ms, SpoolDrops* drops = nullptr,
                      std::string* error = nullptr);
  // The oldest pending delivery and its body; a corrupt file is removed, reported and skipped.
  std::optional<std::pair<SpoolEntry, std::string>> front(SpoolDrops* drops = nullptr);
  void remove(const SpoolEntry& entry);
  // Drops deliveries older than max_age.
  void expire(std::int64_t now_ms, SpoolDrops* drops);

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  std::uint64_t bytes() const { return bytes_; }
  std::optional<std::int64_t> oldest_ms() const;
  bool contains(std::string_view delivery_id) const { return ids_.count(std::string(delivery_id)) != 0; }
  const std::string& dir() const { return dir_; }

 private:
  void drop_front_to(std::vector<SpoolEntry>* out);
  void erase_at(std::size_t index);
  bool load_file(const std::string& path, std::unordered_map<std::string, std::string>* bodies);
  std::string dir_;
  std::uint64_t max_bytes_;
  Duration max_age_;
  std::uint64_t next_seq_ = 1;       // of deliveries
  std::uint64_t next_file_ = 1;      // of files
  std::uint64_t bytes_ = 0;
  std::vector<SpoolEntry> entries_;  // in seq order (a deque would do; the spool is small)
  std::set<std::string> ids_;
  std::unordered_map<std::string, std::size_t> live_;  // file → deliveries in it not yet done
  // The bodies of the file at the front (read once per file, not once per delivery).
  std::string cached_path_;
  std::unordered_map<std::string, std::string> cached_bodies_;
};

// ---------------------------------------------------------------------------------------------------------------
// Sink: one place incidents go. Each is isolated: the dispatcher catches what one throws and counts what one fails,
// and the others carry on.

class Sink {
 public:
  virtual ~Sink() = default;
  virtual std::string_view name() const = 0;
  // Whether this sink takes the revision (its filters, and what it took before).
  virtual bool accepts(const Incident& incident) const = 0;
  // Takes one revision. A spooling sink has it durable in its spool when this returns (delivery follows on the io
  // thread); an Error says it could not be taken (already counted by the sink where it has metrics for it).
  virtual Result<void> deliver(const Incident& incident) = 0;
  // A batch: take() each revision, then one commit() makes them all durable (a spooling sink: one spool file, one
  // fsync). A commit that fails keeps what was taken in memory (backlog()), counted, and the next commit() writes it
  // again, before anything taken later: nothing taken is dropped for a failed write. Defaults: deliver() at once.
  virtual Result<void> take(const Incident& incident) { return deliver(incident); }
  virtual Result<void> commit() { return {}; }
  // Revisions taken but not durable yet (their spool write failed).
  virtual std::size_t backlog() const { return 0; }
  // Called once, from the owner's thread, after the last deliver(): delivers what is pending for up to `grace`,
  // then lets go (what is left stays spooled for the next start). No io-thread work of the sink remains after it.
  virtual void stop(Duration grace) = 0;
  // Looks again at what is due (after the clock moved: a test's ManualClock). Called on the io thread.
  virtual void poke() {}
};

// The JSON-lines output (`--output`): one to_json object per revision, to standard output ("-") or appended to a
// file (created 0644). Written on the calling thread; a write failure is logged once and returned.
class JsonLinesSink final : public Sink {
 public:
  // `redactor`: applied to each revision before it is written, as the dispatcher applies it before the store and
  // the webhooks (the same compiled Redactor, shared); null writes revisions as they come.
  explicit JsonLinesSink(std::string output, std::shared_ptr<const Redactor> redactor = nullptr);
  ~JsonLinesSink() override;
  // Opens the output; a file whose last line was cut short (a write stopped by SIGKILL) has that line ended first.
  Result<void> open();
  std::string_view name() const override { return "output"; }
  bool accepts(const Incident&) const override { return true; }
  Result<void> deliver(const Incident& incident) override;
  void stop(Duration grace) override;
  // Makes what was written durable (a file: fdatasync; standard output: nothing to do).
  void sync();

 private:
  Result<void> end_torn_line();

  std::string output_;
  std::shared_ptr<const Redactor> redactor_;
  int fd_ = -1;
  bool failed_ = false;
};

// A webhook sink (json: Standard Webhooks; alertmanager: v2 alerts): a spool under <spool_root>/<name>, one delivery
// loop on the io thread (oldest first, one deadline per attempt, exponential backoff with jitter, 400/413/422 three
// times in a row drops the delivery), its metrics under sink=<name>.
struct WebhookContext {
  IoThread& io;
  Metrics& metrics;
  const Clock& clock;              // wall time: spool ages, webhook-timestamp, alert times; steady: the resend clock
  std::string spool_root;          // <state_dir>/spool
  std::string external_url;        // links in alerts (generatorURL)
  std::string version;             // User-Agent: faultline/<version>
  const IncidentView* incidents = nullptr;  // alertmanager: the firing incidents it re-sends
  std::size_t max_incidents = 1000;         // bounds the memory of incidents sent to this sink
};
// Opens the spool (pending deliveries resume) and starts the loop (it runs once the io thread runs).
Result<std::unique_ptr<Sink>> make_webhook_sink(const SinkConfig& config, const WebhookContext& context);

// ---------------------------------------------------------------------------------------------------------------
// Incident store: the latest revision of recent incidents and their bounded revision history (RevisionHistory), for
// the API and the page, and for deduplication (a revision not newer than the one held is ignored). Optionally
// persisted as an append-only JSON-lines log (versioned; the version 1 log of revisions only is still read) that is
// compacted when it grows; on open the latest revision of each incident and its history are restored.

// Both bounds hold: past either, resolved incidents go first, oldest update first; then firing ones, oldest first.
// The newest incident is always kept. Bytes are the memory each stored incident holds (StoredIncident::bytes and its
// place in the store), so the bound holds however long the evidence lines are.
struct IncidentStoreLimits {
  std::size_t incidents = 1000;
  std::size_t bytes = 2u << 20;
};

class IncidentStore final : public Sink, public IncidentView {
 public:
  explicit IncidentStore(IncidentStoreLimits limits = {}, std::string log_path = {});
  Result<void> open();

  enum class Accept : std::uint8_t { added, updated, duplicate };
  // `persist` false: held in memory only, until persist(id) — a revision is logged only once the sinks have it
  // durable, so that after a crash the store never claims one that a spool lost.
  Accept accept(const Incident& incident, bool persist = true);
  // Logs the revision now held for `id` (a no-op without a log or for an id no longer held).
  void persist(std::string_view id);

  const StoredIncident* find(std::string_view id) const override;
  std::vector<const StoredIncident*> query(const IncidentQuery& query) const override;  // newest update first
  std::vector<const StoredIncident*> firing() const override;
  std::size_t size() const { return by_id_.size(); }
  std::size_t bytes() const { return bytes_; }  // what the stored incidents hold, by the limits' measure

  // Firing incidents per (rule, severity), including pairs now at 0. Thread-safe (read at scrape time).
  std::vector<std::pair<std::pair<std::string, Severity>, std::size_t>> firing_counts() const;

  std::string_view name() const override { return "store"; }
  bool accepts(const Incident&) const override { return true; }
  Result<void> deliver(const Incident& incident) override;
  void stop(Duration) override {}

 private:
  void count(const IncidentSummary& incident, int delta);
  void hold(StoredIncident stored);
  void append_log(const std::string& json);
  void log_revision(const StoredIncident& stored);
  void compact_log();
  void evict();
  IncidentStoreLimits limits_;
  std::string log_path_;
  std::uint64_t next_order_ = 1;
  std::uint64_t log_bytes_ = 0;
  std::size_t bytes_ = 0;
  struct Held {
    StoredIncident stored;
    std::size_t bytes = 0;  // as counted when it was stored: what letting it go gives back
  };
  std::unordered_map<std::string, Held> by_id_;
  std::unordered_map<std::string, std::uint32_t> logged_;  // the newest revision of each id in the log
  mutable std::mutex counts_mutex_;
  std::map<std::pair<std::string, Severity>, std::size_t> firing_counts_;
};

// ---------------------------------------------------------------------------------------------------------------
// Dispatcher: the pipeline → sinks queue, redaction, and the fan-out.

struct DispatcherOptions {
  RedactionOptions redaction;
  // The redaction compiled once by the caller and shared with the JSON-lines output; null: compiled from
  // `redaction` by start().
  std::shared_ptr<const Redactor> redactor;
  // At `queue_capacity` backpressure() turns true and the reader should pause; submit() blocks only at
  // 4 × queue_capacity (a reader that ignores backpressure), it never drops.
  std::size_t queue_capacity = 1024;
};

// Every problem with the delivery side (sinks, their state dir, redaction patterns, the queue), one message each.
std::vector<std::string> validate_delivery(const DispatcherOptions& options, const std::vector<SinkConfig>& sinks,
                                           const std::string& state_dir);

struct SinkStats {
  std::string name;
  std::uint64_t delivered = 0;  // revisions taken
  std::uint64_t failed = 0;     // deliver() returned an Error or threw
};

class Dispatcher {
 public:
  // Every revision goes to `store` first: one it does not take as new (a replay after a restart) goes to no sink.
  // faultline_incidents_total counts new incidents; faultline_incidents_active is read from the store at scrape time.
  // The io thread, the metrics and the store must outlive the dispatcher.
  Dispatcher(DispatcherOptions options, IoThread& io, Metrics& metrics, IncidentStore& store);
  ~Dispatcher();  // stop() with no grace if still running
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void add(std::unique_ptr<Sink> sink);  // before start()
  // Compiles the redaction patterns and starts taking revisions.
  Result<void> start();

  // Thread-safe. Hands one revision to the io thread. Returns false before start() and after stop(). Blocks while
  // the queue is at its hard bound (4 × queue_capacity).
  bool submit(const Incident& incident);
  // True while the queue is at or above queue_capacity, or as many revisions wait in memory for a spool write that
  // keeps failing: the reader should pause (its lag grows, visibly).
  bool backpressure() const;
  // Waits until the queue is below queue_capacity or `max` passed; returns !backpressure().
  bool wait_for_space(Duration max);
  // Hands `batch` to the sinks now, in order after everything submitted before, and waits for it (the pipeline
  // thread): each sink takes the revisions it accepts and makes them durable with one write (Sink::commit). Revisions
  // an earlier call could not make durable are written again first. Thread-safe.
  struct Committed {
    bool durable = true;       // every revision taken so far is durable in every sink that took it
    std::size_t backlog = 0;   // revisions held in memory because a spool write failed (the largest of any sink)
    std::string error;         // the first failure, when not durable
  };
  Committed deliver(const std::vector<Incident>& batch);
  // Returns once every revision submitted before the call has been handed to every sink.
  void flush();
  // Every sink looks again at what is due (Sink::poke), e.g. after a test moved its clock.
  void poke();

  // Stops taking revisions, hands what is queued to the sinks, then stops each sink within what is left of `grace`.
  void stop(Duration grace = std::chrono::seconds(5));

  std::vector<SinkStats> stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
