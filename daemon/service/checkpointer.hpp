// Checkpoints: after Pipeline::drain() and a commit of what it emitted (durable in the spools, journalled), every
// stream's committed position and the correlator's state, written durably at the same instant; then the journal of
// emitted revisions is emptied (they cannot come again) and the output made durable. No checkpoint while a revision
// waits in memory for its spool write: after a crash it must be emitted again. A periodic checkpoint that would say
// the same as the last one (nothing read, nothing emitted) is skipped. Internal to the service room; belongs to the
// pipeline thread.
#pragma once

#include <cstdint>
#include <string>

#include "faultline/clock.hpp"
#include "faultline/metrics.hpp"
#include "faultline/pipeline.hpp"
#include "faultline/tail.hpp"
#include "delivery.hpp"
#include "journal.hpp"

namespace faultline::service_detail {

class Checkpointer {
 public:
  // `state_dir` empty: checkpoints are off (write() does nothing).
  Checkpointer(std::string state_dir, Pipeline& pipeline, Tailer& tailer, Journal& journal, Delivery& delivery,
               Metrics& metrics, Clock& clock);

  enum class Why : std::uint8_t { periodic, shutdown };
  void write(Why why);

  bool enabled() const { return !state_dir_.empty(); }
  std::uint64_t written() const { return written_; }

 private:
  std::string state_dir_;
  Pipeline& pipeline_;
  Tailer& tailer_;
  Journal& journal_;
  Delivery& delivery_;
  Metrics& metrics_;
  Clock& clock_;
  std::uint64_t bytes_at_last_ = ~0ull;
  std::uint64_t incidents_at_last_ = ~0ull;
  std::uint64_t written_ = 0;
  bool failing_ = false;  // the last attempt failed: logged once until one succeeds
};

}  // namespace faultline::service_detail
