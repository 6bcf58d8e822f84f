// event_clock: a stream's notion of "now" — the time its lines carry, not the time they were read. Each stream has
// its own clock; windows, absences, holds, lifetimes and the freeing of idle context rings of a stream run on it, so
// one stream's times never move another's deadlines. The clock is bounded:
//   - a time more than kFutureBound ahead of the wall clock is not taken: the line keeps the stream's current time
//     (counted: a clock stuck in 2099 would otherwise resolve everything at once);
//   - a time more than kBackJump before the stream's latest time starts a new epoch of the stream (a restarted
//     container replaying its log, a clock corrected by a day): the clock goes back there, and the correlator treats
//     it as a boundary, so the failures printed after it count (counted too).
// Owned by the correlator; not thread-safe.
#pragma once

#include <algorithm>
#include <chrono>

#include "faultline/decode.hpp"

namespace faultline::correlate {

constexpr Duration kFutureBound = std::chrono::hours(24);
constexpr Duration kBackJump = std::chrono::hours(1);

enum class TimeVerdict : std::uint8_t {
  taken,     // the clock moved (or stayed) as the line says
  future,    // too far ahead of the wall clock: the line keeps the stream's time
  back_jump  // far behind the stream's latest time: a new epoch begins here
};

struct SeenTime {
  Time time;  // the time the line is taken at
  TimeVerdict verdict = TimeVerdict::taken;
};

class EventClock {
 public:
  // A line was read at wall time `wall_now`: its own time moves the clock; until lines carry their own time, the
  // time of reading (or the time inherited from an earlier line) does.
  SeenTime see(const RecordMeta& rec, Time wall_now) {
    const Time limit = wall_now + kFutureBound;
    if (rec.time > limit) {
      // A future time printed by this line, or inherited from a line that printed one.
      return SeenTime{known_ ? now_ : wall_now, rec.time_from_log ? TimeVerdict::future : TimeVerdict::taken};
    }
    if (rec.time_from_log) {
      if (log_time_seen_ && rec.time + kBackJump < log_now_) {
        now_ = log_now_ = rec.time;
        return SeenTime{rec.time, TimeVerdict::back_jump};
      }
      // The first timed line replaces a clock that only knew the time of reading.
      now_ = log_time_seen_ ? std::max(now_, rec.time) : rec.time;
      log_now_ = log_time_seen_ ? std::max(log_now_, rec.time) : rec.time;
      log_time_seen_ = true;
      known_ = true;
    } else if (!log_time_seen_) {
      now_ = known_ ? std::max(now_, rec.time) : rec.time;
      log_now_ = known_ ? std::max(log_now_, rec.time) : rec.time;
      known_ = true;
    }
    return SeenTime{rec.time, TimeVerdict::taken};
  }
  // The time a line already seen (or not looked at in order) is taken at, without moving the clock.
  Time bounded(const RecordMeta& rec, Time wall_now) const {
    if (rec.time > wall_now + kFutureBound) return known_ ? now_ : wall_now;
    return rec.time;
  }
  // Time passed without lines; never moves the clock back, never moves log_now().
  void advance(Time t) {
    if (!known_) return;  // a stream that never had a line has no time to run on from
    now_ = std::max(now_, t);
  }
  // Live sources: the wall time that passed since the lines last moved log_now() moves the clock on.
  void tick(Time wall_now) {
    if (!known_) return;
    if (log_now_ != anchor_log_ || anchor_wall_ == Time{}) {
      anchor_log_ = log_now_;
      anchor_wall_ = wall_now;
    }
    const Duration silence = wall_now > anchor_wall_ ? wall_now - anchor_wall_ : Duration{0};
    now_ = std::max(now_, log_now_ + silence);
  }
  // A restored checkpoint's clock.
  void restore(Time now, Time log_now, bool log_time_seen) {
    now_ = now;
    log_now_ = log_now;
    log_time_seen_ = log_time_seen;
    known_ = true;
    anchor_wall_ = Time{};
  }

  Time now() const { return now_; }
  // The latest time the lines themselves gave.
  Time log_now() const { return log_now_; }
  bool log_time_seen() const { return log_time_seen_; }
  // Some line (or a checkpoint) gave the clock a time.
  bool known() const { return known_; }

 private:
  Time now_{};
  Time log_now_{};
  Time anchor_log_{};   // log_now() at the last tick that saw it move
  Time anchor_wall_{};  // and the wall time then
  bool log_time_seen_ = false;  // once lines carry their own time, only those move the clock
  bool known_ = false;
};

}  // namespace faultline::correlate
