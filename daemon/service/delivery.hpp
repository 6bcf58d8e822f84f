// Delivery: where an incident revision goes once the service has decided to emit it — the dispatcher (incident store
// and API, webhooks, Alertmanager: durable in every spool first) with the HTTP server, all on one io thread, then the
// JSON-lines output (standard output or a file, written on the pipeline thread), then the journal. The one
// place in the service that wires the sinks and server rooms. Internal to the service room. Called from the
// pipeline thread; the server and the sinks run on the io thread.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "faultline/clock.hpp"
#include "faultline/incident.hpp"
#include "faultline/metrics.hpp"
#include "faultline/result.hpp"
#include "faultline/server.hpp"
#include "faultline/types.hpp"
#include "journal.hpp"

namespace faultline {
struct Config;
struct FingerprintEntry;
struct RuleSet;
class JsonLinesSink;
class Redactor;
}  // namespace faultline

namespace faultline::service_detail {

class Delivery {
 public:
  Delivery();
  ~Delivery();  // stops everything without grace if stop() was not called
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;

  // The problems start() would refuse in the server's and the sinks' options (listen address, token file, sinks,
  // redaction patterns), found without opening or binding anything.
  static std::vector<std::string> problems(const Config& config, const std::string& state_dir);
  // Validates the server's and the sinks' options, opens the incident store, binds the listener, opens the spools
  // and starts the io thread. `state_dir` empty: nothing persisted. Everything counts into `metrics`, which the
  // server serves on /metrics.
  Result<void> start(const Config& config, const std::string& state_dir, std::shared_ptr<Metrics> metrics,
                     const Clock& clock);
  // The JSON-lines output: "-" standard output, "" none, else a file (appended). After start(): the output is
  // redacted with the dispatcher's Redactor.
  // `text`: standard output gets the text block of each revision (to_text, coloured unless NO_COLOR is set), as
  // `scan` prints it, instead of its JSON line.
  Result<void> open_output(const std::string& output, bool text = false);

  // The output file's size now; none when the output is not a file (standard output, none).
  std::optional<std::uint64_t> output_file_size() const;
  // After a crash: the revisions the output file holds past the journal's mark (written, the crash came before they
  // were journalled) are journalled now, so they are not written twice. Returns how many were found.
  std::size_t recover_output(Journal& journal);

  // One revision to emit, held until commit().
  void emit(const Incident& incident);
  // The revisions emitted since the last commit: first durable in every sink's spool (one write and one fsync per
  // sink for all of them), then each written to the output and recorded in `journal` — only once durable, so that
  // a crash before that emits them again at the next start. A spool that cannot be written keeps them in memory and
  // the next commit writes them again (reading pauses while too many wait: backpressure()).
  void commit(Journal& journal);
  // Every revision emitted is durable in the spools: a checkpoint may say that they cannot come again.
  bool durable() const { return batch_.empty() && backlog_ == 0; }
  std::size_t backlog() const { return backlog_; }
  // After a durable checkpoint: what the output file holds is made durable too.
  void checkpointed();

  // The outcome of a write to the state dir: counted (faultline_state_write_failures_total), and while any kind's
  // last write failed, faultline_state_writable is 0 and /readyz answers 503 naming it ("state_writes").
  enum class StateWrite : std::uint8_t { checkpoint, journal, spool };
  void state_write(StateWrite what, const std::string& error);  // error empty: it succeeded

  bool backpressure() const;
  bool wait_for_space(Duration max);
  void set_ready(std::string_view component, bool ok);
  void update_rules(const RuleSet& rules);
  // What the page's header shows: files followed, lines read, event matches by rule.
  void update_activity(ReadingActivity activity);
  // The detector's inventory, as GET /api/v1/fingerprints serves it from now on (redacted here).
  void publish_fingerprints(std::vector<FingerprintEntry> inventory);
  std::string listen_address() const;

  // Stops the server, lets the sinks deliver until `grace` passes, stops the io thread.
  void stop(Duration grace);

 private:
  void write_text(const Incident& incident) const;

  struct Parts;
  std::unique_ptr<Parts> parts_;
  std::shared_ptr<const Redactor> redactor_;
  std::unique_ptr<JsonLinesSink> output_;
  std::string output_file_;  // the output's path when it is a file
  bool text_output_ = false;  // revisions as text blocks on standard output (a terminal)
  bool text_colour_ = false;
  std::vector<Incident> batch_;
  std::size_t backlog_ = 0;
  std::array<std::string, 3> write_errors_;  // per StateWrite: the last failure, empty when the last write succeeded
};

}  // namespace faultline::service_detail
