// event_clock: the correlator's notion of "now" — the time the lines carry, not the time they were read. Windows,
// absences, holds and lifetimes all run on it. One clock for every stream today; `see` is handed the whole record
// (stream included) so that each stream can be given its own bounded clock without changing its callers.
// Owned by the correlator; not thread-safe.
#pragma once

#include <algorithm>

#include "faultline/decode.hpp"

namespace faultline::correlate {

class EventClock {
 public:
  // A line was read: its own time moves the clock; until lines carry their own time, the time of reading does.
  void see(const RecordMeta& rec) {
    if (rec.time_from_log) {
      // The first timed line replaces a clock that only knew the time of reading.
      now_ = log_time_seen_ ? std::max(now_, rec.time) : rec.time;
      log_now_ = log_time_seen_ ? std::max(log_now_, rec.time) : rec.time;
      log_time_seen_ = true;
    } else if (!log_time_seen_) {
      now_ = std::max(now_, rec.time);
      log_now_ = std::max(log_now_, rec.time);
    }
  }
  // Time passed without lines (a tick); never moves the clock back, never moves log_now().
  void advance(Time t) { now_ = std::max(now_, t); }
  // A restored checkpoint's clock.
  void restore(Time now) { now_ = now; }

  Time now() const { return now_; }
  // The latest time the lines themselves gave.
  Time log_now() const { return log_now_; }

 private:
  Time now_{};
  Time log_now_{};
  bool log_time_seen_ = false;  // once lines carry their own time, only those move the clock
};

}  // namespace faultline::correlate
