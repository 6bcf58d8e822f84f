// Loading the configured rules, the reload worker and the rule-file watcher (rule_reloader.hpp).
#include "rule_reloader.hpp"

#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <filesystem>

#include <spdlog/spdlog.h>

#include "faultline/catalog.hpp"

namespace faultline {

RuleLoad load_rule_set(const Config& config) {
  // The daemon's policy: a set with any error compiles nothing, so a broken set never replaces a running one. The
  // rules' tests are not read (they are `faultline test`'s and `check`'s): most of the catalog's text, and with them
  // left out a file read before with the same bytes is not parsed again (the parsed-rules cache beside the database).
  CatalogPolicy policy{OnLoadError::stop};
  policy.tests = false;
  Catalog catalog = load_and_compile(config.rules.paths, config.rules.overrides, config.rules.cache_dir, policy);
  RuleLoad out;
  out.diagnostics = std::move(catalog.diagnostics);
  out.seconds = catalog.seconds;
  if (catalog.ok()) out.rules = std::move(catalog.compiled);
  return out;
}

}  // namespace faultline

namespace faultline::service_detail {

namespace fs = std::filesystem;

// ---- the watcher ----

RuleWatcher::RuleWatcher(std::vector<std::string> paths) : paths_(std::move(paths)) {
  if (auto opened = InotifyReader::open(); opened)
    inotify_ = std::move(*opened);
  else
    spdlog::warn("rule files are not watched ({}); reload with SIGHUP", opened.error().message);
  rewatch();
}

RuleWatcher::~RuleWatcher() = default;

void RuleWatcher::rewatch() {
  if (!inotify_.valid()) return;
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
  inotify_.drain([&](const InotifyEvent& ev) {
    if (ev.mask & IN_IGNORED) {
      watched_.erase(ev.wd);
      return;
    }
    changed = true;
  });
  return changed;
}

void RuleWatcher::add(const std::string& dir, std::uint32_t mask) {
  if (auto wd = inotify_.add_watch(dir, mask); wd) watched_.insert(*wd);
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
