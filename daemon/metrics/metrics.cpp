// Every metric family faultline exports is declared here, once. docs/metrics.md documents each of them; keep the two
// in step (tests/unit/test_metrics.cpp checks that every family here is named in the doc).
#include "faultline/metrics.hpp"

#include <prometheus/text_serializer.h>

#include <cassert>
#include <set>
#include <sstream>

#include "faultline/rules.hpp"

namespace faultline {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

std::string sev(Severity s) { return std::string(to_string(s)); }

}  // namespace

Metrics::Metrics(std::string_view version) : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  incidents_total_ = &BuildCounter()
                          .Name("faultline_incidents_total")
                          .Help("Incidents raised (counted once per incident id, at its first revision seen).")
                          .Register(r);
  incidents_active_ = &BuildGauge()
                           .Name("faultline_incidents_active")
                           .Help("Incidents currently firing, by rule and current severity.")
                           .Register(r);
  event_matches_total_ = &BuildCounter()
                              .Name("faultline_event_matches_total")
                              .Help("Log lines that matched a rule event (confirmed hits).")
                              .Register(r);
  lines_read_total_ =
      &BuildCounter().Name("faultline_lines_read_total").Help("Log lines read, by configured source.").Register(r);
  bytes_read_total_ =
      &BuildCounter().Name("faultline_bytes_read_total").Help("Log bytes read, by configured source.").Register(r);
  lines_truncated_total_ = &BuildCounter()
                                .Name("faultline_lines_truncated_total")
                                .Help("Log lines longer than the maximum line length, cut to it.")
                                .Register(r);
  files_rotated_total_ =
      &BuildCounter().Name("faultline_files_rotated_total").Help("Followed files that were rotated.").Register(r);
  files_truncated_total_ = &BuildCounter()
                                .Name("faultline_files_truncated_total")
                                .Help("Followed files truncated in place (copytruncate); reading restarts at 0.")
                                .Register(r);
  files_lost_total_ = &BuildCounter()
                           .Name("faultline_files_lost_total")
                           .Help("Files rotated away or deleted before they were read to the end.")
                           .Register(r);
  files_unreadable_total_ = &BuildCounter()
                                 .Name("faultline_files_unreadable_total")
                                 .Help("Files that matched a source but could not be opened or read.")
                                 .Register(r);
  source_lag_bytes_ = &BuildGauge()
                           .Name("faultline_source_lag_bytes")
                           .Help("Bytes written to a source's files but not read yet.")
                           .Register(r);
  checkpoint_age_seconds_ = &BuildGauge()
                                 .Name("faultline_checkpoint_age_seconds")
                                 .Help("Seconds since the last durable checkpoint (0 before the first).")
                                 .Register(r);
  rules_loaded_family_ =
      &BuildGauge().Name("faultline_rules_loaded").Help("Rules in the running rule set.").Register(r);
  reloads_total_ = &BuildCounter()
                        .Name("faultline_reloads_total")
                        .Help("Rule set reloads, by result (success, failure).")
                        .Register(r);
  last_reload_success_ = &BuildGauge()
                              .Name("faultline_last_reload_success_timestamp_seconds")
                              .Help("Unix time of the last successful rule set load.")
                              .Register(r);
  webhook_deliveries_total_ = &BuildCounter()
                                   .Name("faultline_webhook_deliveries_total")
                                   .Help("Webhook delivery attempts, by sink and result.")
                                   .Register(r);
  webhook_retries_total_ = &BuildCounter()
                                .Name("faultline_webhook_retries_total")
                                .Help("Webhook attempts that retried an earlier failed attempt.")
                                .Register(r);
  spool_bytes_ = &BuildGauge()
                      .Name("faultline_spool_bytes")
                      .Help("Bytes of deliveries waiting in a sink's spool.")
                      .Register(r);
  spool_oldest_pending_seconds_ = &BuildGauge()
                                       .Name("faultline_spool_oldest_pending_seconds")
                                       .Help("Age of the oldest delivery waiting in a sink's spool (0 when empty).")
                                       .Register(r);
  spool_dropped_total_ = &BuildCounter()
                              .Name("faultline_spool_dropped_total")
                              .Help("Deliveries dropped without being delivered, by sink and reason.")
                              .Register(r);
  lines_shed_total_ = &BuildCounter()
                           .Name("faultline_lines_shed_total")
                           .Help("Log lines dropped unread because the daemon could not keep up.")
                           .Register(r);
  incident_latency_seconds_ = &BuildHistogram()
                                   .Name("faultline_incident_latency_seconds")
                                   .Help("Time from reading a log line to emitting the incident revision it caused.")
                                   .Register(r);
  build_info_ =
      &BuildGauge().Name("faultline_build_info").Help("Always 1; the version is a label.").Register(r);
  stories_dropped_total_ = &BuildCounter()
                                .Name("faultline_stories_dropped_total")
                                .Help("Correlation state machines dropped at the configured bound.")
                                .Register(r);
  streams_ended_total_ = &BuildCounter()
                              .Name("faultline_streams_ended_total")
                              .Help("Streams whose last file was deleted with none after it; their state was let go.")
                              .Register(r);
  incidents_resolved_early_total_ =
      &BuildCounter()
           .Name("faultline_incidents_resolved_early_total")
           .Help("Firing incidents resolved before their quiet period because the open incidents reached their bound.")
           .Register(r);
  incident_queue_length_family_ = &BuildGauge()
                                       .Name("faultline_incident_queue_length")
                                       .Help("Incident revisions waiting between the pipeline and the outputs.")
                                       .Register(r);
  http_requests_total_ = &BuildCounter()
                              .Name("faultline_http_requests_total")
                              .Help("HTTP requests served, by handler and status code.")
                              .Register(r);
  files_waiting_family_ = &BuildGauge()
                               .Name("faultline_files_waiting")
                               .Help("Followed files without a descriptor (beyond tail.max_open_files) with bytes that "
                                     "may be unread.")
                               .Register(r);
  file_reopens_total_ = &BuildCounter()
                             .Name("faultline_file_reopens_total")
                             .Help("Files given a descriptor again after waiting without one.")
                             .Register(r);
  state_write_failures_total_ = &BuildCounter()
                                    .Name("faultline_state_write_failures_total")
                                    .Help("Writes to the state dir that failed (a full or read-only disk), by what "
                                          "was written: checkpoint, journal or spool.")
                                    .Register(r);
  state_writable_family_ = &BuildGauge()
                                .Name("faultline_state_writable")
                                .Help("1 while the last checkpoint, journal and spool writes succeeded, else 0.")
                                .Register(r);

  timestamps_rejected_total_ = &BuildCounter()
                                  .Name("faultline_timestamps_rejected_total")
                                  .Help("Log lines whose own time was not taken (the line kept its stream's time), "
                                        "by reason: future = more than a day ahead of the wall clock.")
                                  .Register(r);
  stream_clock_resets_total_ = &BuildCounter()
                                   .Name("faultline_stream_clock_resets_total")
                                   .Help("Log lines dated more than an hour before their stream's clock: the stream's "
                                         "clock went back there and a new epoch of the stream began.")
                                   .Register(r);

  fingerprints_distinct_family_ = &BuildGauge()
                                      .Name("faultline_fingerprints_distinct")
                                      .Help("Distinct fingerprints of failure stories seen (claimed by a rule or not).")
                                      .Register(r);
  failure_stories_total_ = &BuildCounter()
                                .Name("faultline_failure_stories_total")
                                .Help("Failure stories found by the story anchors, by outcome.")
                                .Register(r);
  fingerprints_distinct_ = &fingerprints_distinct_family_->Add({});
  failure_stories_ = {&failure_stories_total_->Add({{"outcome", "raised"}}),
                      &failure_stories_total_->Add({{"outcome", "claimed"}}),
                      &failure_stories_total_->Add({{"outcome", "below_error"}}),
                      &failure_stories_total_->Add({{"outcome", "silenced"}})};
  lines_shed_ = &lines_shed_total_->Add({});
  state_write_failures_[0] = &state_write_failures_total_->Add({{"what", "checkpoint"}});
  state_write_failures_[1] = &state_write_failures_total_->Add({{"what", "journal"}});
  state_write_failures_[2] = &state_write_failures_total_->Add({{"what", "spool"}});
  state_writable_ = &state_writable_family_->Add({});
  state_writable_->Set(1);
  timestamps_rejected_future_ = &timestamps_rejected_total_->Add({{"reason", "future"}});
  stream_clock_resets_ = &stream_clock_resets_total_->Add({});
  files_waiting_ = &files_waiting_family_->Add({});
  file_reopens_ = &file_reopens_total_->Add({});
  incident_latency_ = &incident_latency_seconds_->Add(
      {}, prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                                                  10, 30, 60, 300});
  rules_loaded_ = &rules_loaded_family_->Add({});
  stories_dropped_ = &stories_dropped_total_->Add({});
  incidents_resolved_early_ = &incidents_resolved_early_total_->Add({});
  streams_ended_ = &streams_ended_total_->Add({});
  incident_queue_length_ = &incident_queue_length_family_->Add({});
  checkpoint_age_ = &checkpoint_age_seconds_->Add({});
  last_reload_success_ts_ = &last_reload_success_->Add({});
  reload_success_ = &reloads_total_->Add({{"result", "success"}});
  reload_failure_ = &reloads_total_->Add({{"result", "failure"}});
  build_info_->Add({{"version", std::string(version)}}).Set(1);
}

Metrics::~Metrics() = default;

std::string Metrics::serialize() {
  if (auto ms = checkpoint_unix_ms_.load(); ms > 0) {
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    checkpoint_age_->Set(static_cast<double>(std::max<std::int64_t>(0, now - ms)) / 1000.0);
  }
  {
    std::lock_guard running(hooks_running_);
    std::vector<std::function<void()>> hooks;
    {
      std::lock_guard lock(mutex_);
      for (const auto& [id, hook] : hooks_) hooks.push_back(hook);
    }
    for (auto& hook : hooks) hook();
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

std::size_t Metrics::add_collect_hook(std::function<void()> hook) {
  std::lock_guard lock(mutex_);
  hooks_.emplace_back(next_hook_id_, std::move(hook));
  return next_hook_id_++;
}

void Metrics::remove_collect_hook(std::size_t id) {
  std::lock_guard running(hooks_running_);
  std::lock_guard lock(mutex_);
  std::erase_if(hooks_, [id](const auto& h) { return h.first == id; });
}

SourceMetrics& Metrics::source(std::string_view name) {
  std::lock_guard lock(mutex_);
  for (auto& [n, m] : sources_)
    if (n == name) return *m;
  prometheus::Labels l{{"source", std::string(name)}};
  auto m = std::unique_ptr<SourceMetrics>(new SourceMetrics{
      lines_read_total_->Add(l), bytes_read_total_->Add(l), lines_truncated_total_->Add(l),
      files_rotated_total_->Add(l), files_truncated_total_->Add(l), files_lost_total_->Add(l),
      files_unreadable_total_->Add(l), source_lag_bytes_->Add(l)});
  sources_.emplace_back(std::string(name), std::move(m));
  return *sources_.back().second;
}

SinkMetrics& Metrics::sink(std::string_view name) {
  std::lock_guard lock(mutex_);
  for (auto& [n, m] : sinks_)
    if (n == name) return *m;
  std::string s(name);
  auto d = [&](const char* result) -> prometheus::Counter& {
    return webhook_deliveries_total_->Add({{"sink", s}, {"result", result}});
  };
  auto drop = [&](const char* reason) -> prometheus::Counter& {
    return spool_dropped_total_->Add({{"sink", s}, {"reason", reason}});
  };
  auto m = std::unique_ptr<SinkMetrics>(new SinkMetrics{
      d("success"), d("http_error"), d("network_error"), d("timeout"), d("tls_error"),
      webhook_retries_total_->Add({{"sink", s}}), spool_bytes_->Add({{"sink", s}}),
      spool_oldest_pending_seconds_->Add({{"sink", s}}), drop("spool_full"), drop("max_age"), drop("rejected"),
      drop("corrupt")});
  sinks_.emplace_back(s, std::move(m));
  return *sinks_.back().second;
}

EventMatchCounters Metrics::event_counters(const RuleSet& rules) {
  EventMatchCounters out;
  out.reserve(rules.rules.size());
  for (const auto& rule : rules.rules) {
    auto& row = out.emplace_back();
    row.reserve(rule.events.size());
    for (const auto& ev : rule.events) row.push_back(&event_matches_total_->Add({{"rule", rule.id}, {"event", ev.name}}));
  }
  return out;
}

prometheus::Counter& Metrics::incidents(std::string_view rule, Severity severity) {
  return incidents_total_->Add({{"rule", std::string(rule)}, {"severity", sev(severity)}});
}

prometheus::Gauge& Metrics::incidents_active(std::string_view rule, Severity severity) {
  return incidents_active_->Add({{"rule", std::string(rule)}, {"severity", sev(severity)}});
}

void Metrics::declare_rules(const RuleSet& rules) {
  for (const auto& r : rules.rules) {
    std::set<Severity> severities{r.severity};
    for (const auto& step : r.sequence)
      if (step.severity) severities.insert(*step.severity);
    for (auto s : severities) {
      incidents(r.id, s);
      incidents_active(r.id, s);
    }
  }
  rules_loaded_->Set(static_cast<double>(rules.rules.size()));
}

void Metrics::record_reload(bool ok, std::size_t rules_loaded) {
  if (!ok) {
    reload_failure_->Increment();
    return;
  }
  reload_success_->Increment();
  rules_loaded_->Set(static_cast<double>(rules_loaded));
  last_reload_success_ts_->SetToCurrentTime();
}

prometheus::Counter& Metrics::state_write_failures(std::string_view what) {
  if (what == "checkpoint") return *state_write_failures_[0];
  if (what == "journal") return *state_write_failures_[1];
  assert(what == "spool");
  return *state_write_failures_[2];
}

void Metrics::record_checkpoint(std::chrono::system_clock::time_point when) {
  checkpoint_unix_ms_.store(
      std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count());
  checkpoint_age_->Set(0);
}

void Metrics::observe_incident_latency(std::chrono::steady_clock::time_point read_at) {
  if (read_at == std::chrono::steady_clock::time_point{}) return;
  auto d = std::chrono::steady_clock::now() - read_at;
  incident_latency_->Observe(std::max(0.0, std::chrono::duration<double>(d).count()));
}

void Metrics::record_http_request(std::string_view handler, unsigned status) {
  http_requests_total_->Add({{"handler", std::string(handler)}, {"code", std::to_string(status)}}).Increment();
}

}  // namespace faultline
