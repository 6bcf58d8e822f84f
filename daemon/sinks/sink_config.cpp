// Sink configuration: formats, validation (every problem, one message each), --webhook/--alertmanager sinks, and the
// filter that says which revisions a sink takes.
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "faultline/sinks.hpp"

namespace faultline {
namespace {

bool valid_sink_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

}  // namespace

std::string_view to_string(WebhookFormat format) {
  return format == WebhookFormat::alertmanager ? "alertmanager" : "json";
}

std::optional<WebhookFormat> parse_webhook_format(std::string_view text) {
  if (text == "json") return WebhookFormat::json;
  if (text == "alertmanager") return WebhookFormat::alertmanager;
  return std::nullopt;
}

std::vector<std::string> validate_sink(const SinkConfig& sink) {
  std::vector<std::string> errors;
  auto where = "sink '" + excerpt(sink.name) + "': ";
  if (!valid_sink_name(sink.name)) errors.push_back(where + "name must be 1-64 characters of [A-Za-z0-9_.-]");
  std::string err;
  auto url = parse_url(sink.url, &err);
  if (!url) errors.push_back(where + err);
  if (sink.timeout <= Duration::zero()) errors.push_back(where + "timeout must be positive");
  if (sink.resend_interval < std::chrono::seconds(1)) errors.push_back(where + "resend_interval must be at least 1s");
  if (sink.backoff_initial <= Duration::zero() || sink.backoff_max < sink.backoff_initial)
    errors.push_back(where + "backoff must be positive and backoff_max >= backoff_initial");
  if (sink.spool_max_bytes < 4096) errors.push_back(where + "spool_max_bytes must be at least 4096");
  if (sink.spool_max_age <= Duration::zero()) errors.push_back(where + "spool_max_age must be positive");
  auto readable = [&](const std::string& file, const char* what) {
    if (!file.empty() && ::access(file.c_str(), R_OK) != 0)
      errors.push_back(where + what + " '" + excerpt(file) + "' is not readable");
  };
  readable(sink.bearer_token_file, "bearer_token_file");
  readable(sink.hmac_secret_file, "hmac_secret_file");
  readable(sink.tls.ca_file, "tls.ca_file");
  readable(sink.tls.client_cert_file, "tls.cert_file");
  readable(sink.tls.client_key_file, "tls.key_file");
  if (sink.tls.client_cert_file.empty() != sink.tls.client_key_file.empty())
    errors.push_back(where + "tls.cert_file and tls.key_file go together");
  if (url && url->scheme != "https" && (!sink.tls.ca_file.empty() || !sink.tls.client_cert_file.empty()))
    errors.push_back(where + "tls options given for an http:// URL");
  for (const auto& [k, v] : sink.headers) {
    if (k.empty() || k.find_first_of(" \t\r\n:") != std::string::npos || v.find_first_of("\r\n") != std::string::npos)
      errors.push_back(where + "bad header '" + excerpt(k) + "'");
  }
  return errors;
}

std::optional<SinkConfig> sink_from_url(std::string_view url, WebhookFormat format, std::string_view name,
                                        std::string* error) {
  if (!parse_url(url, error)) return std::nullopt;
  SinkConfig sink;
  sink.name = name.empty() ? std::string(to_string(format) == "json" ? "webhook" : "alertmanager") : std::string(name);
  sink.url = std::string(url);
  sink.format = format;
  return sink;
}

bool sink_accepts(const SinkConfig& sink, const Incident& incident, bool sent_before) {
  if (incident.status == IncidentStatus::resolved && !sink.send_resolved) return false;
  if (sent_before) return true;
  if (!sink.rules.empty() && std::find(sink.rules.begin(), sink.rules.end(), incident.rule) == sink.rules.end())
    return false;
  if (incident.severity < sink.min_severity) return false;
  if (incident.caused_by && !sink.send_caused_by) return false;
  return true;
}

}  // namespace faultline
