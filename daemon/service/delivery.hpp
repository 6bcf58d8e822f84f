// Delivery: where an incident revision goes once the service has decided to emit it — the JSON-lines output
// (standard output or a file, written on the pipeline thread before the journal records the revision) and the
// dispatcher (incident store and API, webhooks, Alertmanager) with the HTTP server, all on one io thread. The one
// place in the service that wires the sinks and server rooms. Internal to the service room. Called from the
// pipeline thread; the server and the sinks run on the io thread.
#pragma once

#include <memory>
#include <string>

#include "faultline/clock.hpp"
#include "faultline/incident.hpp"
#include "faultline/metrics.hpp"
#include "faultline/result.hpp"
#include "faultline/types.hpp"

namespace faultline {
struct Config;
struct RuleSet;
class JsonLinesSink;
class Redactor;
}  // namespace faultline

namespace faultline::service_detail {

class Delivery {
 public:
  Delivery();
  ~Delivery();  // stops everything without grace if stop() was not called
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;

  // Validates the server's and the sinks' options, opens the incident store, binds the listener, opens the spools
  // and starts the io thread. `state_dir` empty: nothing persisted. Everything counts into `metrics`, which the
  // server serves on /metrics.
  Result<void> start(const Config& config, const std::string& state_dir, std::shared_ptr<Metrics> metrics,
                     const Clock& clock);
  // The JSON-lines output: "-" standard output, "" none, else a file (appended). After start(): the output is
  // redacted with the dispatcher's Redactor.
  Result<void> open_output(const std::string& output);

  // One revision as a JSON line on the output, then (after the caller's journal has it) to the dispatcher.
  void write_output(const Incident& incident);
  void submit(const Incident& incident);
  // After a durable checkpoint: what the output file holds is made durable too.
  void checkpointed();

  bool backpressure() const;
  bool wait_for_space(Duration max);
  void set_ready(std::string_view component, bool ok);
  void update_rules(const RuleSet& rules);
  std::string listen_address() const;

  // Stops the server, lets the sinks deliver until `grace` passes, stops the io thread.
  void stop(Duration grace);

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
  std::shared_ptr<const Redactor> redactor_;
  std::unique_ptr<JsonLinesSink> output_;
};

}  // namespace faultline::service_detail
