// The JSON-lines output: standard output or a file opened for appending. Written on the caller's thread, in order,
// redacted like everything else that is served or sent.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

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
  // Read as well as written, to look at its last byte; a file this user may only write is written all the same.
  fd_ = ::open(output_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0 && errno == EACCES) fd_ = ::open(output_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return Error::from_errno("cannot open output", output_);
  return end_torn_line();
}

// A write cut short by SIGKILL (the kernel stops a write between pages when the process is killed) leaves the file's
// last line without its newline. The next revision would be appended to it and make one line of the two that no
// reader can parse: the cut line is ended first, so every revision after it stands on a line of its own. (The cut
// revision itself is written again: the checkpoint that restarts the daemon was taken before it.)
Result<void> JsonLinesSink::end_torn_line() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return {};
  char last = '\n';
  if (::pread(fd_, &last, 1, st.st_size - 1) != 1 || last == '\n') return {};
  spdlog::warn("{} ended in a line cut short (faultline was killed while writing it); it is ended with a newline",
               output_);
  return write_all(fd_, "\n", output_);
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
