// Loading the configured rules, the reload worker and the rule-file watcher (rule_reloader.hpp).
#include "rule_reloader.hpp"

#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <filesystem>

#include <spdlog/spdlog.h>

namespace faultline {

RuleLoad load_rule_set(const Config& config) {
  RuleLoad out;
  auto started = std::chrono::steady_clock::now();
  std::vector<std::string> paths = config.rules.paths;
  if (paths.empty()) paths.push_back(default_rules_dir());
  LoadResult loaded = load_rules(paths);
  out.diagnostics = std::move(loaded.diagnostics);
  if (error_count(out.diagnostics) > 0) return out;
  apply_rule_overrides(loaded.rules, config.rules.overrides, out.diagnostics);
  CompileResult compiled = compile_rules(std::move(loaded.rules), CompileOptions{config.rules.cache_dir});
  out.diagnostics.insert(out.diagnostics.end(), compiled.diagnostics.begin(), compiled.diagnostics.end());
  if (error_count(out.diagnostics) == 0) out.rules = compiled.rules;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

}  // namespace faultline

namespace faultline::service_detail {

namespace fs = std::filesystem;

// ---- the watcher ----

RuleWatcher::RuleWatcher(std::vector<std::string> paths) : paths_(std::move(paths)) {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  rewatch();
}

RuleWatcher::~RuleWatcher() {
  if (fd_ >= 0) ::close(fd_);
}

void RuleWatcher::rewatch() {
  if (fd_ < 0) return;
  constexpr std::uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_MODIFY |
                                 IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
  for (const auto& p : paths_) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      add(p, mask | IN_ONLYDIR);
      for (auto it = fs::recursive_directory_iterator(
               p, fs::directory_options::follow_directory_symlink | fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory(ec)) add(it->path().string(), mask | IN_ONLYDIR);
      }
    } else {
      auto parent = fs::path(p).parent_path().string();
      add(parent.empty() ? "." : parent, mask | IN_ONLYDIR);
    }
  }
}

bool RuleWatcher::drain() {
  bool changed = false;
  alignas(inotify_event) char buf[16 * 1024];
  while (true) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      if (ev->mask & IN_IGNORED) {
        watched_.erase(ev->wd);
        continue;
      }
      changed = true;
    }
  }
  return changed;
}

void RuleWatcher::add(const std::string& dir, std::uint32_t mask) {
  int wd = ::inotify_add_watch(fd_, dir.c_str(), mask);
  if (wd >= 0) watched_.insert(wd);
}

// ---- the reloader ----

RuleReloader::RuleReloader(const Config& config, bool watch, Duration settle) : config_(config), settle_(settle) {
  efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (watch) {
    std::vector<std::string> paths = config.rules.paths;
    if (paths.empty()) paths.push_back(default_rules_dir());
    watcher_ = std::make_unique<RuleWatcher>(std::move(paths));
  }
}

RuleReloader::~RuleReloader() {
  if (worker_.joinable()) worker_.join();
  if (efd_ >= 0) ::close(efd_);
}

void RuleReloader::request(const char* why) {
  if (busy_) {
    again_ = true;
    return;
  }
  spdlog::info("reloading rules ({})", why);
  busy_ = true;
  if (worker_.joinable()) worker_.join();
  worker_ = std::thread([this] {
    RuleLoad result = load_rule_set(config_);
    {
      std::lock_guard lock(mutex_);
      result_ = std::move(result);
    }
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(efd_, &one, sizeof one);
  });
}

void RuleReloader::on_watch_ready(std::chrono::steady_clock::time_point now) {
  if (watcher_ && watcher_->fd() >= 0 && watcher_->drain()) due_ = now + settle_;
}

std::optional<std::chrono::steady_clock::time_point> RuleReloader::due() const { return due_; }

void RuleReloader::poll(std::chrono::steady_clock::time_point now) {
  if (due_ && now >= *due_) {
    due_.reset();
    request("rule files changed");
  }
}

std::optional<RuleLoad> RuleReloader::take() {
  std::uint64_t v;
  [[maybe_unused]] auto n = ::read(efd_, &v, sizeof v);
  std::optional<RuleLoad> out;
  {
    std::lock_guard lock(mutex_);
    out = std::move(result_);
    result_.reset();
  }
  if (!out) return out;
  busy_ = false;
  if (worker_.joinable()) worker_.join();
  if (watcher_) watcher_->rewatch();
  if (again_) {
    again_ = false;
    request("changed again during the reload");
  }
  return out;
}

void RuleReloader::wait() {
  if (worker_.joinable()) worker_.join();
}

}  // namespace faultline::service_detail
