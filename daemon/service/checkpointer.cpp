// Checkpoints (checkpointer.hpp).
#include "checkpointer.hpp"

#include <spdlog/spdlog.h>

#include "faultline/checkpoint.hpp"

namespace faultline::service_detail {

Checkpointer::Checkpointer(std::string state_dir, Pipeline& pipeline, Tailer& tailer, Journal& journal,
                           Delivery& delivery, Metrics& metrics, Clock& clock)
    : state_dir_(std::move(state_dir)),
      pipeline_(pipeline),
      tailer_(tailer),
      journal_(journal),
      delivery_(delivery),
      metrics_(metrics),
      clock_(clock) {}

void Checkpointer::write(Why why) {
  if (!enabled()) return;
  pipeline_.drain();
  const PipelineStats& stats = pipeline_.stats();
  // Idle: nothing read and nothing emitted since the last checkpoint — it would say the same.
  if (why == Why::periodic && stats.bytes == bytes_at_last_ && stats.incidents == incidents_at_last_) return;
  bytes_at_last_ = stats.bytes;
  incidents_at_last_ = stats.incidents;
  Checkpoint c;
  c.positions = tailer_.positions();
  c.correlator_state = pipeline_.save_state();
  c.written = clock_.now();
  const char* what = why == Why::periodic ? "periodic" : "shutdown";
  if (auto done = write_checkpoint(state_dir_, c); done) {
    delivery_.checkpointed();
    journal_.truncate();
    metrics_.record_checkpoint();
    ++written_;
    spdlog::debug("checkpoint written ({}): {} file(s)", what, c.positions.files.size());
  } else {
    spdlog::error("checkpoint not written: {}", done.error().message);
  }
}

}  // namespace faultline::service_detail
