// `faultline run`: start-up order, the pipeline thread's loop, checkpoints, reload and shutdown.
//
// One thread (this one) owns the Tailer and the Pipeline; the server and the sinks run on the io thread and a reload compiles
// on a short-lived thread. Signals are blocked everywhere and read from a signalfd in the loop, so no work happens in
// a signal handler.
//
// Nothing lost, nothing twice: a checkpoint stores, after Pipeline::drain(), the committed offset of every file and
// the correlator's state — the same instant. After a crash, lines after the offsets are read again and produce the
// same incidents with the same ids and revisions; the ones already emitted since that checkpoint are listed in a
// small journal (state_dir/emitted.log, "id revision" lines, emptied at every checkpoint) and are not emitted again.
#include "run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/formatter.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_set>

#include "faultline/config.hpp"
#include "faultline/io_thread.hpp"
#include "faultline/match.hpp"
#include "faultline/metrics.hpp"
#include "faultline/pipeline.hpp"
#include "faultline/server.hpp"
#include "faultline/sinks.hpp"
#include "faultline/checkpoint.hpp"
#include "faultline/tail.hpp"

namespace faultline::app {

namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock::time_point;

constexpr const char* kRunUsage = R"(usage: faultline run [options] [-]

Follows log files (globs, Kubernetes pod logs, docker json-file logs), standard input ('-') and the kernel log,
and raises incidents: JSON lines on standard output (or --output), the HTTP API and metrics on --listen, and the
webhooks of the config file. Reloads rules on SIGHUP or when the rule files change; drains and checkpoints on
SIGTERM/SIGINT.

  --config FILE        YAML config (reference: docs/config.md); default: built-in defaults
  --source GLOB        a file or glob to follow (repeatable; replaces the config's sources)
  -                    follow standard input (replaces the config's sources; may be combined with --source)
  --rules PATH         rule file or directory (repeatable; replaces the config's rules.paths)
  --state-dir DIR      checkpoints and spools (default $STATE_DIRECTORY or /var/lib/faultline)
  --listen ADDR        HTTP host:port (default 127.0.0.1:9464; "off": no server)
  --webhook URL        also POST every incident as signed-JSON webhook to URL (sink "webhook"; repeatable)
  --alertmanager URL   also send incidents to this Alertmanager as alerts (sink "alertmanager"; repeatable)
  --output FILE        incident JSON lines: "-" standard output (default), a file, or "off"
  --format F           container format of the sources: auto, raw, cri, docker
  --start-at WHERE     beginning | end: where to start in files that exist at the very first start
  --node-name NAME     the `node` label (default $NODE_NAME or the host name)
  --log-format F       text | json (faultline's own log, on standard error)
  --log-level L        trace | debug | info | warn | error | critical | off
  --check-config       validate the config and the rules, then exit (0: valid)
)";

// ---- logging ----

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    nlohmann::json j;
    j["time"] = format_time(std::chrono::time_point_cast<Duration>(msg.time));
    auto level = spdlog::level::to_string_view(msg.level);
    j["level"] = std::string(level.data(), level.size());
    j["msg"] = std::string(msg.payload.data(), msg.payload.size());
    std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(s.data(), s.data() + s.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonLogFormatter>(); }
};

void setup_logging(const LogSettings& log) {
  auto logger = spdlog::default_logger();
  if (log.format == LogFormat::json) {
    logger->set_formatter(std::make_unique<JsonLogFormatter>());
  }
  std::string level = log.level == "warning" ? "warn" : log.level;
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
}

void log_diagnostics(const std::vector<Diagnostic>& diags) {
  for (const auto& d : diags) {
    if (d.kind == Diagnostic::Kind::error) spdlog::error("{}", d.str());
    else spdlog::warn("{}", d.str());
  }
}

std::size_t error_count(const std::vector<Diagnostic>& diags) {
  std::size_t n = 0;
  for (const auto& d : diags) n += d.kind == Diagnostic::Kind::error;
  return n;
}

// ---- flags ----

struct Flags {
  std::string config;
  std::vector<std::string> sources;
  bool use_stdin = false;
  std::vector<std::string> rules;
  std::optional<std::string> state_dir, listen, output, node_name, log_format, log_level;
  std::vector<SinkConfig> url_sinks;  // --webhook / --alertmanager, added to the config's sinks
  std::optional<ContainerFormat> format;
  std::optional<StartAt> start_at;
  bool check_only = false;
  bool help = false;
};

std::optional<Flags> parse_flags(int argc, char** argv) {
  Flags f;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    bool inline_value = false;
    if (a.rfind("--", 0) == 0) {
      if (auto eq = a.find('='); eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        inline_value = true;
      }
    }
    auto need = [&]() -> bool {
      if (inline_value) return true;
      if (i + 1 >= argc) {
        std::cerr << "faultline run: " << a << " needs a value\n";
        return false;
      }
      value = argv[++i];
      return true;
    };
    if (a == "-") {
      f.use_stdin = true;
    } else if (a == "-h" || a == "--help") {
      f.help = true;
    } else if (a == "--check-config") {
      f.check_only = true;
    } else if (a == "--config" || a == "-c") {
      if (!need()) return std::nullopt;
      f.config = value;
    } else if (a == "--source") {
      if (!need()) return std::nullopt;
      if (value == "-") f.use_stdin = true;
      else f.sources.push_back(value);
    } else if (a == "--rules") {
      if (!need()) return std::nullopt;
      f.rules.push_back(value);
    } else if (a == "--state-dir") {
      if (!need()) return std::nullopt;
      f.state_dir = value;
    } else if (a == "--listen") {
      if (!need()) return std::nullopt;
      f.listen = value;
    } else if (a == "--webhook" || a == "--alertmanager") {
      if (!need()) return std::nullopt;
      auto fmt = a == "--webhook" ? WebhookFormat::json : WebhookFormat::alertmanager;
      std::size_t same = 0;
      for (const auto& s : f.url_sinks) same += s.format == fmt;
      std::string name = std::string(fmt == WebhookFormat::json ? "webhook" : "alertmanager") +
                         (same ? "-" + std::to_string(same + 1) : "");
      std::string error;
      auto sink = sink_from_url(value, fmt, name, &error);
      if (!sink) {
        std::cerr << "faultline run: " << a << ": " << error << "\n";
        return std::nullopt;
      }
      f.url_sinks.push_back(std::move(*sink));
    } else if (a == "--output") {
      if (!need()) return std::nullopt;
      f.output = value;
    } else if (a == "--node-name") {
      if (!need()) return std::nullopt;
      f.node_name = value;
    } else if (a == "--format") {
      if (!need()) return std::nullopt;
      f.format = parse_container_format(value);
      if (!f.format) {
        std::cerr << "faultline run: --format: expected auto, raw, cri or docker, got '" << value << "'\n";
        return std::nullopt;
      }
    } else if (a == "--start-at") {
      if (!need()) return std::nullopt;
      f.start_at = parse_start_at(value);
      if (!f.start_at) {
        std::cerr << "faultline run: --start-at: expected beginning or end, got '" << value << "'\n";
        return std::nullopt;
      }
    } else if (a == "--log-format") {
      if (!need()) return std::nullopt;
      if (!parse_log_format(value)) {
        std::cerr << "faultline run: --log-format: expected text or json, got '" << value << "'\n";
        return std::nullopt;
      }
      f.log_format = value;
    } else if (a == "--log-level") {
      if (!need()) return std::nullopt;
      if (!valid_log_level(value)) {
        std::cerr << "faultline run: --log-level: expected trace, debug, info, warn, error, critical or off, got '"
                  << value << "'\n";
        return std::nullopt;
      }
      f.log_level = value;
    } else {
      std::cerr << "faultline run: unknown argument '" << argv[i] << "'\n" << kRunUsage;
      return std::nullopt;
    }
  }
  return f;
}

void apply_flags(const Flags& f, Config& c) {
  if (!f.sources.empty() || f.use_stdin) {
    c.sources.clear();
    if (!f.sources.empty()) {
      SourceSpec s;
      std::error_code ec;
      std::string cwd = fs::current_path(ec).string();
      for (const auto& p : f.sources) s.paths.push_back(p.front() == '/' || cwd.empty() ? p : cwd + "/" + p);
      c.sources.push_back(std::move(s));
    }
    if (f.use_stdin) {
      SourceSpec s;
      s.kind = SourceKind::stdin_stream;
      c.sources.push_back(std::move(s));
    }
  }
  for (auto& s : c.sources) {
    if (f.format) s.format = *f.format;
    if (f.start_at) s.start_at = *f.start_at;
  }
  if (!f.rules.empty()) c.rules.paths = f.rules;
  if (f.state_dir) c.state_dir = *f.state_dir;
  if (f.listen) c.listen = *f.listen;
  for (const auto& s : f.url_sinks) c.sinks.push_back(s);
  if (f.output) c.output = *f.output;
  if (f.node_name) c.node_name = *f.node_name;
  if (f.log_format) c.log.format = *parse_log_format(*f.log_format);
  if (f.log_level) c.log.level = *f.log_level;
  if (c.listen == "off") c.listen.clear();
  if (c.output == "off") c.output.clear();
}

// ---- rules ----

struct CompiledSet {
  std::shared_ptr<const CompiledRules> rules;
  std::vector<Diagnostic> diagnostics;
  double seconds = 0;
};

CompiledSet load_rule_set(const Config& c) {
  CompiledSet out;
  auto started = std::chrono::steady_clock::now();
  std::vector<std::string> paths = c.rules.paths;
  if (paths.empty()) paths.push_back(default_rules_dir());
  LoadResult loaded = load_rules(paths);
  out.diagnostics = std::move(loaded.diagnostics);
  if (error_count(out.diagnostics) > 0) return out;
  apply_rule_overrides(loaded.rules, c.rules.overrides, out.diagnostics);
  CompileResult compiled = compile_rules(std::move(loaded.rules), CompileOptions{c.rules.cache_dir});
  out.diagnostics.insert(out.diagnostics.end(), compiled.diagnostics.begin(), compiled.diagnostics.end());
  if (error_count(out.diagnostics) == 0) out.rules = compiled.rules;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

// Compiles a new rule set on its own thread; the loop picks the result up when the eventfd fires.
class Reloader {
 public:
  explicit Reloader(const Config& config) : config_(config) { efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
  ~Reloader() {
    if (worker_.joinable()) worker_.join();
    if (efd_ >= 0) ::close(efd_);
  }
  int fd() const { return efd_; }

  void request(const char* why) {
    if (busy_) {
      again_ = true;
      return;
    }
    spdlog::info("reloading rules ({})", why);
    busy_ = true;
    if (worker_.joinable()) worker_.join();
    worker_ = std::thread([this] {
      CompiledSet result = load_rule_set(config_);
      {
        std::lock_guard lock(mutex_);
        result_ = std::move(result);
      }
      std::uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(efd_, &one, sizeof one);
    });
  }

  // The finished result, if any. `again` is set when another request came in meanwhile.
  std::optional<CompiledSet> take(bool& again) {
    std::uint64_t v;
    [[maybe_unused]] auto n = ::read(efd_, &v, sizeof v);
    std::optional<CompiledSet> out;
    {
      std::lock_guard lock(mutex_);
      out = std::move(result_);
      result_.reset();
    }
    if (out) {
      busy_ = false;
      if (worker_.joinable()) worker_.join();
      again = again_;
      again_ = false;
    }
    return out;
  }

 private:
  const Config& config_;
  int efd_ = -1;
  bool busy_ = false;
  bool again_ = false;
  std::thread worker_;
  std::mutex mutex_;
  std::optional<CompiledSet> result_;
};

// Watches rule files and directories (recursively; a Kubernetes ConfigMap swaps a `..data` symlink in the mounted
// directory, which shows as a move in it).
class RuleWatcher {
 public:
  explicit RuleWatcher(std::vector<std::string> paths) : paths_(std::move(paths)) {
    fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    rewatch();
  }
  ~RuleWatcher() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

  void rewatch() {
    if (fd_ < 0) return;
    constexpr std::uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_MODIFY |
                                   IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
    for (const auto& p : paths_) {
      std::error_code ec;
      if (fs::is_directory(p, ec)) {
        add(p, mask | IN_ONLYDIR);
        for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::follow_directory_symlink |
                                                                fs::directory_options::skip_permission_denied,
                                                        ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
          if (it->is_directory(ec)) add(it->path().string(), mask | IN_ONLYDIR);
        }
      } else {
        auto parent = fs::path(p).parent_path().string();
        add(parent.empty() ? "." : parent, mask | IN_ONLYDIR);
      }
    }
  }

  // True when something changed.
  bool drain() {
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

 private:
  void add(const std::string& dir, std::uint32_t mask) {
    int wd = ::inotify_add_watch(fd_, dir.c_str(), mask);
    if (wd >= 0) watched_.insert(wd);
  }
  std::vector<std::string> paths_;
  int fd_ = -1;
  std::unordered_set<int> watched_;
};

// ---- incidents out ----

// Writes each revision once: to the JSON-lines output and to the dispatcher (API, webhooks), remembering
// (id, revision) in the journal until the next checkpoint.
class Emitter {
 public:
  Emitter(std::string output, std::string journal_path, Dispatcher* dispatcher)
      : output_(std::move(output)), journal_path_(std::move(journal_path)), dispatcher_(dispatcher) {}
  ~Emitter() {
    if (journal_fd_ >= 0) ::close(journal_fd_);
  }

  bool open(std::string* error) {
    if (auto opened = output_.open(); !opened) {
      *error = opened.error().message;
      return false;
    }
    if (!journal_path_.empty()) {
      std::ifstream in(journal_path_);
      std::string id;
      std::uint32_t rev;
      while (in >> id >> rev) journal_.insert(key(id, rev));
      if (!journal_.empty()) spdlog::info("{} incident revision(s) emitted since the last checkpoint will not be "
                                          "emitted again", journal_.size());
      journal_fd_ = ::open(journal_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
      if (journal_fd_ < 0) {
        *error = "cannot open " + journal_path_ + ": " + std::strerror(errno);
        return false;
      }
    }
    return true;
  }

  void emit(const Incident& inc) {
    std::string k = key(inc.id, inc.revision);
    if (journal_.count(k)) {
      ++suppressed_;
      return;
    }
    (void)output_.deliver(inc);  // a failure is logged once by the sink
    if (journal_fd_ >= 0) {
      std::string line = inc.id + " " + std::to_string(inc.revision) + "\n";
      write_all(journal_fd_, line);
      journal_.insert(std::move(k));
    }
    ++emitted_;
    if (dispatcher_) dispatcher_->submit(inc);
  }

  // After a durable checkpoint: revisions before it cannot come again.
  void checkpointed() {
    output_.sync();
    if (journal_fd_ >= 0 && ::ftruncate(journal_fd_, 0) == 0) journal_.clear();
  }

  std::uint64_t emitted() const { return emitted_; }
  std::uint64_t suppressed() const { return suppressed_; }

 private:
  static std::string key(const std::string& id, std::uint32_t rev) { return id + "#" + std::to_string(rev); }
  static bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(fd, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  JsonLinesSink output_;
  std::string journal_path_;
  Dispatcher* dispatcher_;
  int journal_fd_ = -1;
  std::unordered_set<std::string> journal_;
  std::uint64_t emitted_ = 0;
  std::uint64_t suppressed_ = 0;
};

// ---- tail → pipeline ----

class PipelineFeeder final : public TailHandler {
 public:
  PipelineFeeder(Pipeline& pipeline, const Config& config, Metrics* metrics, Clock& clock)
      : pipeline_(pipeline), config_(config), metrics_(metrics), clock_(clock) {}

  std::uint32_t open_stream(const StreamIdentity& identity, ContainerFormat format) override {
    DecodeOptions d;
    d.format = format;
    d.max_line_bytes = config_.max_line_bytes;
    d.time.utc_offset = config_.utc_offset;
    std::uint32_t index = pipeline_.add_stream(identity, d);
    std::string_view source = identity.label(LabelKey::source);
    Stream s;
    if (metrics_) s.metrics = &metrics_->source(source.empty() ? "file" : source);
    if (streams_.size() <= index) streams_.resize(index + 1);
    streams_[index] = s;
    return index;
  }

  void begin_file(std::uint32_t stream, FileStart how, const StreamIdentity& identity, std::uint64_t offset,
                  std::uint64_t line) override {
    Time now = clock_.now();
    switch (how) {
      case FileStart::first:
      case FileStart::resumed:
        if (pipeline_.progress(stream).has_partial) flush(stream, now);  // the stream's previous file
        if (offset > 0 || line > 1) pipeline_.resume(stream, offset, line);
        break;
      case FileStart::rotated:
      case FileStart::truncated:
        flush(stream, now);
        pipeline_.resume(stream, offset, line);
        if (auto* m = streams_[stream].metrics)
          (how == FileStart::rotated ? m->files_rotated : m->files_truncated).Increment();
        break;
      case FileStart::new_instance:
        flush(stream, now);
        harvest(stream);
        pipeline_.new_instance(stream, identity, offset);
        streams_[stream].lines = streams_[stream].truncated = 0;
        if (line > 1) pipeline_.resume(stream, offset, line);
        if (auto* m = streams_[stream].metrics) m->files_rotated.Increment();
        break;
    }
  }

  void data(std::uint32_t stream, std::string_view bytes, Time read_time) override {
    pipeline_.feed(stream, bytes, read_time);
    touch(stream);
    if (auto* m = streams_[stream].metrics) m->bytes_read.Increment(static_cast<double>(bytes.size()));
  }

  void idle(std::uint32_t stream, Time read_time) override {
    if (pipeline_.progress(stream).has_partial) flush(stream, read_time);
  }

  void end_of_stream(std::uint32_t stream, Time read_time) override { flush(stream, read_time); }

  Committed committed(std::uint32_t stream) override {
    Pipeline::StreamProgress p = pipeline_.progress(stream);
    return Committed{p.committed_offset, p.committed_line};
  }

  // Moves the decoders' line counts into the per-source counters (of the streams fed since the last call: a
  // decoder's counts change only when it is fed or flushed).
  void harvest_all() {
    for (std::uint32_t i : touched_) {
      harvest(i);
      streams_[i].touched = false;
    }
    touched_.clear();
  }

 private:
  struct Stream {
    SourceMetrics* metrics = nullptr;
    std::uint64_t lines = 0;
    std::uint64_t truncated = 0;
    bool touched = false;  // listed in touched_
  };

  void touch(std::uint32_t stream) {
    if (!streams_[stream].touched) {
      streams_[stream].touched = true;
      touched_.push_back(stream);
    }
  }

  void flush(std::uint32_t stream, Time now) {
    pipeline_.flush_partial(stream, now);
    pipeline_.drain();
    touch(stream);
  }

  void harvest(std::uint32_t stream) {
    Stream& s = streams_[stream];
    if (!s.metrics) return;
    const DecodeStats& st = pipeline_.decode_stats(stream);
    if (st.lines > s.lines) s.metrics->lines_read.Increment(static_cast<double>(st.lines - s.lines));
    if (st.truncated > s.truncated) s.metrics->lines_truncated.Increment(static_cast<double>(st.truncated - s.truncated));
    s.lines = st.lines;
    s.truncated = st.truncated;
  }

  Pipeline& pipeline_;
  const Config& config_;
  Metrics* metrics_;
  Clock& clock_;
  std::vector<Stream> streams_;
  std::vector<std::uint32_t> touched_;
};

// ---- state dir ----

bool prepare_state_dir(const std::string& dir, int& lock_fd, std::string* error) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    *error = "cannot create the state dir " + dir + ": " + ec.message();
    return false;
  }
  std::string lock = dir + "/lock";
  lock_fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (lock_fd < 0) {
    *error = "cannot write in the state dir " + dir + ": " + std::strerror(errno);
    return false;
  }
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    *error = "another faultline uses the state dir " + dir;
    return false;
  }
  return true;
}

std::string stats_json(const Pipeline& pipeline, const Tailer& tailer, const Emitter& emitter) {
  const auto& p = pipeline.stats();
  const auto& t = tailer.stats();
  nlohmann::json j = {{"lines", p.lines},
                      {"bytes", p.bytes},
                      {"truncated_lines", p.truncated},
                      {"hits", p.hits},
                      {"incidents", p.incidents},
                      {"emitted", emitter.emitted()},
                      {"suppressed_duplicates", emitter.suppressed()},
                      {"files_opened", t.files_opened},
                      {"rotations", t.rotations},
                      {"truncations", t.truncations},
                      {"deleted", t.deleted},
                      {"unreadable", t.unreadable},
                      {"rotated_unread_bytes", t.rotated_unread_bytes},
                      {"late_bytes", t.late_bytes},
                      {"watched_files", t.watched_files},
                      {"kmsg_records", t.kmsg_records},
                      {"kmsg_lost", t.kmsg_lost}};
  return j.dump();
}

}  // namespace

int run_command(int argc, char** argv) {
  auto flags = parse_flags(argc, argv);
  if (!flags) return 2;
  if (flags->help) {
    std::cout << kRunUsage;
    return 0;
  }

  // Config: the file (every problem reported with its position), then the flags over it.
  ConfigResult loaded;
  if (flags->config.empty()) {
    loaded.config = default_config();
  } else {
    loaded = load_config(flags->config);
  }
  Config config = std::move(loaded.config);
  apply_flags(*flags, config);
  setup_logging(config.log);
  log_diagnostics(loaded.diagnostics);
  if (!loaded.ok()) {
    spdlog::error("{} error(s) in the config; nothing started", error_count(loaded.diagnostics));
    return 2;
  }
  if (config.sources.empty()) {
    spdlog::error("no sources: give --source, '-' or `sources:` in the config");
    return 2;
  }
  bool stdin_only = std::all_of(config.sources.begin(), config.sources.end(),
                                [](const SourceSpec& s) { return s.kind == SourceKind::stdin_stream; });
  if (config.rules.cache_dir.empty()) config.rules.cache_dir = config.state_dir + "/cache";

  // Rules.
  CompiledSet rules = load_rule_set(config);
  log_diagnostics(rules.diagnostics);
  if (!rules.rules) {
    spdlog::error("{} error(s) in the rules; nothing started", error_count(rules.diagnostics));
    return 2;
  }
  if (flags->check_only) {
    spdlog::info("config and {} rule(s) are valid", rules.rules->rule_set().rules.size());
    return 0;
  }
  std::uint64_t nofile = raise_open_files_limit();
  spdlog::info("faultline {} starting: {} rule(s) ({:.2f}s), {} source(s), state dir {}, open files limit {}",
               faultline_version(), rules.rules->rule_set().rules.size(), rules.seconds, config.sources.size(),
               config.state_dir, nofile);

  // State dir: checkpoint, journal, spools, rule cache. Exclusive.
  int lock_fd = -1;
  bool stateful = true;
  {
    std::string error;
    if (!prepare_state_dir(config.state_dir, lock_fd, &error)) {
      if (!stdin_only) {
        spdlog::error("{}", error);
        return 2;
      }
      spdlog::warn("{}; running without checkpoints", error);
      stateful = false;
      config.rules.cache_dir.clear();
    }
  }

  // Signals: blocked in every thread (the io thread and the reloader's thread inherit the mask), read via signalfd.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  int sig_fd = ::signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);

  // Serving and delivery: the metrics, the io thread, the incident store, the server, the dispatcher and its sinks.
  const std::string delivery_dir = stateful ? config.state_dir : "";
  ServerOptions server_options;
  server_options.listen = config.listen;
  server_options.api_token_file = config.server.api_token_file;
  DispatcherOptions dispatch_options;
  dispatch_options.redaction = config.redaction;
  dispatch_options.queue_capacity = config.queue_capacity;
  {
    auto problems = validate_server(server_options);
    for (auto& p : validate_delivery(dispatch_options, config.sinks, delivery_dir)) problems.push_back(std::move(p));
    if (!problems.empty()) {
      for (const auto& p : problems) spdlog::error("{}", p);
      return 2;
    }
  }
  SystemClock clock;
  Metrics metrics;
  IoThread io;
  ServerStatus status(delivery_dir);
  IncidentStore store(config.max_incidents, delivery_dir.empty() ? "" : delivery_dir + "/incidents.jsonl");
  Dispatcher dispatcher(dispatch_options, io, metrics, store);
  std::unique_ptr<Server> server;
  {
    auto fail = [](const std::string& why) {
      spdlog::error("cannot start the outputs: {}", why);
      return 2;
    };
    if (auto opened = store.open(); !opened) return fail(opened.error().message);
    std::string listen_address;
    if (!config.listen.empty()) {
      ApiContext api;
      api.incidents = &store;
      api.metrics = &metrics;
      api.version = std::string(faultline_version());
      use_status(api, status);
      server = std::make_unique<Server>(server_options, std::move(api), io, metrics);
      if (auto started = server->start(); !started) return fail(started.error().message);
      listen_address = server->listen_address();
    }
    std::string external = config.server.external_url;
    if (external.empty() && !listen_address.empty()) external = "http://" + listen_address;
    while (!external.empty() && external.back() == '/') external.pop_back();
    WebhookContext sinks{io, metrics, clock, delivery_dir + "/spool", external, std::string(faultline_version()),
                         &store, config.max_incidents};
    for (const auto& cfg : config.sinks) {
      auto sink = make_webhook_sink(cfg, sinks);
      if (!sink) return fail(sink.error().message);
      dispatcher.add(std::move(*sink));
    }
    if (auto started = dispatcher.start(); !started) return fail(started.error().message);
    io.start();
    if (server) spdlog::info("serving metrics and the API on http://{}", listen_address);
  }
  metrics.declare_rules(rules.rules->rule_set());
  status.set_rules(rule_infos(rules.rules->rule_set()));
  status.set_ready("rules", true);
  metrics.record_reload(true, rules.rules->rule_set().rules.size());

  // Checkpoint of the previous run.
  std::optional<Checkpoint> checkpoint;
  // Standard input cannot be resumed: a run over it starts and ends afresh (no checkpoint, no journal).
  const bool checkpointing = stateful && !stdin_only;
  if (checkpointing) {
    auto read = read_checkpoint(config.state_dir);
    if (read)
      checkpoint = std::move(*read);
    else
      spdlog::error("{}; starting without it", read.error().message);
  }

  Emitter emitter(config.output, checkpointing ? config.state_dir + "/emitted.log" : "", &dispatcher);
  {
    std::string error;
    if (!emitter.open(&error)) {
      spdlog::error("{}", error);
      return 2;
    }
  }

  Pipeline pipeline(rules.rules, [&](const Incident& inc) { emitter.emit(inc); }, config.pipeline);
  if (checkpoint && !checkpoint->correlator_state.empty()) {
    if (auto loaded = pipeline.load_state(checkpoint->correlator_state); !loaded)
      spdlog::error("cannot restore the correlation state: {}", loaded.error().message);
  }
  auto event_counters = std::make_shared<EventMatchCounters>(metrics.event_counters(rules.rules->rule_set()));
  pipeline.set_hit_observer([&event_counters](const Hit& hit, const RecordBatch&) {
    auto& per_rule = *event_counters;
    if (hit.event.rule < per_rule.size() && hit.event.event < per_rule[hit.event.rule].size())
      if (auto* c = per_rule[hit.event.rule][hit.event.event]) c->Increment();
  });

  PipelineFeeder feeder(pipeline, config, &metrics, clock);
  TailOptions topt = config.tail;
  topt.node_name = config.node_name;
  Tailer tailer(topt, clock, feeder);
  for (const auto& s : config.sources) tailer.add_source(s);
  tailer.restore(checkpoint ? &checkpoint->positions : nullptr);
  if (checkpoint) spdlog::info("resuming from the checkpoint of {}", format_time(checkpoint->written));

  Reloader reloader(config);
  std::unique_ptr<RuleWatcher> watcher;
  if (config.rules.watch) {
    std::vector<std::string> paths = config.rules.paths;
    if (paths.empty()) paths.push_back(default_rules_dir());
    watcher = std::make_unique<RuleWatcher>(paths);
  }
  bool reload_pending = false;
  Steady reload_at{};

  std::uint64_t checkpoints = 0;
  std::uint64_t cp_bytes = ~0ull, cp_incidents = ~0ull;
  auto write_cp = [&](const char* why) {
    if (!checkpointing) return;
    pipeline.drain();
    // Idle: nothing read and nothing emitted since the last checkpoint — it would say the same.
    if (pipeline.stats().bytes == cp_bytes && pipeline.stats().incidents == cp_incidents &&
        std::string_view(why) == "periodic")
      return;
    cp_bytes = pipeline.stats().bytes;
    cp_incidents = pipeline.stats().incidents;
    Checkpoint c;
    c.positions = tailer.positions();
    c.correlator_state = pipeline.save_state();
    c.written = clock.now();
    if (auto written = write_checkpoint(config.state_dir, c); written) {
      emitter.checkpointed();
      metrics.record_checkpoint();
      ++checkpoints;
      spdlog::debug("checkpoint written ({}): {} file(s)", why, c.positions.files.size());
    } else {
      spdlog::error("checkpoint not written: {}", written.error().message);
    }
  };

  const auto tick = std::chrono::milliseconds(1000);
  // Idle, the Tailer wakes once per rescan_interval; a tick due up to this much later runs in the same wake-up.
  const auto tick_slack = std::chrono::milliseconds(5);
  // The periodic checkpoint runs in a wake-up up to this much before or after its time (a tick's, mostly), not in one
  // of its own.
  const auto checkpoint_slack = std::min<std::chrono::steady_clock::duration>(tick / 2, config.checkpoint_interval / 2);
  Steady next_checkpoint = clock.steady() + config.checkpoint_interval;
  Steady next_tick = clock.steady() + tick;
  bool ready_reported = false;
  bool stop = false;
  bool more = true;
  std::uint64_t stories_dropped = 0;
  TailStats last_tail{};
  std::vector<std::pair<std::string, std::uint64_t>> lag_set;  // the lag gauges' values
  auto& m = metrics;

  // The descriptors to wait on change only when standard input ends.
  std::vector<pollfd> fds;
  bool fds_stdin_finished = true;
  constexpr std::size_t kSignalFd = 0, kReloaderFd = 1, kWatcherFd = 2;

  while (!stop) {
    // Backpressure: the dispatcher's queue is full — stop reading (lag grows) rather than drop anything.
    bool paused = dispatcher.backpressure();
    if (paused) dispatcher.wait_for_space(std::chrono::milliseconds(200));

    if (fds.empty() || fds_stdin_finished != tailer.stdin_finished()) {
      fds_stdin_finished = tailer.stdin_finished();
      fds.clear();
      fds.push_back({sig_fd, POLLIN, 0});
      fds.push_back({reloader.fd(), POLLIN, 0});
      if (watcher && watcher->fd() >= 0) fds.push_back({watcher->fd(), POLLIN, 0});
      for (int fd : tailer.wait_fds()) fds.push_back({fd, POLLIN, 0});
    }
    Steady now = clock.steady();
    Steady deadline = std::min({next_checkpoint + checkpoint_slack, next_tick, now + tailer.next_timeout()});
    if (reload_pending) deadline = std::min(deadline, reload_at);
    // Rounded up: a deadline less than 1 ms away must not turn into a busy loop of zero timeouts.
    int timeout = (more && !paused) ? 0
                  : static_cast<int>(std::max<std::int64_t>(
                        0, std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count()));
    if (paused) timeout = 0;
    int rc = ::poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) {
      spdlog::error("poll: {}", std::strerror(errno));
      break;
    }
    // Only what poll() found ready is read (after EINTR the revents say nothing: everything is).
    auto ready = [&](std::size_t i) { return rc < 0 || (i < fds.size() && fds[i].revents != 0); };

    // Signals.
    signalfd_siginfo si;
    while (ready(kSignalFd) && ::read(sig_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      if (si.ssi_signo == SIGHUP) {
        reloader.request("SIGHUP");
      } else {
        spdlog::info("{}: stopping", si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        stop = true;
      }
    }
    if (stop) break;

    // Rule files changed: reload once they settle.
    if (watcher && watcher->fd() >= 0 && ready(kWatcherFd) && watcher->drain()) {
      reload_pending = true;
      reload_at = clock.steady() + config.rules.reload_delay;
    }
    if (reload_pending && clock.steady() >= reload_at) {
      reload_pending = false;
      reloader.request("rule files changed");
    }
    bool again = false;
    if (auto result = ready(kReloaderFd) ? reloader.take(again) : std::nullopt) {
      log_diagnostics(result->diagnostics);
      if (result->rules) {
        pipeline.replace_rules(result->rules);
        *event_counters = m.event_counters(result->rules->rule_set());
        m.declare_rules(result->rules->rule_set());
        status.set_rules(rule_infos(result->rules->rule_set()));
        m.record_reload(true, result->rules->rule_set().rules.size());
        spdlog::info("rules reloaded: {} rule(s) ({:.2f}s)", result->rules->rule_set().rules.size(), result->seconds);
      } else {
        m.record_reload(false);
        spdlog::error("rule reload rejected ({} error(s)); the previous rules keep running",
                      error_count(result->diagnostics));
      }
      if (watcher) watcher->rewatch();
      if (again) reloader.request("changed again during the reload");
    }

    // Read.
    more = paused ? true : tailer.poll_once();
    pipeline.drain();
    if (!ready_reported) {
      status.set_ready("sources", true);
      ready_reported = true;
      spdlog::info("following {} file(s) in {} director(ies)", tailer.stats().watched_files,
                   tailer.stats().watched_dirs);
    }

    now = clock.steady();
    if (now + tick_slack >= next_tick) {
      // Next tick: when the Tailer wakes next if that is between half a tick and a tick away (one wake-up then
      // serves both), else a tick from now. Ticks stay at most a tick (and the slack) apart.
      std::chrono::steady_clock::duration until = tick;
      auto tail_wake = tailer.next_timeout();
      if (tail_wake >= tick / 2 && tail_wake <= tick + tick_slack) until = tail_wake;
      next_tick = now + until;
      pipeline.tick(clock.now());
      feeder.harvest_all();
      // Metrics are looked up only when they change: an idle tick touches as little as it can.
      if (const auto& lag = tailer.lag_by_source(); lag != lag_set) {
        for (const auto& [source, bytes] : lag) m.source(source).lag_bytes.Set(static_cast<double>(bytes));
        lag_set = lag;
      }
      const auto& t = tailer.stats();
      auto sm = [&]() -> SourceMetrics& {
        return m.source(config.sources.front().source.empty() ? "file" : config.sources.front().source);
      };
      if (t.unreadable > last_tail.unreadable)
        sm().files_unreadable.Increment(static_cast<double>(t.unreadable - last_tail.unreadable));
      if (t.rotated_unread_bytes > last_tail.rotated_unread_bytes) sm().files_lost.Increment();
      last_tail = t;
      const auto& cs = pipeline.correlator_stats();
      if (cs.stories_dropped > stories_dropped) {
        m.stories_dropped().Increment(static_cast<double>(cs.stories_dropped - stories_dropped));
        stories_dropped = cs.stories_dropped;
      }
    }
    if (now + checkpoint_slack >= next_checkpoint) {
      write_cp("periodic");
      next_checkpoint = clock.steady() + config.checkpoint_interval;
    }
    if (stdin_only && tailer.stdin_finished()) {
      spdlog::info("standard input ended");
      pipeline.finish(clock.now());
      break;
    }
  }

  // Shutdown: stop reading, finish what is in flight, checkpoint, let the sinks flush for a bounded time.
  tailer.stop();
  pipeline.drain();
  pipeline.tick(clock.now());
  write_cp("shutdown");
  feeder.harvest_all();
  spdlog::info("stopped: {}", stats_json(pipeline, tailer, emitter));
  if (server) server->stop();
  dispatcher.stop(config.shutdown_timeout);
  io.stop();
  if (lock_fd >= 0) ::close(lock_fd);
  if (sig_fd >= 0) ::close(sig_fd);
  return 0;
}

}  // namespace faultline::app
