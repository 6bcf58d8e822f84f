// clock: the two times the daemon reads — wall time (the read time of lines, delivery timestamps) and a monotonic time
// (timers, backoff, deadlines). Every room that needs "now" takes a Clock, so tests control both and never sleep.
// SystemClock is stateless and thread-safe; a ManualClock belongs to the test that moves it.
#pragma once

#include <atomic>
#include <chrono>

#include "faultline/types.hpp"

namespace faultline {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time now() const = 0;
  virtual std::chrono::steady_clock::time_point steady() const = 0;
};

class SystemClock final : public Clock {
 public:
  Time now() const override;
  std::chrono::steady_clock::time_point steady() const override;
  // The process-wide instance, for code that is given no clock.
  static const SystemClock& instance();
};

// A clock that moves only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Time start = Time{} + std::chrono::hours(24 * 365 * 56))
      : now_(start.time_since_epoch().count()) {}
  // Read from any thread (the io thread's sinks read the clock a test advances): atomics, not plain values.
  Time now() const override { return Time(Duration(now_.load(std::memory_order_relaxed))); }
  std::chrono::steady_clock::time_point steady() const override {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(steady_.load(std::memory_order_relaxed)));
  }
  void advance(Duration d) {
    now_.fetch_add(d.count(), std::memory_order_relaxed);
    steady_.fetch_add(std::chrono::duration_cast<std::chrono::steady_clock::duration>(d).count(),
                      std::memory_order_relaxed);
  }

 private:
  std::atomic<Duration::rep> now_;
  std::atomic<std::chrono::steady_clock::rep> steady_{0};
};

}  // namespace faultline
