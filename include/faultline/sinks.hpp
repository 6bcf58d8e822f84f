// sinks: where incidents go once found — the incident store behind the HTTP API, webhook sinks (plain JSON signed the
// Standard Webhooks way, or Alertmanager v2) with a durable spool, evidence redaction, and `Outputs`, the one object
// the daemon wires in: it owns the io_context thread that runs the HTTP server, the webhook clients and their timers.
//
// Threading: Outputs::submit/backpressure/set_ready/update_rules are thread-safe and meant for the pipeline thread.
// Everything else in Outputs runs on its own io thread. Spool and IncidentStore are plain single-threaded classes
// (Outputs uses them on the io thread; tests use them directly).
//
// Delivery is at least once: each accepted revision is written (fsync'd) to every matching sink's spool before its
// first attempt and removed only after a 2xx. Receivers deduplicate on `webhook-id` = "<incident id>-<revision>".
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "faultline/incident.hpp"
#include "faultline/metrics.hpp"
#include "faultline/server.hpp"
#include "faultline/sink_config.hpp"
#include "faultline/types.hpp"

namespace faultline {

struct RuleSet;

// ---------------------------------------------------------------------------------------------------------------
// Sink configuration: SinkConfig, TlsOptions, WebhookFormat and validate_sink are in sink_config.hpp.

// For `--webhook URL` and `--alertmanager URL`: a sink named `name` (default "webhook" / "alertmanager") with
// defaults. Returns nullopt and sets `error` for a URL that is not http(s)://host[:port][/path].
std::optional<SinkConfig> sink_from_url(std::string_view url, WebhookFormat format, std::string_view name = {},
                                        std::string* error = nullptr);

struct ParsedUrl {
  std::string scheme;  // "http" | "https"
  std::string host;    // without brackets for IPv6
  std::uint16_t port = 0;
  std::string target;  // path + query, at least "/"
};
std::optional<ParsedUrl> parse_url(std::string_view url, std::string* error = nullptr);

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

struct AlertmanagerContext {
  std::string external_url;  // for generatorURL: <external_url>/api/v1/incidents/<id>
  Duration resend_interval = std::chrono::minutes(1);
};
// One Alertmanager v2 alert object (JSON) for an incident. A firing alert ends at now + 4 × resend interval unless
// re-sent; a resolved one ends at `resolved_at`.
std::string alertmanager_alert(const Incident& incident, const AlertmanagerContext& context,
                               std::chrono::system_clock::time_point now,
                               std::optional<std::chrono::system_clock::time_point> resolved_at = std::nullopt);

// Whether a sink takes this revision. `sent_before`: an earlier revision of the incident went to this sink (its
// resolution then goes too even when filters would now refuse it).
bool sink_accepts(const SinkConfig& sink, const Incident& incident, bool sent_before);

// ---------------------------------------------------------------------------------------------------------------
// Spool: one directory per sink, one file per pending delivery, written to a temporary name, fsync'd, renamed.
// File format (versioned JSON): {"format":"faultline-spool","version":1,"delivery_id":..., "incident_id":...,
// "revision":..., "created_ms":..., "body":"<incident JSON>"}. Unreadable files are dropped and counted.

struct SpoolEntry {
  std::uint64_t seq = 0;
  std::string path;
  std::string delivery_id;  // "<incident id>-<revision>"
  std::string incident_id;
  std::uint32_t revision = 0;
  std::int64_t created_ms = 0;  // Unix ms when first spooled
  std::uint64_t bytes = 0;      // size of the file
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
  bool open(std::string* error, SpoolDrops* drops = nullptr);

  enum class PutResult : std::uint8_t { stored, duplicate, failed };
  // Writes one delivery durably. Oldest deliveries beyond max_bytes are dropped (reported in `drops`).
  PutResult put(const Incident& incident, std::string_view body, std::int64_t now_ms, SpoolDrops* drops = nullptr,
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
  std::string dir_;
  std::uint64_t max_bytes_;
  Duration max_age_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t bytes_ = 0;
  std::vector<SpoolEntry> entries_;  // in seq order (a deque would do; the spool is small)
  std::set<std::string> ids_;
};

// ---------------------------------------------------------------------------------------------------------------
// Incident store: the latest revision of recent incidents, for the API and the page, and for deduplication (a
// revision not newer than the one held is ignored). Optionally persisted as an append-only JSON-lines log that is
// compacted when it grows; on open the latest revision of each incident is restored.

struct StoredIncident {
  Incident incident;
  std::string json;     // to_json(incident)
  std::uint64_t order;  // grows with every update; newest first in queries
};

struct IncidentQuery {
  std::vector<std::string> rules;        // any of these; empty: all
  std::vector<Severity> severities;      // any of these; empty: all
  std::optional<Time> since;             // last_seen at or after
  std::optional<IncidentStatus> status;  // firing | resolved
  std::size_t limit = 100;
};

class IncidentStore {
 public:
  explicit IncidentStore(std::size_t capacity = 1000, std::string log_path = {});
  bool open(std::string* error = nullptr);

  enum class Accept : std::uint8_t { added, updated, duplicate };
  Accept accept(const Incident& incident);

  const StoredIncident* find(std::string_view id) const;
  std::vector<const StoredIncident*> query(const IncidentQuery& query) const;  // newest update first
  std::vector<const StoredIncident*> firing() const;
  std::size_t size() const { return by_id_.size(); }

 private:
  void append_log(const std::string& json);
  void compact_log();
  void evict();
  std::size_t capacity_;
  std::string log_path_;
  std::uint64_t next_order_ = 1;
  std::uint64_t log_bytes_ = 0;
  std::unordered_map<std::string, StoredIncident> by_id_;
};

// ---------------------------------------------------------------------------------------------------------------
// Outputs: the HTTP server, the incident store and every webhook sink, on one io_context thread.

struct OutputsOptions {
  ServerOptions server;
  std::vector<SinkConfig> sinks;
  // Holds spool/<sink>/ and incidents.jsonl. Required when sinks are configured; empty: nothing persisted.
  std::string state_dir;
  // Base URL for links (Alertmanager generatorURL, the page); default "http://<listen address>".
  std::string external_url;
  RedactionOptions redaction;
  // The pipeline → outputs queue. At `queue_capacity` backpressure() turns true and the reader should pause;
  // submit() blocks only at 4 × queue_capacity (a reader that ignores backpressure), it never drops.
  std::size_t queue_capacity = 1024;
  std::size_t max_incidents = 1000;  // kept for the API (firing ones are evicted last)
  std::string version = std::string(faultline_version());
};

// Every problem with the options (listen address, sinks, redaction patterns, state dir), one message each.
std::vector<std::string> validate_outputs(const OutputsOptions& options);

class Outputs {
 public:
  explicit Outputs(OutputsOptions options, std::shared_ptr<Metrics> metrics = nullptr);
  ~Outputs();  // stop() with no grace if still running
  Outputs(const Outputs&) = delete;
  Outputs& operator=(const Outputs&) = delete;

  // Binds the listener, opens the store and the spools (pending deliveries resume), starts the io thread.
  bool start(std::string* error = nullptr);

  // Thread-safe. Hands one incident revision to the io thread (store, metrics, spools). Returns false only after
  // stop(). Blocks while the queue is at its hard bound (4 × queue_capacity).
  bool submit(const Incident& incident);
  // True while the queue is at or above queue_capacity: the reader should pause (its lag grows, visibly).
  bool backpressure() const;
  // Waits until the queue is below queue_capacity or `max` passed; returns !backpressure().
  bool wait_for_space(Duration max);

  // Readiness for /readyz: each component the daemon reports ("rules", "sources") must be ok. The state dir's
  // writability is checked by /readyz itself when a state dir is set.
  void set_ready(std::string_view component, bool ok, std::string detail = {});
  // The running rule set, for /api/v1/rules and faultline_rules_loaded.
  void update_rules(const RuleSet& rules);

  Metrics& metrics() { return *metrics_; }
  const std::shared_ptr<Metrics>& shared_metrics() const { return metrics_; }
  // The address actually bound, "host:port" (after start; empty without a server).
  std::string listen_address() const;

  // Stops taking incidents, spools what is queued, lets sinks deliver until `grace` passes, then closes everything.
  // Deliveries still pending stay in the spool for the next start.
  void stop(Duration grace = std::chrono::seconds(5));

  struct Impl;

 private:
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
