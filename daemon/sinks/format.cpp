// Sink configuration checks, URL parsing, redaction, and the two payload formats (Standard Webhooks signing and
// Alertmanager v2 alerts). No I/O beyond checking that configured files are readable.
#include <re2/re2.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

#include "faultline/rules.hpp"
#include "faultline/sinks.hpp"

namespace faultline {
namespace {

bool valid_sink_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

bool valid_label_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (!(std::isalpha(c) || c == '_' || (i > 0 && std::isdigit(c)))) return false;
  }
  return name.rfind("__", 0) != 0;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// Cuts to at most `max` bytes at a UTF-8 character boundary.
std::string cut_utf8(std::string_view s, std::size_t max) {
  if (s.size() <= max) return std::string(s);
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

std::string rfc3339(std::chrono::system_clock::time_point tp) {
  return format_time(std::chrono::time_point_cast<Duration>(tp));
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

std::optional<ParsedUrl> parse_url(std::string_view url, std::string* error) {
  auto fail = [&](std::string msg) -> std::optional<ParsedUrl> {
    if (error) *error = "invalid URL '" + std::string(url) + "': " + msg;
    return std::nullopt;
  };
  ParsedUrl out;
  auto sep = url.find("://");
  if (sep == std::string_view::npos) return fail("expected http:// or https://");
  out.scheme = std::string(url.substr(0, sep));
  std::transform(out.scheme.begin(), out.scheme.end(), out.scheme.begin(), ::tolower);
  if (out.scheme != "http" && out.scheme != "https") return fail("scheme must be http or https");
  auto rest = url.substr(sep + 3);
  auto path_at = rest.find_first_of("/?#");
  auto authority = rest.substr(0, path_at);
  out.target = path_at == std::string_view::npos ? "/" : std::string(rest.substr(path_at));
  if (auto hash = out.target.find('#'); hash != std::string::npos) out.target.resize(hash);
  if (out.target.empty() || out.target[0] == '?') out.target.insert(0, "/");
  if (authority.find('@') != std::string_view::npos)
    return fail("credentials in the URL are not supported; use bearer_token_file or headers");
  std::string_view port_text;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return fail("unterminated [ in host");
    out.host = std::string(authority.substr(1, close - 1));
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return fail("unexpected text after ]");
      port_text = after.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      out.host = std::string(authority.substr(0, colon));
      port_text = authority.substr(colon + 1);
    } else {
      out.host = std::string(authority);
    }
  }
  if (out.host.empty()) return fail("empty host");
  if (!port_text.empty()) {
    unsigned p = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), p);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || p == 0 || p > 65535)
      return fail("bad port");
    out.port = static_cast<std::uint16_t>(p);
  } else {
    out.port = out.scheme == "https" ? 443 : 80;
  }
  return out;
}

std::vector<std::string> validate_sink(const SinkConfig& sink) {
  std::vector<std::string> errors;
  auto where = "sink '" + sink.name + "': ";
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
      errors.push_back(where + what + " '" + file + "' is not readable");
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
      errors.push_back(where + "bad header '" + k + "'");
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

// ---------------------------------------------------------------------------------------------------------------

std::string base64_encode(std::string_view in) {
  static constexpr char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    std::uint32_t v = (std::uint8_t(in[i]) << 16) | (std::uint8_t(in[i + 1]) << 8) | std::uint8_t(in[i + 2]);
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += tbl[v & 63];
  }
  if (i + 1 == in.size()) {
    std::uint32_t v = std::uint8_t(in[i]) << 16;
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    std::uint32_t v = (std::uint8_t(in[i]) << 16) | (std::uint8_t(in[i + 1]) << 8);
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = val(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (bits >= 6) return std::nullopt;  // a lone trailing character
  return out;
}

std::string decode_webhook_secret(std::string_view secret) {
  auto s = trim(secret);
  if (s.rfind("whsec_", 0) == 0) {
    if (auto key = base64_decode(std::string_view(s).substr(6))) return *key;
  }
  return s;
}

std::string standard_webhooks_signature(std::string_view key, std::string_view id, std::int64_t timestamp,
                                        std::string_view body) {
  std::string message;
  message.reserve(id.size() + body.size() + 24);
  message.append(id).append(".").append(std::to_string(timestamp)).append(".").append(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &len);
  return "v1," + base64_encode(std::string_view(reinterpret_cast<const char*>(mac), len));
}

// ---------------------------------------------------------------------------------------------------------------

struct Redactor::Impl {
  std::vector<std::unique_ptr<RE2>> patterns;
  RedactionOptions options;
};

namespace {
const char* const kDefaultRedactions[] = {
    R"((?i)\bbearer\s+([A-Za-z0-9\-._~+/]{6,}=*))",
    R"(\b(sk-[A-Za-z0-9_\-]{16,}))",
    R"(\b(hf_[A-Za-z0-9]{16,}))",
    R"(\b(gh[pousr]_[A-Za-z0-9]{20,}))",
    R"(\b(AKIA[0-9A-Z]{16})\b)",
    R"([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:([^\s@/]+)@)",
    R"((?i)\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret|password|passwd)["']?\s*[:=]\s*["']?([^\s"',;&}]+))",
};
}  // namespace

Redactor::Redactor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Redactor::~Redactor() = default;

std::unique_ptr<Redactor> Redactor::create(const RedactionOptions& options, std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  RE2::Options ro;
  ro.set_log_errors(false);
  auto add = [&](const std::string& p) -> bool {
    auto re = std::make_unique<RE2>(p, ro);
    if (!re->ok()) {
      if (error) *error = "redaction pattern '" + p + "': " + re->error();
      return false;
    }
    impl->patterns.push_back(std::move(re));
    return true;
  };
  if (options.defaults)
    for (const char* p : kDefaultRedactions)
      if (!add(p)) return nullptr;
  for (const auto& p : options.patterns)
    if (!add(p)) return nullptr;
  return std::unique_ptr<Redactor>(new Redactor(std::move(impl)));
}

std::string Redactor::redact(std::string_view text) const {
  std::string current(text);
  for (const auto& re : impl_->patterns) {
    int ngroups = std::min(re->NumberOfCapturingGroups() + 1, 2);
    re2::StringPiece input(current);
    re2::StringPiece groups[2];
    std::string out;
    std::size_t pos = 0;
    bool changed = false;
    while (pos <= current.size() &&
           re->Match(input, pos, current.size(), RE2::UNANCHORED, groups, ngroups)) {
      re2::StringPiece whole = groups[0];
      re2::StringPiece secret = (ngroups == 2 && groups[1].data() != nullptr) ? groups[1] : groups[0];
      std::size_t wb = static_cast<std::size_t>(whole.data() - current.data());
      std::size_t we = wb + whole.size();
      std::size_t sb = static_cast<std::size_t>(secret.data() - current.data());
      std::size_t se = sb + secret.size();
      out.append(current, pos, sb - pos);
      if (secret.size() > 0) {
        out += "[REDACTED]";
        changed = true;
      }
      out.append(current, se, we - se);
      if (whole.empty()) {
        if (we < current.size()) out += current[we];
        pos = we + 1;
      } else {
        pos = we;
      }
    }
    if (!changed) continue;
    if (pos < current.size()) out.append(current, pos, std::string::npos);
    current = std::move(out);
  }
  return current;
}

void Redactor::apply(Incident& incident) const {
  const auto& o = impl_->options;
  if (incident.evidence.size() > o.max_evidence_lines) {
    // Keep the first lines (how it started) and the last ones (the decisive end), drop the middle.
    std::size_t head = o.max_evidence_lines / 2;
    std::size_t tail = o.max_evidence_lines - head;
    std::vector<EvidenceLine> kept(incident.evidence.begin(), incident.evidence.begin() + head);
    kept.insert(kept.end(), incident.evidence.end() - tail, incident.evidence.end());
    incident.evidence = std::move(kept);
  }
  for (auto& line : incident.evidence) {
    line.text = redact(line.text);
    if (line.text.size() > o.max_line_bytes) {
      line.text = cut_utf8(line.text, o.max_line_bytes);
      line.truncated = true;
    }
  }
  incident.title = redact(incident.title);
  incident.summary = redact(incident.summary);
  incident.remediation = redact(incident.remediation);
  for (auto& [k, v] : incident.fields) v = redact(v);
}

// ---------------------------------------------------------------------------------------------------------------

std::string alertname_for_rule(std::string_view rule) {
  std::string out = "Faultline";
  bool upper = true;
  for (char c : rule) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += upper ? static_cast<char>(std::toupper(u)) : c;
      upper = false;
    } else {
      upper = true;
    }
  }
  return out;
}

std::string alertmanager_alert(const Incident& incident, const AlertmanagerContext& context,
                               std::chrono::system_clock::time_point now,
                               std::optional<std::chrono::system_clock::time_point> resolved_at) {
  nlohmann::ordered_json labels = nlohmann::ordered_json::object();
  labels["alertname"] = alertname_for_rule(incident.rule);
  labels["rule"] = incident.rule;
  labels["severity"] = std::string(to_string(incident.severity));
  labels["incident_id"] = incident.id;
  for (LabelKey key : {LabelKey::namespace_, LabelKey::pod, LabelKey::container, LabelKey::node}) {
    std::string name(label_name(key));
    if (const auto* v = find_field(incident.stream_labels, name); v && !v->empty()) labels[name] = sanitize_utf8(*v);
  }
  for (const auto& [k, v] : incident.labels) {
    if (valid_label_name(k) && !labels.contains(k) && !v.empty()) labels[k] = sanitize_utf8(v);
  }

  nlohmann::ordered_json ann = nlohmann::ordered_json::object();
  ann["summary"] = sanitize_utf8(incident.summary.empty() ? incident.title : incident.summary);
  ann["title"] = sanitize_utf8(incident.title);
  std::string evidence;
  std::size_t shown = 0;
  for (const auto& line : incident.evidence) {
    if (shown == 12 || evidence.size() > 4096) break;
    evidence += cut_utf8(line.text, 400);
    evidence += '\n';
    ++shown;
  }
  if (!evidence.empty()) {
    evidence.pop_back();
    ann["evidence"] = sanitize_utf8(evidence);
  }
  if (!incident.remediation.empty()) ann["remediation"] = sanitize_utf8(incident.remediation);
  if (!incident.references.empty()) ann["runbook_url"] = sanitize_utf8(incident.references.front());
  if (!incident.stream.empty()) ann["stream"] = sanitize_utf8(incident.stream);
  ann["count"] = std::to_string(incident.count);
  ann["revision"] = std::to_string(incident.revision);
  if (incident.caused_by) ann["caused_by"] = *incident.caused_by + " (" + incident.caused_by_rule + ")";

  std::string base = context.external_url;
  while (!base.empty() && base.back() == '/') base.pop_back();

  nlohmann::ordered_json alert;
  alert["labels"] = std::move(labels);
  alert["annotations"] = std::move(ann);
  alert["startsAt"] = format_time(incident.first_seen);
  if (incident.status == IncidentStatus::resolved) {
    alert["endsAt"] = rfc3339(resolved_at.value_or(now));
  } else {
    auto ends = now + 4 * std::chrono::duration_cast<std::chrono::system_clock::duration>(context.resend_interval);
    alert["endsAt"] = rfc3339(ends);
  }
  if (!base.empty()) alert["generatorURL"] = base + "/api/v1/incidents/" + incident.id;
  return alert.dump();
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
