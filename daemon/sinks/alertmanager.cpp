// Alertmanager v2: alert objects (labels, annotations, startsAt/endsAt, generatorURL), the alerts endpoint, and the
// payload of an Alertmanager sink — one alert per spooled delivery, and while nothing is pending, every firing
// incident again each resend interval so Alertmanager does not let them expire.
#include <cctype>
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
      if (!taken(s->incident)) continue;
      if (n++) payload += ',';
      payload += alertmanager_alert(s->incident, context_, sys(now));
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

}  // namespace faultline
