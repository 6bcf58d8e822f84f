// The Service (service.hpp): start-up as an ordered list of named steps, one turn of the loop's work, reloads and
// the orderly stop.
//
// Nothing lost, nothing twice: a checkpoint stores, after Pipeline::drain(), the committed offset of every file and
// the correlator's state — the same instant. After a crash, lines after the offsets are read again and produce the
// same incidents with the same ids and revisions; the ones already emitted since that checkpoint are in the journal
// (journal.hpp) and are not emitted again.
#include "faultline/service.hpp"

#include <spdlog/spdlog.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cassert>
#include <optional>
#include <span>

#include "checkpointer.hpp"
#include "delivery.hpp"
#include "faultline/checkpoint.hpp"
#include "faultline/metrics.hpp"
#include "faultline/pipeline.hpp"
#include "faultline/tail.hpp"
#include "journal.hpp"
#include "rule_reloader.hpp"
#include "state_dir.hpp"
#include "stream_adapter.hpp"
#include "totals.hpp"

namespace faultline {

using namespace service_detail;
using Steady = std::chrono::steady_clock::time_point;

namespace {

constexpr auto kTick = std::chrono::milliseconds(1000);
// Idle, the Tailer wakes once per rescan_interval; a tick due up to this much later runs in the same wake-up.
constexpr auto kTickSlack = std::chrono::milliseconds(5);

// Loading rules parses every rule file (yaml-cpp allocates and frees a node per scalar, on up to 8 threads), and a busy
// stretch frees batches of every size: the freed heap goes back to the system, or the daemon's resident memory would
// stay at its highest for the rest of its life.
void release_freed_memory() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace

struct Service::Impl {
  Config config;
  SystemClock system_clock;
  Clock& clock;
  // Standard input cannot be resumed: a run over it alone starts and ends afresh (no checkpoint, no journal), and
  // runs without a state dir when it cannot have one.
  bool stdin_only = false;
  bool checkpointing = false;

  std::optional<StateDir> state;  // locked while the service lives
  std::shared_ptr<const CompiledRules> rules;
  double rules_seconds = 0;
  std::shared_ptr<Metrics> metrics;
  Delivery delivery;
  std::optional<Checkpoint> checkpoint;  // the previous run's, until the sources are restored
  Journal journal;
  EmitCounts emits;
  std::unique_ptr<Pipeline> pipeline;
  EventMatchCounters event_counters;
  std::unique_ptr<StreamAdapter> adapter;
  std::unique_ptr<Tailer> tailer;
  std::unique_ptr<RuleReloader> reloader;
  std::unique_ptr<Checkpointer> checkpointer;
  TailAttribution attribution;
  std::unique_ptr<TotalsCollector> collector;  // last: its scrape hook goes before anything it reads

  // The loop's timers and state.
  std::chrono::steady_clock::duration checkpoint_slack{};
  Steady next_checkpoint{};
  std::uint64_t bytes_at_trim = 0;  // bytes the Tailer had read at the last periodic release of freed memory
  Steady next_tick{};
  bool ready_reported = false;
  std::uint64_t activity_lines = 0;    // lines read at the last publish_activity
  std::optional<Time> last_line_read;  // when that count last grew
  bool finished = false;
  bool started = false;
  bool stopped = false;
  std::uint64_t fds_version = 0;
  bool fds_stdin_finished = false;
  std::optional<StartAt> start_at_flag;
  // No file matches the sources' globs: warned at the first look, then at most this often while it stays so.
  Steady next_no_match_warning{};
  std::uint64_t fingerprints_published = 0;  // the detector's inventory_version() last published to the API

  Impl(Config c, Clock* clk) : config(std::move(c)), clock(clk ? *clk : system_clock) {
    stdin_only = std::all_of(config.sources.begin(), config.sources.end(),
                             [](const SourceSpec& s) { return s.kind == SourceKind::stdin_stream; });
    if (config.rules.cache_dir.empty()) config.rules.cache_dir = StateLayout{config.state_dir}.cache_dir();
  }

  // ---- start-up steps, in order ----

  Result<void> load_rules() {
    RuleLoad loaded = load_rule_set(config);
    // A sink filter or an override naming no loaded rule would silently never match: refused at start-up (a reload
    // that drops such a rule only warns, in apply_rule_overrides, and keeps running).
    if (loaded.rules) {
      auto problems = rule_reference_problems(config, loaded.rules->rule_set(), loaded.diagnostics);
      for (auto& p : problems) loaded.diagnostics.push_back(std::move(p));
    }
    log_diagnostics(loaded.diagnostics);
    if (!loaded.rules) return Error{std::to_string(error_count(loaded.diagnostics)) + " error(s) in the rules"};
    if (std::size_t n = error_count(loaded.diagnostics))
      return Error{std::to_string(n) + " rule id(s) in the config name no loaded rule"};
    rules = loaded.rules;
    rules_seconds = loaded.seconds;
    return {};
  }

  Result<void> raise_limits() {
    std::uint64_t nofile = raise_open_files_limit();
    spdlog::info("faultline {} starting: {} rule(s) ({:.2f}s), {} source(s), state dir {}, open files limit {}",
                 faultline_version(), rules->rule_set().rules.size(), rules_seconds, config.sources.size(),
                 config.state_dir, nofile);
    return {};
  }

  Result<void> open_state_dir() {
    auto opened = StateDir::open(config.state_dir);
    if (!opened) {
      if (!stdin_only) return opened.error();
      spdlog::warn("{}; running without checkpoints", opened.error().message);
      config.rules.cache_dir.clear();
      return {};
    }
    state = std::move(*opened);
    checkpointing = !stdin_only;
    return {};
  }

  Result<void> start_metrics() {
    metrics = std::make_shared<Metrics>();
    collector = std::make_unique<TotalsCollector>(*metrics);
    collector->publish(initial_totals(config));
    return {};
  }

  Result<void> start_outputs() {
    if (auto started = delivery.start(config, state ? state->layout().dir : std::string(), metrics, clock); !started)
      return started;
    if (!config.listen.empty()) spdlog::info("serving metrics and the API on http://{}", delivery.listen_address());
    delivery.update_rules(rules->rule_set());
    delivery.set_ready("rules", true);
    metrics->record_reload(true, rules->rule_set().rules.size());
    return {};
  }

  Result<void> read_previous_checkpoint() {
    if (!checkpointing) return {};
    auto read = read_checkpoint(state->layout().dir);
    if (read)
      checkpoint = std::move(*read);
    else
      spdlog::error("{}; starting without it", read.error().message);
    return {};
  }

  Result<void> open_journal() {
    if (auto opened = delivery.open_output(config.output, config.output_text); !opened) return opened;
    if (!checkpointing) return {};
    if (auto opened = journal.open(state->layout().journal_file(), delivery.output_file_size()); !opened) return opened;
    (void)delivery.recover_output(journal);
    return {};
  }

  Result<void> build_pipeline() {
    PipelineOptions options = config.pipeline;
    // Live: the steady clock bounds the holds too (a stream whose time lags never keeps one back).
    options.correlator.holds_bounded_by_wall = true;
    options.fingerprint.clock = &clock;  // a story ends after wall-clock silence too (Pipeline::tick)
    pipeline = std::make_unique<Pipeline>(rules, [this](const Incident& inc) { emit(inc); }, options);
    if (checkpoint && !checkpoint->correlator_state.empty()) {
      if (auto loaded = pipeline->load_state(checkpoint->correlator_state); !loaded)
        spdlog::error("cannot restore the correlation state: {}", loaded.error().message);
    }
    if (checkpoint && !checkpoint->fingerprints.empty()) {
      if (auto loaded = pipeline->load_fingerprints(checkpoint->fingerprints); !loaded)
        spdlog::error("cannot restore the fingerprint inventory: {}; it starts empty", loaded.error().message);
    }
    event_counters = metrics->event_counters(rules->rule_set());
    pipeline->set_hit_observer([this](const Hit& hit, const RecordBatch&) {
      if (hit.event.rule < event_counters.size() && hit.event.event < event_counters[hit.event.rule].size())
        if (auto* c = event_counters[hit.event.rule][hit.event.event]) c->Increment();
    });
    return {};
  }

  Result<void> open_sources() {
    adapter = std::make_unique<StreamAdapter>(*pipeline, config, clock);
    TailOptions topt = config.tail;
    topt.node_name = config.node_name;
    tailer = std::make_unique<Tailer>(topt, clock, *adapter);
    for (const auto& s : config.sources) tailer->add_source(s);
    tailer->restore(checkpoint ? &checkpoint->positions : nullptr);
    if (checkpoint) {
      spdlog::info("resuming from the checkpoint of {} ({}): files it knows are read on from where it left them",
                   format_time(checkpoint->written), state->layout().checkpoint_file());
      if (start_at_flag) {
        spdlog::warn("--start-at {} applies only to the very first start: the checkpoint {} says where each file it "
                     "knows was read to, and those files go on from there. To read them again from the {}, stop "
                     "faultline and remove the state dir {} (or give a new --state-dir)",
                     to_string(*start_at_flag), state->layout().checkpoint_file(),
                     *start_at_flag == StartAt::beginning ? "beginning" : "end", config.state_dir);
      }
    }
    checkpoint.reset();
    fds_stdin_finished = tailer->stdin_finished();
    return {};
  }

  Result<void> start_reloader() {
    reloader = std::make_unique<RuleReloader>(config, config.rules.watch, config.rules.reload_delay);
    return {};
  }

  Result<void> arm_loop() {
    checkpointer = std::make_unique<Checkpointer>(checkpointing ? state->layout().dir : std::string(), *pipeline,
                                                  *tailer, journal, delivery, *metrics, clock);
    // The periodic checkpoint runs in a wake-up up to this much before or after its time (a tick's, mostly), not in
    // one of its own.
    checkpoint_slack = std::min<std::chrono::steady_clock::duration>(kTick / 2, config.checkpoint_interval / 2);
    next_checkpoint = clock.steady() + config.checkpoint_interval;
    next_tick = clock.steady() + kTick;
    return {};
  }

  struct Step {
    std::string_view name;
    Result<void> (Impl::*run)();
  };
  // The order is the order they run in: each step may use what the ones before it made.
  static std::span<const Step> steps() {
    static constexpr Step kSteps[] = {
        {"rules", &Impl::load_rules},
        {"open files limit", &Impl::raise_limits},
        {"state dir", &Impl::open_state_dir},
        {"metrics", &Impl::start_metrics},
        {"outputs", &Impl::start_outputs},
        {"checkpoint", &Impl::read_previous_checkpoint},
        {"journal", &Impl::open_journal},
        {"pipeline", &Impl::build_pipeline},
        {"sources", &Impl::open_sources},
        {"reloader", &Impl::start_reloader},
        {"loop", &Impl::arm_loop},
    };
    return kSteps;
  }

  // ---- at work ----

  // Each revision once. Held until commit(): durable in every spool, then the output, then the journal (until the
  // next checkpoint) — one spool write per sink for all the revisions of a step.
  void emit(const Incident& inc) {
    if (journal.contains(inc.id, inc.revision)) {
      ++emits.suppressed;
      return;
    }
    ++emits.emitted;
    delivery.emit(inc);
  }

  void commit() { delivery.commit(journal); }

  // File sources whose globs match no file at all: said at the first look and then every kNoMatchRepeat, not more
  // (the globs are looked at again every rescan; a file that appears is followed at once).
  void warn_if_nothing_matches() {
    static constexpr auto kNoMatchRepeat = std::chrono::minutes(10);
    if (tailer->stats().watched_files != 0) return;
    const Steady now = clock.steady();
    if (now < next_no_match_warning) return;
    std::string globs;
    for (const auto& s : config.sources) {
      if (s.kind != SourceKind::files) continue;
      for (const auto& p : s.paths) globs += (globs.empty() ? "" : ", ") + p;
    }
    if (globs.empty()) return;
    next_no_match_warning = now + kNoMatchRepeat;
    spdlog::warn("no file matches the sources' paths ({}): nothing is read until one does (still looking; "
                 "--source or `sources:` in the config set them)",
                 globs);
  }

  void publish_totals() {
    auto totals = gather_totals(*adapter, *tailer, *pipeline, config, attribution, true);
    publish_activity(totals);
    collector->publish(std::move(totals));
    if (pipeline->detector().inventory_version() != fingerprints_published) {
      fingerprints_published = pipeline->detector().inventory_version();
      delivery.publish_fingerprints(pipeline->detector().inventory());
    }
  }

  // For the page: files followed, lines read and when the last one came, event matches by rule.
  void publish_activity(const PipelineTotals& totals) {
    ReadingActivity a;
    for (const auto& s : totals.sources) a.lines_read += s.lines_read;
    if (a.lines_read > activity_lines) {
      activity_lines = a.lines_read;
      last_line_read = clock.now();
    }
    a.last_line = last_line_read;
    a.files = tailer->stats().watched_files;
    if (rules) {
      const auto& set = rules->rule_set();
      for (std::size_t i = 0; i < set.rules.size() && i < event_counters.size(); ++i) {
        double n = 0;
        for (const auto* c : event_counters[i])
          if (c) n += c->Value();
        a.rule_matches.emplace_back(set.rules[i].id, static_cast<std::uint64_t>(n));
      }
    }
    delivery.update_activity(std::move(a));
  }

  void replace_rules(std::shared_ptr<const CompiledRules> next) {
    const RuleSet& set = next->rule_set();
    pipeline->replace_rules(next);
    event_counters = metrics->event_counters(set);
    delivery.update_rules(set);
    metrics->record_reload(true, set.rules.size());
    rules = std::move(next);
  }

  void apply_reload(const RuleLoad& result) {
    log_diagnostics(result.diagnostics);
    if (result.rules) {
      replace_rules(result.rules);
      spdlog::info("rules reloaded: {} rule(s) ({:.2f}s)", result.rules->rule_set().rules.size(), result.seconds);
    } else {
      metrics->record_reload(false);
      spdlog::error("rule reload rejected ({} error(s)); the previous rules keep running",
                    error_count(result.diagnostics));
    }
    release_freed_memory();
  }
};

Service::Service(ServiceOptions options) : impl_(std::make_unique<Impl>(std::move(options.config), options.clock)) {
  impl_->start_at_flag = options.start_at_flag;
}

Service::~Service() = default;

std::vector<std::string_view> Service::start_steps() {
  std::vector<std::string_view> names;
  for (const auto& s : Impl::steps()) names.push_back(s.name);
  return names;
}

Result<std::size_t> Service::check() {
  auto& d = *impl_;
  Preflight checked = preflight(d.config);
  log_diagnostics(checked.diagnostics);
  if (!checked.ok()) return Error{std::to_string(error_count(checked.diagnostics)) + " error(s)"};
  return checked.rules;
}

Result<void> Service::start() {
  auto& d = *impl_;
  assert(!d.started);
  for (const auto& s : Impl::steps()) {
    if (auto done = (d.*s.run)(); !done) {
      d.delivery.stop(Duration{0});
      return Error{std::string(s.name) + ": " + done.error().message};
    }
  }
  d.started = true;
  release_freed_memory();
  return {};
}

std::vector<WaitFd> Service::wait_fds() const {
  auto& d = *impl_;
  std::vector<WaitFd> fds;
  fds.push_back({d.reloader->done_fd(), WaitFd::Role::reload_done});
  if (d.reloader->watch_fd() >= 0) fds.push_back({d.reloader->watch_fd(), WaitFd::Role::rules_changed});
  for (int fd : d.tailer->wait_fds()) fds.push_back({fd, WaitFd::Role::input});
  return fds;
}

std::uint64_t Service::wait_fds_version() const {
  auto& d = *impl_;
  if (d.tailer->stdin_finished() != d.fds_stdin_finished) {
    d.fds_stdin_finished = d.tailer->stdin_finished();
    ++d.fds_version;
  }
  return d.fds_version;
}

Steady Service::next_deadline() const {
  auto& d = *impl_;
  Steady deadline = std::min({d.next_checkpoint + d.checkpoint_slack, d.next_tick,
                              d.clock.steady() + d.tailer->next_timeout()});
  if (auto due = d.reloader->due()) deadline = std::min(deadline, *due);
  return deadline;
}

bool Service::backpressure() const { return impl_->delivery.backpressure(); }
void Service::wait_for_space(Duration max) { impl_->delivery.wait_for_space(max); }

StepResult Service::step(const Wakeups& woke) {
  auto& d = *impl_;
  assert(d.started && !d.stopped);
  if (d.finished) return {false, true};
  // Backpressure: the outputs' queue is full — stop reading (lag grows) rather than drop anything.
  bool paused = d.delivery.backpressure();

  // Rule files changed: reload once they settle. A finished reload is swapped in (or rejected).
  if (woke.rules_changed) d.reloader->on_watch_ready(d.clock.steady());
  d.reloader->poll(d.clock.steady());
  if (woke.reload_done)
    if (auto result = d.reloader->take()) d.apply_reload(*result);

  // Read.
  bool more = paused ? true : d.tailer->poll_once();
  d.pipeline->drain();
  if (!d.ready_reported) {
    spdlog::info("following {} file(s) in {} director(ies)", d.tailer->stats().watched_files,
                 d.tailer->stats().watched_dirs);
    d.delivery.set_ready("sources", true);
    d.ready_reported = true;
    d.publish_totals();  // the page's "reading N files" from the first look on, not from the first tick
  }
  d.warn_if_nothing_matches();

  Steady now = d.clock.steady();
  if (now + kTickSlack >= d.next_tick) {
    // Next tick: when the Tailer wakes next if that is between half a tick and a tick away (one wake-up then
    // serves both), else a tick from now. Ticks stay at most a tick (and the slack) apart.
    std::chrono::steady_clock::duration until = kTick;
    auto tail_wake = d.tailer->next_timeout();
    if (tail_wake >= kTick / 2 && tail_wake <= kTick + kTickSlack) until = tail_wake;
    d.next_tick = now + until;
    d.pipeline->tick(d.clock.now());
    d.publish_totals();
  }
  d.commit();  // what this step emitted, durable before it counts as emitted (and a failed spool write retried)
  if (now + d.checkpoint_slack >= d.next_checkpoint) {
    d.checkpointer->write(Checkpointer::Why::periodic);
    d.next_checkpoint = d.clock.steady() + d.config.checkpoint_interval;
    // What a busy interval freed (batches, the checkpoint's text) goes back to the system too; an idle one is skipped.
    if (const std::uint64_t read = d.tailer->stats().bytes; read != d.bytes_at_trim) {
      d.bytes_at_trim = read;
      release_freed_memory();
    }
  }
  if (d.stdin_only && d.tailer->stdin_finished()) {
    spdlog::info("standard input ended");
    d.pipeline->finish(d.clock.now());
    d.commit();
    d.finished = true;
    return {false, true};
  }
  return {more, false};
}

void Service::request_reload(const char* why) { impl_->reloader->request(why); }
void Service::await_reload() { impl_->reloader->wait(); }

void Service::replace_rules(std::shared_ptr<const CompiledRules> rules) {
  assert(impl_->started && rules);
  impl_->replace_rules(std::move(rules));
}

void Service::stop(Duration grace) {
  auto& d = *impl_;
  if (!d.started || d.stopped) return;
  d.stopped = true;
  // Stop reading, finish what is in flight, release what is held, checkpoint, let the sinks flush for a bounded time.
  d.tailer->stop();
  d.pipeline->drain();
  d.pipeline->tick(d.clock.now());
  // Held incidents go out now: a hold waits a few seconds for late evidence or a root cause, never past the process.
  d.pipeline->release_held();
  d.commit();
  d.checkpointer->write(Checkpointer::Why::shutdown);
  d.publish_totals();
  spdlog::info("stopped: {}", stats_json());
  d.delivery.stop(grace);
}

const Config& Service::config() const { return impl_->config; }
Metrics& Service::metrics() { return *impl_->metrics; }
std::string Service::listen_address() const { return impl_->delivery.listen_address(); }
std::uint64_t Service::checkpoints_written() const {
  return impl_->checkpointer ? impl_->checkpointer->written() : 0;
}
std::uint64_t Service::emitted() const { return impl_->emits.emitted; }
std::uint64_t Service::suppressed_duplicates() const { return impl_->emits.suppressed; }
std::string Service::stats_json() const {
  return service_detail::stats_json(*impl_->pipeline, *impl_->tailer, impl_->emits);
}
const Clock& Service::clock() const { return impl_->clock; }

}  // namespace faultline
