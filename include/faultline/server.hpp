// server: the HTTP face of the daemon — /metrics, /healthz, /readyz, /api/v1/incidents[/<id>], /api/v1/rules and a
// small incident page at /. The routing and rendering here are plain functions over plain values (no Boost); the
// Beast listener that feeds them runs on the outputs' io_context thread (daemon/server/http_server.cpp) and is
// started by faultline::Outputs (sinks.hpp). handle_request must be called on that thread (it reads the incident
// store, which belongs to it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultline/types.hpp"

namespace faultline {

class Metrics;
class IncidentStore;

struct ServerOptions {
  // host:port to listen on ("127.0.0.1:9464", "[::1]:9464", "0.0.0.0:9464"); port 0 picks a free port; empty: no
  // server at all.
  std::string listen = "127.0.0.1:9464";
  // When set, the token in this file (whitespace trimmed) is required as `Authorization: Bearer <token>` by the
  // incident API and the page (/, /api/*). /metrics, /healthz and /readyz stay open.
  std::string api_token_file;
  std::size_t max_connections = 64;                   // more are accepted and closed at once (503)
  Duration request_timeout = std::chrono::seconds(10);  // to read one request and to write its response
  Duration idle_timeout = std::chrono::seconds(30);     // a keep-alive connection waiting for its next request
  std::size_t max_request_bytes = 16 * 1024;          // header + body of one request
};

// "host:port" → (host, port). Accepts [v6]:port. Returns nullopt and sets `error` when malformed.
std::optional<std::pair<std::string, std::uint16_t>> parse_listen_address(std::string_view text,
                                                                          std::string* error = nullptr);

struct HttpRequest {
  std::string method;         // "GET", "HEAD", ...
  std::string target;         // path and query, as sent
  std::string authorization;  // the Authorization header, if any
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct RuleInfo {
  std::string id;
  std::string title;
  Severity severity = Severity::warning;
  std::string content_hash;
};

struct ReadinessItem {
  std::string component;  // "rules", "sources", "state_dir", ...
  bool ok = false;
  std::string detail;
};

// What the API reads. All pointers and callbacks are used on the io thread only.
struct ApiContext {
  const IncidentStore* store = nullptr;
  Metrics* metrics = nullptr;
  std::function<std::vector<ReadinessItem>()> readiness;
  std::function<std::vector<RuleInfo>()> rules;
  std::string api_token;     // empty: the API is open
  std::string external_url;  // base for links on the page
  std::string version;
};

// Routes one request. The handler name used in metrics is returned through `handler` (fixed set of words).
HttpResponse handle_request(const HttpRequest& request, const ApiContext& context, std::string* handler = nullptr);

// Query string helpers, exposed for tests: percent-decoding and key=value splitting.
std::string url_decode(std::string_view text);
std::vector<std::pair<std::string, std::string>> parse_query(std::string_view query);

}  // namespace faultline
