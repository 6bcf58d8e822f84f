// metrics: every Prometheus metric family faultline exports, declared in one place (daemon/metrics/metrics.cpp) and
// documented in docs/metrics.md. Callers ask once for the handle they need (a prometheus::Counter&, Gauge&, ...) and
// keep it; the hot path then does one atomic add. Label values are bounded: rule and event ids, severities, configured
// source and sink names, fixed result/reason words — never a path or a raw log field.
// Thread-safe: families and handles may be used from any thread (prometheus-cpp locks inside Family::Add and uses
// atomics in the metrics). Handles live as long as the Metrics object.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "faultline/types.hpp"

namespace faultline {

struct RuleSet;

// Handles for one configured log source (label `source` = the configured name, never a path).
struct SourceMetrics {
  prometheus::Counter& lines_read;
  prometheus::Counter& bytes_read;
  prometheus::Counter& lines_truncated;
  prometheus::Counter& files_rotated;
  prometheus::Counter& files_truncated;
  prometheus::Counter& files_lost;
  prometheus::Counter& files_unreadable;
  prometheus::Gauge& lag_bytes;
};

// Handles for one webhook sink (label `sink` = the configured name).
struct SinkMetrics {
  prometheus::Counter& success;        // faultline_webhook_deliveries_total{result="success"}
  prometheus::Counter& http_error;     // ... result="http_error": the receiver answered non-2xx
  prometheus::Counter& network_error;  // ... result="network_error": resolve, connect, read or write failed
  prometheus::Counter& timeout;        // ... result="timeout": the deadline passed
  prometheus::Counter& tls_error;      // ... result="tls_error": handshake or certificate verification failed
  prometheus::Counter& retries;
  prometheus::Gauge& spool_bytes;
  prometheus::Gauge& spool_oldest_pending_seconds;
  prometheus::Counter& dropped_spool_full;  // faultline_spool_dropped_total{reason="spool_full"}
  prometheus::Counter& dropped_max_age;     // ... reason="max_age"
  prometheus::Counter& dropped_rejected;    // ... reason="rejected": the receiver refused the payload itself (400/413/422)
  prometheus::Counter& dropped_corrupt;     // ... reason="corrupt": an unreadable spool file
};

// Per (rule, event) match counters, indexed [rule index][event index] like CompiledRules. Build one per rule set
// (after a reload, build a new one); the pipeline thread then increments without any lookup.
using EventMatchCounters = std::vector<std::vector<prometheus::Counter*>>;

class Metrics {
 public:
  explicit Metrics(std::string_view version = faultline_version());
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  prometheus::Registry& registry() { return *registry_; }
  const std::shared_ptr<prometheus::Registry>& shared_registry() const { return registry_; }

  // The Prometheus text exposition format (0.0.4) of everything registered. Runs the collect hooks first.
  std::string serialize();
  // Called before every serialize(), e.g. to refresh gauges that depend on the time of the scrape. Returns an id for
  // remove_collect_hook, which waits for a running serialize() to finish with the hook.
  std::size_t add_collect_hook(std::function<void()> hook);
  void remove_collect_hook(std::size_t id);

  // --- handles -----------------------------------------------------------------------------------------------
  SourceMetrics& source(std::string_view name);
  SinkMetrics& sink(std::string_view name);
  EventMatchCounters event_counters(const RuleSet& rules);
  prometheus::Counter& incidents(std::string_view rule, Severity severity);
  prometheus::Gauge& incidents_active(std::string_view rule, Severity severity);

  // --- process-wide series -------------------------------------------------------------------------------------
  prometheus::Counter& lines_shed() { return *lines_shed_; }
  prometheus::Histogram& incident_latency() { return *incident_latency_; }
  prometheus::Gauge& rules_loaded() { return *rules_loaded_; }
  prometheus::Counter& stories_dropped() { return *stories_dropped_; }
  prometheus::Counter& incidents_resolved_early() { return *incidents_resolved_early_; }
  prometheus::Counter& streams_ended() { return *streams_ended_; }
  prometheus::Gauge& fingerprints_distinct() { return *fingerprints_distinct_; }
  // Failure stories by outcome, indexed like PipelineTotals::failure_stories.
  prometheus::Counter& failure_stories(std::size_t outcome) { return *failure_stories_[outcome]; }
  prometheus::Gauge& incident_queue_length() { return *incident_queue_length_; }
  prometheus::Gauge& files_waiting() { return *files_waiting_; }
  prometheus::Counter& file_reopens() { return *file_reopens_; }
  // faultline_state_write_failures_total{what}: `what` is "checkpoint", "journal" or "spool".
  prometheus::Counter& state_write_failures(std::string_view what);
  // faultline_state_writable: 1 while the last write of each kind to the state dir succeeded, else 0.
  prometheus::Gauge& state_writable() { return *state_writable_; }
  prometheus::Counter& timestamps_rejected_future() { return *timestamps_rejected_future_; }
  prometheus::Counter& stream_clock_resets() { return *stream_clock_resets_; }

  // The running rule set: faultline_rules_loaded, and the incident series of every severity a rule can raise start
  // at 0 (so increase() sees a rule's first incident).
  void declare_rules(const RuleSet& rules);
  // A reload finished: counts it by result; on success also sets the timestamp and the number of rules.
  void record_reload(bool ok, std::size_t rules_loaded = 0);
  // A checkpoint was written now; faultline_checkpoint_age_seconds is computed at scrape time.
  void record_checkpoint(std::chrono::system_clock::time_point when = std::chrono::system_clock::now());
  // Observes the latency of an incident from the read of its line (Incident::read_at). Ignores an unset time.
  void observe_incident_latency(std::chrono::steady_clock::time_point read_at);
  // One HTTP request served (handler is one of a fixed set of route names).
  void record_http_request(std::string_view handler, unsigned status);

 private:
  template <class T>
  using Fam = prometheus::Family<T>;

  std::shared_ptr<prometheus::Registry> registry_;
  Fam<prometheus::Counter>* incidents_total_;
  Fam<prometheus::Gauge>* incidents_active_;
  Fam<prometheus::Counter>* event_matches_total_;
  Fam<prometheus::Counter>* lines_read_total_;
  Fam<prometheus::Counter>* bytes_read_total_;
  Fam<prometheus::Counter>* lines_truncated_total_;
  Fam<prometheus::Counter>* files_rotated_total_;
  Fam<prometheus::Counter>* files_truncated_total_;
  Fam<prometheus::Counter>* files_lost_total_;
  Fam<prometheus::Counter>* files_unreadable_total_;
  Fam<prometheus::Gauge>* source_lag_bytes_;
  Fam<prometheus::Gauge>* checkpoint_age_seconds_;
  Fam<prometheus::Gauge>* rules_loaded_family_;
  Fam<prometheus::Counter>* reloads_total_;
  Fam<prometheus::Gauge>* last_reload_success_;
  Fam<prometheus::Counter>* webhook_deliveries_total_;
  Fam<prometheus::Counter>* webhook_retries_total_;
  Fam<prometheus::Gauge>* spool_bytes_;
  Fam<prometheus::Gauge>* spool_oldest_pending_seconds_;
  Fam<prometheus::Counter>* spool_dropped_total_;
  Fam<prometheus::Counter>* lines_shed_total_;
  Fam<prometheus::Histogram>* incident_latency_seconds_;
  Fam<prometheus::Gauge>* build_info_;
  Fam<prometheus::Counter>* stories_dropped_total_;
  Fam<prometheus::Counter>* incidents_resolved_early_total_;
  Fam<prometheus::Counter>* streams_ended_total_;
  Fam<prometheus::Gauge>* incident_queue_length_family_;
  Fam<prometheus::Counter>* http_requests_total_;
  Fam<prometheus::Gauge>* files_waiting_family_;
  Fam<prometheus::Counter>* file_reopens_total_;
  Fam<prometheus::Counter>* state_write_failures_total_;
  Fam<prometheus::Gauge>* state_writable_family_;
  Fam<prometheus::Counter>* timestamps_rejected_total_;
  Fam<prometheus::Counter>* stream_clock_resets_total_;
  Fam<prometheus::Gauge>* fingerprints_distinct_family_;
  Fam<prometheus::Counter>* failure_stories_total_;

  prometheus::Counter* lines_shed_;
  prometheus::Histogram* incident_latency_;
  prometheus::Gauge* rules_loaded_;
  prometheus::Counter* stories_dropped_;
  prometheus::Counter* incidents_resolved_early_;
  prometheus::Counter* streams_ended_;
  prometheus::Gauge* incident_queue_length_;
  prometheus::Gauge* files_waiting_;
  prometheus::Counter* file_reopens_;
  prometheus::Counter* state_write_failures_[3];  // checkpoint, journal, spool
  prometheus::Gauge* state_writable_;
  prometheus::Counter* timestamps_rejected_future_;
  prometheus::Counter* stream_clock_resets_;
  prometheus::Gauge* fingerprints_distinct_;
  std::array<prometheus::Counter*, 4> failure_stories_{};
  prometheus::Gauge* checkpoint_age_;
  prometheus::Gauge* last_reload_success_ts_;
  prometheus::Counter* reload_success_;
  prometheus::Counter* reload_failure_;

  std::mutex mutex_;  // guards the maps below and the hooks
  std::vector<std::pair<std::string, std::unique_ptr<SourceMetrics>>> sources_;
  std::vector<std::pair<std::string, std::unique_ptr<SinkMetrics>>> sinks_;
  std::mutex hooks_running_;  // held while hooks run, so a removed hook is never running after removal
  std::vector<std::pair<std::size_t, std::function<void()>>> hooks_;
  std::size_t next_hook_id_ = 1;
  std::atomic<std::int64_t> checkpoint_unix_ms_{0};
};

// ---------------------------------------------------------------------------------------------------------------
// Collectors: counts the rooms keep themselves (the tailer's, the decoders', the correlator's), turned into the
// families above when /metrics is scraped instead of being copied into counters as they change. The owning thread
// publishes plain totals (cumulative since start); the collector brings each counter up to its total (counters never
// fall) and sets the gauges, on the scraping thread.

// Totals of one configured source (label `source`).
struct SourceTotals {
  std::string source;
  std::uint64_t lines_read = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t lines_truncated = 0;
  std::uint64_t files_rotated = 0;
  std::uint64_t files_truncated = 0;
  std::uint64_t files_lost = 0;
  std::uint64_t files_unreadable = 0;
  std::optional<std::uint64_t> lag_bytes;  // unset: the gauge keeps its value
};

struct PipelineTotals {
  std::vector<SourceTotals> sources;  // one entry per source; a source named twice is summed
  std::uint64_t stories_dropped = 0;
  std::uint64_t incidents_resolved_early = 0;    // firing incidents resolved at the open incidents' byte bound
  std::uint64_t streams_ended = 0;               // streams whose last file was deleted (their state let go)
  std::uint64_t timestamps_rejected_future = 0;  // lines dated too far ahead of the wall clock
  std::uint64_t stream_clock_resets = 0;         // lines far before their stream's clock: a new epoch of it
  std::uint64_t fingerprints_distinct = 0;  // failure stories' fingerprints in the inventory
  // Failure stories by outcome: raised (unclassified), claimed (a typed rule), below_error, silenced.
  std::array<std::uint64_t, 4> failure_stories{};
  std::uint64_t files_waiting = 0;  // files kept without a descriptor with bytes that may be unread
  std::uint64_t file_reopens = 0;
};

class TotalsCollector {
 public:
  // Registers a collect hook with `metrics`, removed again by the destructor.
  explicit TotalsCollector(Metrics& metrics);
  ~TotalsCollector();
  TotalsCollector(const TotalsCollector&) = delete;
  TotalsCollector& operator=(const TotalsCollector&) = delete;

  // Thread-safe; cheap (a move under a mutex). The latest totals replace the earlier ones.
  void publish(PipelineTotals totals);
  // What a scrape runs first (Metrics::serialize); callable directly.
  void collect();

 private:
  Metrics& metrics_;
  std::size_t hook_ = 0;
  std::mutex mutex_;
  PipelineTotals latest_;
  bool fresh_ = false;
};

}  // namespace faultline
