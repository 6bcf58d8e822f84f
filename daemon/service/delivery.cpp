// Delivery (delivery.hpp): the JSON-lines output and the sinks room's Outputs behind one small interface.
#include "delivery.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "faultline/config.hpp"
#include "faultline/durable_file.hpp"
#include "faultline/sinks.hpp"

namespace faultline::service_detail {

Delivery::Delivery() = default;

Delivery::~Delivery() {
  if (outputs_) outputs_->stop(Duration{0});
  if (out_fd_ > 1) ::close(out_fd_);
}

Result<void> Delivery::start(const Config& config, const std::string& state_dir, std::shared_ptr<Metrics> metrics) {
  OutputsOptions oo;
  oo.server.listen = config.listen;
  oo.server.api_token_file = config.server.api_token_file;
  oo.sinks = config.sinks;
  oo.state_dir = state_dir;
  oo.external_url = config.server.external_url;
  oo.redaction = config.redaction;
  oo.queue_capacity = config.queue_capacity;
  oo.max_incidents = config.max_incidents;
  if (auto problems = validate_outputs(oo); !problems.empty()) {
    // Every problem logged; the step's error is the first.
    for (std::size_t i = 1; i < problems.size(); ++i) spdlog::error("{}", problems[i]);
    return Error{problems.front()};
  }
  outputs_ = std::make_unique<Outputs>(oo, std::move(metrics));
  std::string error;
  if (!outputs_->start(&error)) {
    outputs_.reset();
    return Error{"cannot start the outputs: " + error};
  }
  return {};
}

Result<void> Delivery::open_output(const std::string& output) {
  output_ = output;
  if (output == "-") {
    out_fd_ = STDOUT_FILENO;
  } else if (!output.empty()) {
    out_fd_ = ::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd_ < 0) return Error::from_errno("cannot open output", output);
  }
  return {};
}

void Delivery::write_output(const Incident& incident) {
  if (out_fd_ >= 0) {
    std::string line = to_json(incident);
    line += '\n';
    if (auto written = write_all(out_fd_, line, output_ == "-" ? "standard output" : output_);
        !written && !output_failed_) {
      output_failed_ = true;
      spdlog::error("cannot write incidents: {}", written.error().message);
    }
  }
}

void Delivery::submit(const Incident& incident) {
  if (outputs_) outputs_->submit(incident);
}

void Delivery::checkpointed() {
  if (out_fd_ > 2) ::fdatasync(out_fd_);
}

bool Delivery::backpressure() const { return outputs_ && outputs_->backpressure(); }
bool Delivery::wait_for_space(Duration max) { return !outputs_ || outputs_->wait_for_space(max); }
void Delivery::set_ready(std::string_view component, bool ok) {
  if (outputs_) outputs_->set_ready(component, ok);
}
void Delivery::update_rules(const RuleSet& rules) {
  if (outputs_) outputs_->update_rules(rules);
}
std::string Delivery::listen_address() const { return outputs_ ? outputs_->listen_address() : std::string(); }

void Delivery::stop(Duration grace) {
  if (outputs_) outputs_->stop(grace);
}

}  // namespace faultline::service_detail
