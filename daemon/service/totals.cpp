// Totals for the metrics collector and the final stats line (totals.hpp).
#include "totals.hpp"

#include <nlohmann/json.hpp>

#include "faultline/config.hpp"

namespace faultline::service_detail {
namespace {

std::string configured_name(const SourceSpec& s) {
  if (!s.source.empty()) return s.source;
  return s.kind == SourceKind::files ? "file" : s.kind == SourceKind::kmsg ? "kmsg" : "stdin";
}

SourceTotals& totals_of(std::vector<SourceTotals>& sources, std::string_view name) {
  for (auto& s : sources)
    if (s.source == name) return s;
  sources.push_back(SourceTotals{std::string(name)});
  return sources.back();
}

}  // namespace

void TailAttribution::add_to(std::vector<SourceTotals>& sources, const Tailer& tailer, const Config&) {
  // Each file's counts go to the source it belonged to. A source's lost-files count rises by one at every look at
  // which its unread-bytes total grew. No series is made for a source with nothing to count.
  for (const SourceTailStats& st : tailer.source_stats()) {
    Seen& seen = seen_[st.source];
    if (st.rotated_unread_bytes > seen.lost_bytes) ++seen.files_lost;
    seen.lost_bytes = st.rotated_unread_bytes;
    if (st.unreadable == 0 && seen.files_lost == 0) continue;
    SourceTotals& s = totals_of(sources, st.source);
    s.files_unreadable += st.unreadable;
    s.files_lost += seen.files_lost;
  }
}

PipelineTotals gather_totals(const StreamAdapter& adapter, const Tailer& tailer, const Pipeline& pipeline,
                             const Config& config, TailAttribution& attribution, bool lag) {
  PipelineTotals out;
  for (std::uint32_t i = 0; i < adapter.streams(); ++i) {
    StreamCounts c = adapter.counts(i);
    SourceTotals& s = totals_of(out.sources, adapter.source(i));
    s.lines_read += c.lines;
    s.bytes_read += c.bytes;
    s.lines_truncated += c.truncated_lines;
    s.files_rotated += c.files_rotated;
    s.files_truncated += c.files_truncated;
  }
  attribution.add_to(out.sources, tailer, config);
  if (lag)
    for (const auto& [source, bytes] : tailer.lag_by_source()) totals_of(out.sources, source).lag_bytes = bytes;
  out.stories_dropped = pipeline.correlator_stats().stories_dropped;
  out.incidents_resolved_early = pipeline.correlator_stats().incidents_resolved_early;
  out.timestamps_rejected_future = pipeline.correlator_stats().times_rejected_future;
  out.stream_clock_resets = pipeline.correlator_stats().times_went_back;
  const DetectorStats& d = pipeline.detector().stats();
  out.fingerprints_distinct = pipeline.detector().distinct();
  out.failure_stories = {d.raised, d.claimed, d.below_error, d.silenced};
  out.files_waiting = tailer.stats().files_waiting;
  out.file_reopens = tailer.stats().file_reopens;
  out.streams_ended = tailer.stats().streams_ended;
  return out;
}

PipelineTotals initial_totals(const Config& config) {
  PipelineTotals out;
  for (const auto& s : config.sources) totals_of(out.sources, configured_name(s));
  return out;
}

std::string stats_json(const Pipeline& pipeline, const Tailer& tailer, const EmitCounts& emits) {
  const auto& p = pipeline.stats();
  const auto& t = tailer.stats();
  nlohmann::json j = {{"lines", p.lines},
                      {"bytes", p.bytes},
                      {"truncated_lines", p.truncated},
                      {"hits", p.hits},
                      {"incidents", p.incidents},
                      {"emitted", emits.emitted},
                      {"suppressed_duplicates", emits.suppressed},
                      {"files_opened", t.files_opened},
                      {"rotations", t.rotations},
                      {"truncations", t.truncations},
                      {"deleted", t.deleted},
                      {"streams_ended", t.streams_ended},
                      {"unreadable", t.unreadable},
                      {"rotated_unread_bytes", t.rotated_unread_bytes},
                      {"late_bytes", t.late_bytes},
                      {"watched_files", t.watched_files},
                      {"files_waiting", t.files_waiting},
                      {"file_reopens", t.file_reopens},
                      {"kmsg_records", t.kmsg_records},
                      {"kmsg_lost", t.kmsg_lost}};
  return j.dump();
}

}  // namespace faultline::service_detail
