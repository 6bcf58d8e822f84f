// server: the HTTP face of the daemon — /metrics, /healthz, /readyz, /api/v1/incidents[/<id>], /api/v1/rules,
// /api/v1/status, /api/v1/fingerprints, the live stream /api/v1/events and the on-call page at / (its HTML, CSS and
// JS are compiled into the binary). The routing and rendering are plain functions over plain values (handle_request,
// no Boost); `Server` runs the Beast listener that feeds them on the daemon's io thread (io_thread.hpp). The server
// reads incidents through an IncidentView and the daemon's readiness, rules and reading activity through a
// ServerStatus; it knows nothing of the sinks. handle_request runs on the io thread (the view belongs to it);
// ServerStatus is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultline/incident_view.hpp"
#include "faultline/result.hpp"
#include "faultline/types.hpp"

namespace faultline {

class Clock;
class IoThread;
class Metrics;
struct RuleSet;

struct ServerOptions {
  // host:port to listen on ("127.0.0.1:9464", "[::1]:9464", "0.0.0.0:9464"); port 0 picks a free port; empty: no
  // server at all.
  std::string listen = "127.0.0.1:9464";
  // When set, the token in this file (whitespace trimmed) is required by the incident API (/api/*): as
  // `Authorization: Bearer <token>`, or the session cookie a browser gets by posting the token to /login (the page
  // shows the form). The page's own files hold no data and, like /metrics, /healthz and /readyz, stay open.
  std::string api_token_file;
  // Connections held at once, in all and from one client address. A new connection beyond either bound sheds the
  // connection that has waited longest (for its header, its body or its next keep-alive request) — of the same client
  // for the per-client bound; one is refused only when every held connection is writing a response. So slow and idle
  // clients cannot keep out a probe or a scrape: a request that arrives whole is the newest and is read at once.
  std::size_t max_connections = 256;
  std::size_t max_connections_per_client = 32;
  Duration header_timeout = std::chrono::seconds(2);    // from the connection (or the first byte) to the header's end
  Duration request_timeout = std::chrono::seconds(10);  // to read the body and, then, to write the response
  Duration idle_timeout = std::chrono::seconds(30);     // a keep-alive connection waiting for its next request
  std::size_t max_request_bytes = 16 * 1024;          // header + body of one request
};

// "host:port" → (host, port). Accepts [v6]:port. Returns nullopt and sets `error` when malformed.
std::optional<std::pair<std::string, std::uint16_t>> parse_listen_address(std::string_view text,
                                                                          std::string* error = nullptr);

struct HttpRequest {
  std::string method;         // "GET", "HEAD", "POST", ...
  std::string target;         // path and query, as sent
  std::string authorization;  // the Authorization header, if any
  std::string cookie;         // the Cookie header, if any
  std::string origin;         // the Origin header, if any (browsers send it with every POST)
  std::string host;           // the Host header
  std::string fetch_site;     // Sec-Fetch-Site, if any ("same-origin", "cross-site", ...)
  std::string forwarded_proto;  // X-Forwarded-Proto, if any: "https" behind a TLS proxy
  std::string content_type;
  std::string body;
};

// A response that stays open as Server-Sent Events (text/event-stream): after the header the listener calls next()
// every `interval` and sends what it returns (nothing when it returns ""), until `max_duration` passes (browsers
// reconnect by themselves), the client goes away or the server closes. next() runs on the io thread.
struct EventStream {
  std::function<std::string()> next;
  Duration interval = std::chrono::milliseconds(500);
  Duration max_duration = std::chrono::minutes(5);
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;  // with a stream: sent first, right after the header
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<EventStream> stream;  // set: an event stream, not a plain response
};

struct RuleInfo {
  std::string id;
  std::string title;
  Severity severity = Severity::warning;
  std::string content_hash;
  std::string summary;  // the rule's summary template ({field|default} placeholders as written)
  std::vector<std::string> references;
};

// What the pipeline has been reading, for the page's "reading N files, last line M s ago". Published by the daemon
// at every tick.
struct ReadingActivity {
  std::uint64_t files = 0;        // files followed now
  std::uint64_t lines_read = 0;   // since start
  std::optional<Time> last_line;  // when a line was last read (wall clock); unset: none yet
  std::vector<std::pair<std::string, std::uint64_t>> rule_matches;  // event matches since start, by rule id
};

struct ReadinessItem {
  std::string component;  // "rules", "sources", "state_dir", ...
  bool ok = false;
  std::string detail;
};

// The rules of a rule set as the API lists them.
std::vector<RuleInfo> rule_infos(const RuleSet& rules);

// What the daemon tells the server about itself: readiness per component ("rules", "sources") and the running
// rules. Thread-safe: the pipeline thread sets, the io thread reads. With a state dir, readiness() also reports
// whether it is writable (checked at each call).
class ServerStatus {
 public:
  explicit ServerStatus(std::string state_dir = {}) : state_dir_(std::move(state_dir)) {}
  void set_ready(std::string_view component, bool ok, std::string detail = {});
  void set_rules(std::vector<RuleInfo> rules);
  void set_activity(ReadingActivity activity);
  std::vector<ReadinessItem> readiness() const;
  std::vector<RuleInfo> rules() const;
  ReadingActivity activity() const;

 private:
  std::string state_dir_;
  mutable std::mutex mutex_;
  std::vector<ReadinessItem> ready_;  // in order of first report
  std::vector<RuleInfo> rules_;
  ReadingActivity activity_;
};

// What the API reads. All pointers and callbacks are used on the io thread only.
struct ApiContext {
  const IncidentView* incidents = nullptr;
  Metrics* metrics = nullptr;
  std::function<std::vector<ReadinessItem>()> readiness;
  std::function<std::vector<RuleInfo>()> rules;
  std::function<ReadingActivity()> activity;
  std::function<std::string()> fingerprints;  // the body of /api/v1/fingerprints (fingerprint.hpp, inventory_json)
  std::string api_token;     // empty: the API is open
  std::string external_url;  // base for links on the page
  std::string version;
  const Clock* clock = nullptr;  // "now" for ?since=<duration> and sessions; nullptr: the system clock
};

// Readiness, rules and activity of `status`, read through the context's callbacks. `status` must outlive the context.
void use_status(ApiContext& context, const ServerStatus& status);

// Routes one request. The handler name used in metrics is returned through `handler` (fixed set of words).
HttpResponse handle_request(const HttpRequest& request, const ApiContext& context, std::string* handler = nullptr);

// Query string helpers, exposed for tests: percent-decoding and key=value splitting.
std::string url_decode(std::string_view text);
std::vector<std::pair<std::string, std::string>> parse_query(std::string_view query);

// Every problem with the options (listen address, token file), one message each.
std::vector<std::string> validate_server(const ServerOptions& options);

// The HTTP server on the daemon's io thread: binds at start(), serves until stop(). The io thread, the metrics and
// what the context points at must outlive it.
class Server {
 public:
  Server(ServerOptions options, ApiContext context, IoThread& io, Metrics& metrics);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Reads the API token file, binds the listener and starts accepting (before or after the io thread starts).
  Result<void> start();
  // The address actually bound, "host:port" (after start).
  std::string listen_address() const;
  // Stops accepting and closes every connection; no request is handled after it returns.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
