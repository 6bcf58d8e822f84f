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
  delivery_.commit(journal_);
  // A revision held in memory for a spool write that failed must come again after a crash: no checkpoint may say
  // that it cannot, until it is durable.
  if (!delivery_.durable()) {
    if (why == Why::shutdown)
      spdlog::warn("no checkpoint at shutdown: {} revision(s) could not be spooled; the next start emits them again",
                   delivery_.backlog());
    return;
  }
  const PipelineStats& stats = pipeline_.stats();
  // Idle: nothing read and nothing emitted since the last checkpoint — it would say the same.
  if (why == Why::periodic && stats.bytes == bytes_at_last_ && stats.incidents == incidents_at_last_) return;
  Checkpoint c;
  c.positions = tailer_.positions();
  c.correlator_state = pipeline_.save_state();
  c.fingerprints = pipeline_.save_fingerprints();
  c.written = clock_.now();
  const char* what = why == Why::periodic ? "periodic" : "shutdown";
  if (auto done = write_checkpoint(state_dir_, c); done) {
    bytes_at_last_ = stats.bytes;
    incidents_at_last_ = stats.incidents;
    delivery_.checkpointed();
    journal_.truncate(delivery_.output_file_size());
    metrics_.record_checkpoint();
    delivery_.state_write(Delivery::StateWrite::checkpoint, {});
    ++written_;
    spdlog::debug("checkpoint written ({}): {} file(s)", what, c.positions.files.size());
  } else {
    // Tried again at the next interval even when idle (bytes_at_last_ not moved).
    if (!failing_) spdlog::error("checkpoint not written: {}", done.error().message);
    failing_ = true;
    delivery_.state_write(Delivery::StateWrite::checkpoint, done.error().message);
    return;
  }
  if (failing_) spdlog::info("checkpoint written again");
  failing_ = false;
}

}  // namespace faultline::service_detail
