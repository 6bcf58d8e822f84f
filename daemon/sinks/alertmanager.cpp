// Alertmanager v2: alert objects (labels, annotations, startsAt/endsAt, generatorURL), the alerts endpoint, and the
// payload of an Alertmanager sink — one alert per spooled delivery, and while nothing is pending, every firing
// incident again each resend interval so Alertmanager does not let them expire.
#include <cctype>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "faultline/sinks.hpp"
#include "sinks_internal.hpp"

namespace faultline {
namespace {

using sinks_detail::cut_utf8;
using SysTime = std::chrono::system_clock::time_point;

bool valid_label_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (!(std::isalpha(c) || c == '_' || (i > 0 && std::isdigit(c)))) return false;
  }
  return name.rfind("__", 0) != 0;
}

std::string rfc3339(SysTime tp) { return format_time(std::chrono::time_point_cast<Duration>(tp)); }

SysTime sys(Time t) { return std::chrono::time_point_cast<SysTime::duration>(t); }

std::string trim_text(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return std::string(s);
}

// A reference that is an issue, pull request or discussion thread is background, not something to follow at 3 a.m.:
// the runbook is the first reference that is none of those.
std::optional<std::string> runbook_of(const std::vector<std::string>& references) {
  for (const auto& r : references) {
    bool thread = r.find("/issues/") != std::string::npos || r.find("/pull/") != std::string::npos ||
                  r.find("/discussions/") != std::string::npos;
    if (!thread) return r;
  }
  return std::nullopt;
}

// The lines that matched the rule's events (the decisive ones), bounded: at most kEvidenceLines lines of at most
// kEvidenceLineBytes each. With more hits than that, the first ones and the last ones, and a line saying how many
// were left out between them. An incident without hits (a failure story no rule claims) shows its last lines, where
// the story ends in its error.
constexpr std::size_t kEvidenceLines = 5;
constexpr std::size_t kEvidenceLineBytes = 300;

std::string decisive_evidence(const Incident& incident) {
  std::vector<const EvidenceLine*> hits;
  for (const auto& line : incident.evidence) {
    if (!line.event.empty()) hits.push_back(&line);
  }
  if (hits.empty()) {
    std::size_t from = incident.evidence.size() > kEvidenceLines ? incident.evidence.size() - kEvidenceLines : 0;
    for (std::size_t i = from; i < incident.evidence.size(); ++i) hits.push_back(&incident.evidence[i]);
  }
  auto shown = [](const EvidenceLine& line) {
    std::string text = cut_utf8(line.text, kEvidenceLineBytes);
    if (text.size() < line.text.size() || line.truncated) text += "…";
    return text;
  };
  std::vector<std::string> lines;
  if (hits.size() <= kEvidenceLines) {
    for (const auto* h : hits) lines.push_back(shown(*h));
  } else {
    const std::size_t head = (kEvidenceLines - 1) / 2, tail = kEvidenceLines - 1 - head;
    for (std::size_t i = 0; i < head; ++i) lines.push_back(shown(*hits[i]));
    lines.push_back("[" + std::to_string(hits.size() - head - tail) + " more matching lines]");
    for (std::size_t i = hits.size() - tail; i < hits.size(); ++i) lines.push_back(shown(*hits[i]));
  }
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

class AlertmanagerPayload final : public sinks_detail::Payload {
 public:
  AlertmanagerPayload(const SinkConfig& config, std::string external_url, const IncidentView* incidents)
      : name_(config.name), context_{std::move(external_url), config.resend_interval}, incidents_(incidents) {}

  std::string target(std::string url_target) const override { return alertmanager_alerts_target(url_target); }

  std::optional<sinks_detail::Delivery> render(const SpoolEntry& entry, std::string body, Time now) override {
    auto inc = incident_from_json(body);
    if (!inc) return std::nullopt;
    // A resolved alert ends when its revision was first spooled, not when it finally got through.
    auto resolved_at = SysTime(std::chrono::milliseconds(entry.created_ms));
    return sinks_detail::Delivery{"[" + alertmanager_alert(*inc, context_, sys(now), resolved_at) + "]", {}, 1};
  }

  Duration refresh_interval() const override { return context_.resend_interval; }

  std::optional<sinks_detail::Delivery> refresh(Time now,
                                                const std::function<bool(const Incident&)>& taken) override {
    if (!incidents_) return std::nullopt;
    std::string payload = "[";
    std::size_t n = 0;
    for (const auto* s : incidents_->firing()) {
      const auto incident = s->incident();
      if (!incident || !taken(*incident)) continue;
      if (n++) payload += ',';
      payload += alertmanager_alert(*incident, context_, sys(now));
    }
    payload += "]";
    if (n == 0) return std::nullopt;
    return sinks_detail::Delivery{std::move(payload), {}, n};
  }

 private:
  std::string name_;
  AlertmanagerContext context_;
  const IncidentView* incidents_;
};

}  // namespace

std::string alertmanager_alerts_target(std::string_view target) {
  auto q = target.find('?');
  std::string path(target.substr(0, q));
  std::string query = q == std::string_view::npos ? "" : std::string(target.substr(q));
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.size() < 14 || path.compare(path.size() - 14, 14, "/api/v2/alerts") != 0)
    path = (path == "/" ? "" : path) + "/api/v2/alerts";
  return path + query;
}

namespace sinks_detail {

std::unique_ptr<Payload> make_alertmanager_payload(const SinkConfig& config, std::string external_url,
                                                   const IncidentView* incidents) {
  return std::make_unique<AlertmanagerPayload>(config, std::move(external_url), incidents);
}

}  // namespace sinks_detail

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

  // The usual shape (Prometheus alerting rules, stock Slack/PagerDuty templates): `summary` is the headline,
  // `description` the body, `runbook_url` a link to follow. The decisive lines come in `evidence` (docs/webhooks.md).
  nlohmann::ordered_json ann = nlohmann::ordered_json::object();
  ann["summary"] = sanitize_utf8(incident.title.empty() ? incident.rule : incident.title);
  if (!incident.summary.empty()) ann["description"] = sanitize_utf8(trim_text(incident.summary));
  if (auto evidence = decisive_evidence(incident); !evidence.empty()) ann["evidence"] = sanitize_utf8(evidence);
  if (!incident.remediation.empty()) ann["remediation"] = sanitize_utf8(trim_text(incident.remediation));
  if (auto runbook = runbook_of(incident.references)) ann["runbook_url"] = sanitize_utf8(*runbook);
  if (!incident.references.empty()) {
    std::string refs;
    for (const auto& r : incident.references) refs += (refs.empty() ? "" : "\n") + r;
    ann["references"] = sanitize_utf8(refs);
  }
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

}  // namespace faultline
