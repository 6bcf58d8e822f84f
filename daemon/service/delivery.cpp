// Delivery (delivery.hpp): the JSON-lines output, the dispatcher and its sinks, and the HTTP server, wired on one
// io thread.
#include "delivery.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include <spdlog/spdlog.h>

#include "faultline/config.hpp"
#include "faultline/fingerprint.hpp"
#include "faultline/io_thread.hpp"
#include "faultline/server.hpp"
#include "faultline/sinks.hpp"

namespace faultline::service_detail {

// Construction order is the order of dependence (destruction the reverse): the io thread outlives everything that
// posts to it; the store outlives the dispatcher and the server that read it.
struct Delivery::Parts {
  std::shared_ptr<Metrics> metrics;
  IoThread io;
  ServerStatus status;
  InventoryBoard fingerprints;  // the pipeline thread publishes, the server reads
  IncidentStore store;
  Dispatcher dispatcher;
  std::unique_ptr<Server> server;
  bool running = false;

  Parts(std::shared_ptr<Metrics> m, const Config& config, const std::string& state_dir, DispatcherOptions options)
      : metrics(std::move(m)),
        status(state_dir),
        store({config.max_incidents, config.max_incident_bytes},
              state_dir.empty() ? "" : state_dir + "/incidents.jsonl"),
        dispatcher(std::move(options), io, *metrics, store) {}

  void stop(Duration grace) {
    if (!running) return;
    running = false;
    if (server) server->stop();
    dispatcher.stop(grace);
    io.stop();
  }
};

Delivery::Delivery() = default;

Delivery::~Delivery() {
  if (parts_) parts_->stop(Duration{0});
}

namespace {

ServerOptions server_options_of(const Config& config) {
  ServerOptions server_options;
  server_options.listen = config.listen;
  server_options.api_token_file = config.server.api_token_file;
  return server_options;
}

DispatcherOptions dispatch_options_of(const Config& config) {
  DispatcherOptions dispatch_options;
  dispatch_options.redaction = config.redaction;
  dispatch_options.queue_capacity = config.queue_capacity;
  return dispatch_options;
}

}  // namespace

std::vector<std::string> Delivery::problems(const Config& config, const std::string& state_dir) {
  auto problems = validate_server(server_options_of(config));
  for (auto& p : validate_delivery(dispatch_options_of(config), config.sinks, state_dir)) problems.push_back(std::move(p));
  return problems;
}

Result<void> Delivery::start(const Config& config, const std::string& state_dir, std::shared_ptr<Metrics> metrics,
                             const Clock& clock) {
  ServerOptions server_options = server_options_of(config);
  DispatcherOptions dispatch_options = dispatch_options_of(config);
  // Compiled once, shared by the output (pipeline thread) and the dispatcher (io thread): a Redactor is immutable.
  // A pattern that does not compile is reported by validate_delivery below.
  redactor_ = Redactor::create(config.redaction);
  dispatch_options.redactor = redactor_;
  auto problems = validate_server(server_options);
  for (auto& p : validate_delivery(dispatch_options, config.sinks, state_dir)) problems.push_back(std::move(p));
  if (!problems.empty()) {
    // Every problem logged; the step's error is the first.
    for (std::size_t i = 1; i < problems.size(); ++i) spdlog::error("{}", problems[i]);
    return Error{problems.front()};
  }

  parts_ = std::make_unique<Parts>(std::move(metrics), config, state_dir, dispatch_options);
  Parts& p = *parts_;
  // Not ready before the listener answers: until the first look at the sources is done, a line written now could be
  // before a file's starting offset (tail.start_at: end) and never read.
  p.status.set_ready("sources", false, "the first scan of the sources is not done yet");
  auto fail = [&](const Error& why) -> Result<void> {
    p.dispatcher.stop(Duration{0});
    parts_.reset();
    return Error{"cannot start the outputs: " + why.message};
  };
  if (auto opened = p.store.open(); !opened) return fail(opened.error());
  std::string listen_address;
  if (!config.listen.empty()) {
    ApiContext api;
    api.incidents = &p.store;
    api.metrics = p.metrics.get();
    api.version = std::string(faultline_version());
    api.clock = &clock;
    use_status(api, p.status);
    api.fingerprints = [&board = p.fingerprints] { return inventory_json(*board.latest()); };
    p.server = std::make_unique<Server>(server_options, std::move(api), p.io, *p.metrics);
    if (auto started = p.server->start(); !started) return fail(started.error());
    listen_address = p.server->listen_address();
  }
  // Links in alerts point at the API: the configured external URL, else the address bound.
  std::string external = config.server.external_url;
  if (external.empty() && !listen_address.empty()) external = "http://" + listen_address;
  while (!external.empty() && external.back() == '/') external.pop_back();
  WebhookContext context{p.io, *p.metrics, clock, state_dir + "/spool", external, std::string(faultline_version()),
                         &p.store, config.max_incidents};
  for (const auto& cfg : config.sinks) {
    auto sink = make_webhook_sink(cfg, context);
    if (!sink) return fail(sink.error());
    p.dispatcher.add(std::move(*sink));
  }
  if (auto started = p.dispatcher.start(); !started) return fail(started.error());
  p.io.start();
  p.running = true;
  if (!state_dir.empty()) p.status.set_ready("state_writes", true);
  return {};
}

Result<void> Delivery::open_output(const std::string& output, bool text) {
  if (output.empty()) return {};
  if (!redactor_) return Error{"the output opens only after the outputs started: it shares their redaction"};
  if (text && output == "-") {
    text_output_ = true;
    const char* no_colour = std::getenv("NO_COLOR");
    const char* term = std::getenv("TERM");
    text_colour_ = ::isatty(STDOUT_FILENO) != 0 && (no_colour == nullptr || *no_colour == '\0') &&
                   !(term != nullptr && std::string_view(term) == "dumb");
    return {};
  }
  auto sink = std::make_unique<JsonLinesSink>(output, redactor_);
  if (auto opened = sink->open(); !opened) return opened;
  output_ = std::move(sink);
  if (output != "-") output_file_ = output;
  return {};
}

std::optional<std::uint64_t> Delivery::output_file_size() const {
  struct stat st;
  if (output_file_.empty() || ::stat(output_file_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_size);
}

std::size_t Delivery::recover_output(Journal& journal) {
  auto mark = journal.output_mark();
  auto size = output_file_size();
  if (!mark || !size || *size <= *mark) return 0;  // nothing written since, or the file was replaced: nothing to find
  std::ifstream in(output_file_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(*mark));
  std::size_t found = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline: a line cut short, never a whole revision
    auto incident = incident_from_json(line);
    if (!incident || journal.contains(incident->id, incident->revision)) continue;
    (void)journal.record(incident->id, incident->revision);
    ++found;
  }
  if (found > 0)
    spdlog::info("{} revision(s) in {} were written before the last stop but not journalled: they will not be written "
                 "again", found, output_file_);
  return found;
}

void Delivery::emit(const Incident& incident) { batch_.push_back(incident); }

void Delivery::write_text(const Incident& incident) const {
  Incident shown = incident;
  redactor_->apply(shown);  // what the JSON output and the sinks would show
  std::string block = to_text(shown, text_colour_) + "\n";
  std::fwrite(block.data(), 1, block.size(), stdout);
  std::fflush(stdout);
}

void Delivery::commit(Journal& journal) {
  if (batch_.empty() && backlog_ == 0) return;
  bool durable = true;
  if (parts_) {
    auto committed = parts_->dispatcher.deliver(batch_);
    durable = committed.durable;
    backlog_ = committed.backlog;
    state_write(StateWrite::spool, durable ? std::string() : committed.error);
  }
  std::string journal_error;
  for (const auto& incident : batch_) {
    if (output_) (void)output_->deliver(incident);  // a failure is logged once by the sink
    if (text_output_) write_text(incident);
    // Not durable: not journalled either, so a crash before the spool is written again emits it again.
    if (!durable) continue;
    if (auto recorded = journal.record(incident.id, incident.revision); !recorded && journal_error.empty())
      journal_error = recorded.error().message;
  }
  if (durable && journal.enabled()) state_write(StateWrite::journal, journal_error);
  batch_.clear();
}

void Delivery::state_write(StateWrite what, const std::string& error) {
  static constexpr const char* kNames[] = {"checkpoint", "journal", "spool"};
  auto i = static_cast<std::size_t>(what);
  if (!error.empty() && parts_ && what != StateWrite::spool)  // the sinks count their own failed spool writes
    parts_->metrics->state_write_failures(kNames[i]).Increment();
  if (write_errors_[i] == error) return;
  bool was_ok = std::all_of(write_errors_.begin(), write_errors_.end(), [](const auto& e) { return e.empty(); });
  write_errors_[i] = error;
  std::string detail;
  for (std::size_t k = 0; k < write_errors_.size(); ++k) {
    if (write_errors_[k].empty()) continue;
    if (!detail.empty()) detail += "; ";
    detail += std::string(kNames[k]) + ": " + write_errors_[k];
  }
  bool ok = detail.empty();
  if (ok != was_ok) {
    if (ok) spdlog::info("writes to the state dir succeed again");
    else spdlog::error("writes to the state dir fail: {}", detail);
  }
  if (!parts_) return;
  parts_->metrics->state_writable().Set(ok ? 1 : 0);
  parts_->status.set_ready("state_writes", ok, detail);
}

void Delivery::checkpointed() {
  if (output_) output_->sync();
}

bool Delivery::backpressure() const { return parts_ && parts_->dispatcher.backpressure(); }
bool Delivery::wait_for_space(Duration max) { return !parts_ || parts_->dispatcher.wait_for_space(max); }
void Delivery::set_ready(std::string_view component, bool ok) {
  if (parts_) parts_->status.set_ready(component, ok);
}
void Delivery::update_rules(const RuleSet& rules) {
  if (!parts_) return;
  parts_->metrics->declare_rules(rules);
  parts_->status.set_rules(rule_infos(rules));
}
void Delivery::update_activity(ReadingActivity activity) {
  if (parts_) parts_->status.set_activity(std::move(activity));
}

void Delivery::publish_fingerprints(std::vector<FingerprintEntry> inventory) {
  if (!parts_) return;
  // Redacted as incidents are: the examples are log lines.
  for (auto& e : inventory) {
    if (!redactor_) break;
    e.message_template = redactor_->redact(e.message_template);
    for (auto& line : e.example) line = redactor_->redact(line);
  }
  parts_->fingerprints.publish(std::move(inventory));
}
std::string Delivery::listen_address() const {
  return parts_ && parts_->server ? parts_->server->listen_address() : std::string();
}

void Delivery::stop(Duration grace) {
  if (parts_) parts_->stop(grace);
}

}  // namespace faultline::service_detail
