// Rule reloads: a request (SIGHUP, or the rule files changed and settled) compiles the configured rules on a
// short-lived thread beside the running set; the pipeline thread then takes one event — a RuleLoad holding the new
// CompiledRules or the diagnostics that rejected them. Internal to the service room. The RuleReloader belongs to the
// pipeline thread; only its worker thread runs concurrently, and they meet at one mutex and one eventfd.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "faultline/config.hpp"
#include "faultline/service.hpp"
#include "faultline/tail.hpp"

namespace faultline::service_detail {

// Watches rule files and directories (recursively; a Kubernetes ConfigMap swaps a `..data` symlink in the mounted
// directory, which shows as a move in it).
class RuleWatcher {
 public:
  explicit RuleWatcher(std::vector<std::string> paths);
  ~RuleWatcher();
  RuleWatcher(const RuleWatcher&) = delete;
  RuleWatcher& operator=(const RuleWatcher&) = delete;
  int fd() const { return inotify_.fd(); }
  void rewatch();
  bool drain();  // true when something changed

 private:
  void add(const std::string& dir, std::uint32_t mask);
  std::vector<std::string> paths_;
  InotifyReader inotify_;
  std::unordered_set<int> watched_;
};

class RuleReloader {
 public:
  // `watch`: also reload when the rule files change, `settle` after the last change.
  RuleReloader(const Config& config, bool watch, Duration settle);
  ~RuleReloader();  // waits for a running compile
  RuleReloader(const RuleReloader&) = delete;
  RuleReloader& operator=(const RuleReloader&) = delete;

  int done_fd() const { return efd_; }  // readable when a compile finished
  int watch_fd() const { return watcher_ ? watcher_->fd() : -1; }

  // Starts a compile now, or once the running one finishes.
  void request(const char* why);
  // The rule files changed (watch_fd() was readable): a reload is due once they settle.
  void on_watch_ready(std::chrono::steady_clock::time_point now);
  // When a settled change is due, if one is pending.
  std::optional<std::chrono::steady_clock::time_point> due() const;
  // Starts the reload of a settled change when it is due.
  void poll(std::chrono::steady_clock::time_point now);
  // The finished compile, if any (after done_fd() was readable). Re-arms the watches and starts the next compile when
  // another request came in meanwhile.
  std::optional<RuleLoad> take();
  // Blocks until a running compile has finished (tests: the next take() returns it).
  void wait();

 private:
  const Config& config_;
  std::unique_ptr<RuleWatcher> watcher_;
  Duration settle_;
  std::optional<std::chrono::steady_clock::time_point> due_;
  int efd_ = -1;
  bool busy_ = false;
  bool again_ = false;
  std::thread worker_;
  std::mutex mutex_;
  std::optional<RuleLoad> result_;
};

}  // namespace faultline::service_detail
