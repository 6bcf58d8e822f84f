// What the service reports about its rooms: the totals the metrics collector turns into the source families at
// scrape time, and the final stats line. Internal to the service room; called on the pipeline thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "faultline/metrics.hpp"
#include "faultline/pipeline.hpp"
#include "faultline/tail.hpp"
#include "stream_adapter.hpp"

namespace faultline {
struct Config;
}

namespace faultline::service_detail {

// Charges the Tailer's own counts (unreadable files, files lost before they were read to the end) to the source each
// file belonged to (Tailer::source_stats()).
class TailAttribution {
 public:
  void add_to(std::vector<SourceTotals>& sources, const Tailer& tailer, const Config& config);

 private:
  struct Seen {
    std::uint64_t lost_bytes = 0;  // the source's rotated_unread_bytes at the last look
    std::uint64_t files_lost = 0;  // looks at which it had grown
  };
  std::map<std::string, Seen> seen_;
};

// Totals per source (streams and the tailer's counts) and the correlator's, as of now. `lag`: include the tailer's
// lag per source (valid only between poll_once() calls).
PipelineTotals gather_totals(const StreamAdapter& adapter, const Tailer& tailer, const Pipeline& pipeline,
                             const Config& config, TailAttribution& attribution, bool lag);

// Zero totals for every configured source, so their series exist from the start.
PipelineTotals initial_totals(const Config& config);

struct EmitCounts {
  std::uint64_t emitted = 0;
  std::uint64_t suppressed = 0;  // already emitted before a restart (the journal knew them)
};
// The "stopped: {...}" line's JSON.
std::string stats_json(const Pipeline& pipeline, const Tailer& tailer, const EmitCounts& emits);

}  // namespace faultline::service_detail
