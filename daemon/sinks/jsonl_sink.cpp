// The JSON-lines output: standard output or a file opened for appending. Written on the caller's thread, in order,
// redacted like everything else that is served or sent.
#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "faultline/durable_file.hpp"
#include "faultline/sinks.hpp"

namespace faultline {

JsonLinesSink::JsonLinesSink(std::string output, std::shared_ptr<const Redactor> redactor)
    : output_(std::move(output)), redactor_(std::move(redactor)) {}

JsonLinesSink::~JsonLinesSink() {
  if (fd_ > 2) ::close(fd_);
}

Result<void> JsonLinesSink::open() {
  if (fd_ >= 0 || output_.empty()) return {};
  if (output_ == "-") {
    fd_ = STDOUT_FILENO;
    return {};
  }
  fd_ = ::open(output_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return Error::from_errno("cannot open output", output_);
  return {};
}

Result<void> JsonLinesSink::deliver(const Incident& incident) {
  if (fd_ < 0) return {};
  std::string line;
  if (redactor_) {
    Incident redacted = incident;
    redactor_->apply(redacted);
    line = to_json(redacted);
  } else {
    line = to_json(incident);
  }
  line += '\n';
  auto written = write_all(fd_, line, output_ == "-" ? "standard output" : output_);
  if (!written && !failed_) {
    failed_ = true;  // once: a full disk or a closed pipe would otherwise log every revision
    spdlog::error("cannot write incidents: {}", written.error().message);
  }
  return written;
}

void JsonLinesSink::sync() {
  if (fd_ > 2) ::fdatasync(fd_);
}

void JsonLinesSink::stop(Duration) { sync(); }

}  // namespace faultline
