// The system clock: the only place that reads wall and monotonic time for the daemon's logic.
#include "faultline/clock.hpp"

namespace faultline {

Time SystemClock::now() const { return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()); }

std::chrono::steady_clock::time_point SystemClock::steady() const { return std::chrono::steady_clock::now(); }

const SystemClock& SystemClock::instance() {
  static const SystemClock clock;
  return clock;
}

}  // namespace faultline
