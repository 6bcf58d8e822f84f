// sink_config: how a sink and the redaction of evidence are configured — the plain values the config loader fills
// from YAML (`sinks:`, `redaction:`) and the sinks room acts on (sinks.hpp). Apart from sinks.hpp so that reading the
// config does not compile the sinks' HTTP and metrics machinery. Plain values; validate_sink is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultline/incident.hpp"
#include "faultline/net.hpp"
#include "faultline/types.hpp"

namespace faultline {

// Sink configuration (filled by the config loader from YAML `sinks:` or by sink_from_url for --webhook/--alertmanager)

enum class WebhookFormat : std::uint8_t { json, alertmanager };
std::string_view to_string(WebhookFormat format);
std::optional<WebhookFormat> parse_webhook_format(std::string_view text);  // "json" | "alertmanager"


struct SinkConfig {
  std::string name;  // [A-Za-z0-9_.-]{1,64}; the `sink` label and the spool directory name
  std::string url;   // http:// or https://; for alertmanager the base URL (/api/v2/alerts is appended unless present)
  WebhookFormat format = WebhookFormat::json;
  std::vector<std::pair<std::string, std::string>> headers;  // extra request headers
  Duration timeout = std::chrono::seconds(10);               // for one whole attempt: resolve, connect, TLS, send, read
  Severity min_severity = Severity::info;
  std::vector<std::string> rules;        // only these rule ids; empty: every rule
  bool send_caused_by = false;           // also send incidents explained by a root cause (caused_by set)
  bool send_resolved = true;             // send the resolving revision
  std::string bearer_token_file;         // `Authorization: Bearer <file content>`; re-read at every attempt
  std::string hmac_secret_file;          // json: Standard Webhooks secret, "whsec_<base64>" (raw bytes otherwise)
  TlsOptions tls;
  Duration resend_interval = std::chrono::minutes(1);  // alertmanager: re-post firing alerts this often
  // Spool bounds: beyond max_bytes the oldest pending deliveries are dropped; older than max_age likewise.
  std::uint64_t spool_max_bytes = 64ull << 20;
  Duration spool_max_age = std::chrono::hours(24);
  // Retry backoff: initial * 2^n, capped, with ±20% jitter.
  Duration backoff_initial = std::chrono::seconds(1);
  Duration backoff_max = std::chrono::minutes(5);
};

// Every problem with a sink, one message each (empty: valid). Files are checked for readability.
std::vector<std::string> validate_sink(const SinkConfig& sink);

// Redaction and caps, applied once to every incident before it is stored, served or sent.
struct RedactionOptions {
  bool defaults = true;                 // mask bearer tokens, sk-/hf_/ghp_/AKIA keys, key=value secrets, URL passwords
  std::vector<std::string> patterns;    // more RE2 patterns: group 1 (or the whole match) becomes [REDACTED]
  std::size_t max_evidence_lines = kMaxEvidenceLines;
  std::size_t max_line_bytes = kMaxEvidenceText;
};

}  // namespace faultline
