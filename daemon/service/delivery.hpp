// Delivery: where an incident revision goes once the service has decided to emit it — the JSON-lines output
// (standard output or a file) and the outputs (HTTP API and its incident store, webhooks, Alertmanager). The one
// place in the service that knows the sinks room's Outputs: replacing it with a dispatcher touches only this file
// and delivery.cpp. Internal to the service room. Called from the pipeline thread; Outputs runs its own io thread.
#pragma once

#include <memory>
#include <string>

#include "faultline/incident.hpp"
#include "faultline/metrics.hpp"
#include "faultline/result.hpp"
#include "faultline/types.hpp"

namespace faultline {
struct Config;
struct RuleSet;
class Outputs;
}  // namespace faultline

namespace faultline::service_detail {

class Delivery {
 public:
  Delivery();
  ~Delivery();  // stops the outputs without grace if stop() was not called
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;

  // Validates the outputs' options, binds the listener, opens the incident store and the spools. `state_dir` empty:
  // nothing persisted. The outputs count into `metrics` and serve it on /metrics.
  Result<void> start(const Config& config, const std::string& state_dir, std::shared_ptr<Metrics> metrics);
  // The JSON-lines output: "-" standard output, "" none, else a file (appended).
  Result<void> open_output(const std::string& output);

  // One revision as a JSON line on the output, then (after the caller's journal has it) to the outputs.
  void write_output(const Incident& incident);
  void submit(const Incident& incident);
  // After a durable checkpoint: what the output file holds is made durable too.
  void checkpointed();

  bool backpressure() const;
  bool wait_for_space(Duration max);
  void set_ready(std::string_view component, bool ok);
  void update_rules(const RuleSet& rules);
  std::string listen_address() const;

  // Stops taking incidents and lets the sinks deliver until `grace` passes.
  void stop(Duration grace);

 private:
  std::unique_ptr<Outputs> outputs_;
  std::string output_;
  int out_fd_ = -1;
  bool output_failed_ = false;
};

}  // namespace faultline::service_detail
