// TotalsCollector (metrics.hpp): published totals → counters and gauges, at scrape time.
#include <map>

#include "faultline/metrics.hpp"

namespace faultline {
namespace {

// Counters only rise: a total below the counter (never expected) leaves it as it is.
void raise_to(prometheus::Counter& counter, std::uint64_t total) {
  double v = static_cast<double>(total);
  if (v > counter.Value()) counter.Increment(v - counter.Value());
}

}  // namespace

TotalsCollector::TotalsCollector(Metrics& metrics) : metrics_(metrics) {
  hook_ = metrics_.add_collect_hook([this] { collect(); });
}

TotalsCollector::~TotalsCollector() { metrics_.remove_collect_hook(hook_); }

void TotalsCollector::publish(PipelineTotals totals) {
  std::lock_guard lock(mutex_);
  latest_ = std::move(totals);
  fresh_ = true;
}

void TotalsCollector::collect() {
  PipelineTotals t;
  {
    std::lock_guard lock(mutex_);
    if (!fresh_) return;  // nothing new since the last scrape
    t = latest_;
    fresh_ = false;
  }
  std::map<std::string, SourceTotals> by_source;
  for (auto& s : t.sources) {
    auto [it, added] = by_source.try_emplace(s.source, s);
    if (added) continue;
    SourceTotals& sum = it->second;
    sum.lines_read += s.lines_read;
    sum.bytes_read += s.bytes_read;
    sum.lines_truncated += s.lines_truncated;
    sum.files_rotated += s.files_rotated;
    sum.files_truncated += s.files_truncated;
    sum.files_lost += s.files_lost;
    sum.files_unreadable += s.files_unreadable;
    if (s.lag_bytes) sum.lag_bytes = sum.lag_bytes.value_or(0) + *s.lag_bytes;
  }
  for (const auto& [name, s] : by_source) {
    SourceMetrics& m = metrics_.source(name);
    raise_to(m.lines_read, s.lines_read);
    raise_to(m.bytes_read, s.bytes_read);
    raise_to(m.lines_truncated, s.lines_truncated);
    raise_to(m.files_rotated, s.files_rotated);
    raise_to(m.files_truncated, s.files_truncated);
    raise_to(m.files_lost, s.files_lost);
    raise_to(m.files_unreadable, s.files_unreadable);
    if (s.lag_bytes) m.lag_bytes.Set(static_cast<double>(*s.lag_bytes));
  }
  raise_to(metrics_.stories_dropped(), t.stories_dropped);
  raise_to(metrics_.incidents_resolved_early(), t.incidents_resolved_early);
  raise_to(metrics_.streams_ended(), t.streams_ended);
  raise_to(metrics_.timestamps_rejected_future(), t.timestamps_rejected_future);
  raise_to(metrics_.stream_clock_resets(), t.stream_clock_resets);
  metrics_.fingerprints_distinct().Set(static_cast<double>(t.fingerprints_distinct));
  for (std::size_t k = 0; k < t.failure_stories.size(); ++k) raise_to(metrics_.failure_stories(k), t.failure_stories[k]);
  raise_to(metrics_.file_reopens(), t.file_reopens);
  metrics_.files_waiting().Set(static_cast<double>(t.files_waiting));
}

}  // namespace faultline
