// service: the daemon. Start-up is an ordered list of named steps, each returning a Result (a failure names its
// step); the loop's work is Service::step(), driven by whoever waits on wait_fds() (run_service_loop, the one place
// that calls poll()) and by an injected Clock, so a unit test runs the whole daemon in-process with a ManualClock and
// explicit steps, without sleeping. stop() drains, checkpoints and lets the sinks flush.
// A Service and its Clock belong to one thread (the pipeline thread); the outputs run their own io thread and a rule
// reload compiles on a short-lived thread of its own.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/clock.hpp"
#include "faultline/config.hpp"
#include "faultline/match.hpp"
#include "faultline/result.hpp"
#include "faultline/rules.hpp"

namespace faultline {

class Metrics;

// The configured rules, compiled — or the diagnostics that kept them from compiling.
struct RuleLoad {
  std::shared_ptr<const CompiledRules> rules;  // null when a diagnostic is an error
  std::vector<Diagnostic> diagnostics;
  double seconds = 0;
};
// Loads the config's rule paths (default: the shipped catalog), applies its overrides and compiles; stops at load
// errors. Thread-safe (reads files, writes the compiled-rules cache).
RuleLoad load_rule_set(const Config& config);

// What start() would refuse, found without side effects (no state dir created, no cache read or written, nothing
// bound): the rules (compiled), the rule ids the config names (rules.overrides, sinks[].rules), the listen address,
// the state dir (creatable and writable), the server's and the sinks' options. Every problem with its position where
// the config file gave the value. `faultline run --check-config` and `faultline check --config`.
struct Preflight {
  std::size_t rules = 0;  // rules that load
  std::vector<Diagnostic> diagnostics;
  bool ok() const;
};
Preflight preflight(const Config& config);

// The rule ids `config` names that `loaded` (a set loaded with the config's overrides, whose load reported
// `diagnostics`) does not hold: errors with a "did you mean". The catalog's own warnings for those overrides are
// taken out of `diagnostics`.
std::vector<Diagnostic> rule_reference_problems(const Config& config, const RuleSet& loaded,
                                                std::vector<Diagnostic>& diagnostics);

// faultline's own log on standard error: text or JSON lines, at the configured level.
void setup_logging(const LogSettings& log);
void log_diagnostics(const std::vector<Diagnostic>& diagnostics);
std::size_t error_count(const std::vector<Diagnostic>& diagnostics);

struct ServiceOptions {
  Config config;          // after the flags were applied
  Clock* clock = nullptr;  // default: the system clock
  // --start-at as given on the command line: when a checkpoint decides instead, a warning says how to read again.
  std::optional<StartAt> start_at_flag;
};

// A descriptor to wait on before the next step() and what its readiness means.
struct WaitFd {
  enum class Role : std::uint8_t { input, rules_changed, reload_done };
  int fd = -1;
  Role role = Role::input;
};

// What woke the loop. step() reads only what is marked ready (idle wake-ups stay cheap); a caller that does not
// poll leaves everything marked.
struct Wakeups {
  bool rules_changed = true;
  bool reload_done = true;
};

struct StepResult {
  bool more = false;      // more is ready now (or reading is paused): step again without waiting
  bool finished = false;  // the input ended (standard input only): stop the service
};

class Service {
 public:
  explicit Service(ServiceOptions options);
  // Not stopped: abandons the run as a crash would (no final checkpoint; the outputs stop without grace).
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // The start-up steps, in order.
  static std::vector<std::string_view> start_steps();
  // The pre-flight of this service's config (preflight(), logged): the number of rules, or how many problems.
  Result<std::size_t> check();
  // Runs them; the Error of a failed one reads "<step>: <what went wrong>". Nothing is left running after a failure.
  Result<void> start();

  // ---- the loop (after start) ----
  // Descriptors to wait on; they change when `wait_fds_version()` does (standard input ended).
  std::vector<WaitFd> wait_fds() const;
  std::uint64_t wait_fds_version() const;
  // When step() is due at the latest (a tick, a checkpoint, the tailer's next check, a settled rule change).
  std::chrono::steady_clock::time_point next_deadline() const;
  // The sinks' queue is full: reading pauses (lag grows) rather than anything being dropped. wait_for_space() waits
  // up to `max` for room.
  bool backpressure() const;
  void wait_for_space(Duration max);
  // One turn: a finished reload, due rule-file changes, reading (bounded), the tick (event clock, metrics totals)
  // and the periodic checkpoint when due.
  StepResult step(const Wakeups& woke = {});

  // ---- control ----
  // Compile the rules again beside the running set (SIGHUP); a later step() swaps them in or logs why not.
  void request_reload(const char* why);
  // Blocks until a requested compile has finished, so the next step() applies it (tests).
  void await_reload();
  // Makes `rules` the running set everywhere at once: the pipeline, the per-event counters, the API's rule list and
  // the rule metrics.
  void replace_rules(std::shared_ptr<const CompiledRules> rules);
  // Stops reading, finishes what is in flight, checkpoints, and lets the sinks deliver for up to `grace`.
  void stop(Duration grace);

  // ---- looking in ----
  const Config& config() const;
  Metrics& metrics();
  std::string listen_address() const;  // "host:port" bound by the HTTP server; empty without one
  std::uint64_t checkpoints_written() const;
  std::uint64_t emitted() const;
  std::uint64_t suppressed_duplicates() const;
  std::string stats_json() const;
  const Clock& clock() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and every thread it starts after) so the loop reads them
// from a signalfd; ignores SIGPIPE. Call before Service::start().
void block_signals();
// Runs a started `service` until SIGTERM/SIGINT, the end of its input or a failing poll(), asking for a reload on
// SIGHUP: waits in poll() on the service's descriptors and the signals, then steps the service. The caller stops it.
void run_service_loop(Service& service);

}  // namespace faultline
