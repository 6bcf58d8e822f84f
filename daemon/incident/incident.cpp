#include "faultline/incident.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <stdexcept>

#include "faultline/json_integer.hpp"

namespace faultline {

namespace {

using nlohmann::json;

json fields_json(const Fields& fields) {
  json out = json::object();
  for (const auto& [k, v] : fields) out[sanitize_utf8(k)] = sanitize_utf8(v);
  return out;
}

Fields fields_from(const json& j) {
  Fields out;
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) out.emplace_back(it.key(), it.value().get<std::string>());
  return out;
}

// The integer field `key` of `j` (`fallback` when absent). A float, a negative number or one out of T's range is an
// error, never converted: converting 1e25 to an unsigned integer is undefined behaviour.
template <class T>
T integer_field(const json& j, const char* key, T fallback) {
  if (auto v = json_integer_field<T>(j, key, fallback)) return *v;
  throw std::runtime_error(std::string("\"") + key + "\" is not an integer in range: " + j.at(key).dump());
}

Time time_from(const json& j) {
  if (!j.is_string()) return Time{};
  return parse_rfc3339(j.get<std::string>()).value_or(Time{});
}

std::string cap(std::string_view text) {
  if (text.size() <= kMaxEvidenceText) return sanitize_utf8(text);
  return sanitize_utf8(text.substr(0, kMaxEvidenceText));
}

}  // namespace

std::string_view label_name(LabelKey key) {
  switch (key) {
    case LabelKey::source: return "source";
    case LabelKey::namespace_: return "namespace";
    case LabelKey::pod: return "pod";
    case LabelKey::container: return "container";
    case LabelKey::node: return "node";
    case LabelKey::restart: return "restart";
  }
  return "";
}

std::string_view StreamIdentity::label(LabelKey key) const {
  const std::string* v = find_field(labels, label_name(key));
  return v ? std::string_view(*v) : std::string_view();
}

void StreamIdentity::set_label(LabelKey key, std::string_view value) { set_field(labels, label_name(key), value); }

std::string_view to_string(IncidentStatus status) {
  return status == IncidentStatus::firing ? "firing" : "resolved";
}

std::string make_incident_id(std::string_view rule, std::string_view logical_key, std::string_view first_line) {
  // Each part closed by a NUL byte, so ("ab", "c") and ("a", "bc") differ.
  std::uint64_t h = kFnv1a64Offset;
  auto mix = [&h](std::string_view part) { h = fnv1a64(std::string_view("\0", 1), fnv1a64(part, h)); };
  mix(rule);
  mix(logical_key);
  mix(first_line);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string to_json(const Incident& in) {
  json j;
  j["id"] = in.id;
  j["revision"] = in.revision;
  j["status"] = std::string(to_string(in.status));
  j["rule"] = in.rule;
  j["title"] = sanitize_utf8(in.title);
  j["severity"] = std::string(to_string(in.severity));
  j["stream"] = sanitize_utf8(in.stream);
  j["stream_labels"] = fields_json(in.stream_labels);
  j["first_seen"] = format_time(in.first_seen);
  j["last_seen"] = format_time(in.last_seen);
  j["count"] = in.count;
  j["fields"] = fields_json(in.fields);
  json ev = json::array();
  for (const auto& e : in.evidence) {
    json line;
    line["stream"] = sanitize_utf8(e.stream);
    line["line"] = e.line;
    line["offset"] = e.offset;
    line["time"] = format_time(e.time);
    line["event"] = e.event;
    line["text"] = cap(e.text);
    if (e.truncated || e.text.size() > kMaxEvidenceText) line["truncated"] = true;
    ev.push_back(std::move(line));
  }
  j["evidence"] = std::move(ev);
  j["summary"] = sanitize_utf8(in.summary);
  j["remediation"] = sanitize_utf8(in.remediation);
  j["references"] = in.references;
  j["labels"] = fields_json(in.labels);
  if (in.caused_by) {
    j["caused_by"] = json{{"id", *in.caused_by}, {"rule", in.caused_by_rule}};
  } else {
    j["caused_by"] = nullptr;
  }
  if (!in.fingerprint.empty()) {
    j["fingerprint"] = in.fingerprint;
    j["template"] = sanitize_utf8(in.message_template);
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<Incident> incident_from_json(std::string_view text, std::string* error) {
  try {
    json j = json::parse(text);
    Incident in;
    in.id = j.at("id").get<std::string>();
    if (!j.contains("revision")) throw std::runtime_error("no \"revision\"");
    in.revision = integer_field<std::uint32_t>(j, "revision", 0);
    in.status = j.at("status").get<std::string>() == "resolved" ? IncidentStatus::resolved : IncidentStatus::firing;
    in.rule = j.at("rule").get<std::string>();
    in.title = j.value("title", "");
    in.severity = parse_severity(j.at("severity").get<std::string>()).value_or(Severity::warning);
    in.stream = j.value("stream", "");
    in.stream_labels = fields_from(j.value("stream_labels", json::object()));
    in.first_seen = time_from(j.value("first_seen", json()));
    in.last_seen = time_from(j.value("last_seen", json()));
    in.count = integer_field<std::uint32_t>(j, "count", 1);
    in.fields = fields_from(j.value("fields", json::object()));
    for (const auto& e : j.value("evidence", json::array())) {
      EvidenceLine line;
      line.stream = e.value("stream", "");
      line.line = integer_field<std::uint64_t>(e, "line", 0);
      line.offset = integer_field<std::uint64_t>(e, "offset", 0);
      line.time = time_from(e.value("time", json()));
      line.event = e.value("event", "");
      line.text = e.value("text", "");
      line.truncated = e.value("truncated", false);
      in.evidence.push_back(std::move(line));
    }
    in.summary = j.value("summary", "");
    in.remediation = j.value("remediation", "");
    in.references = j.value("references", std::vector<std::string>{});
    in.labels = fields_from(j.value("labels", json::object()));
    if (j.contains("caused_by") && j["caused_by"].is_object()) {
      in.caused_by = j["caused_by"].value("id", "");
      in.caused_by_rule = j["caused_by"].value("rule", "");
    }
    in.fingerprint = j.value("fingerprint", "");
    in.message_template = j.value("template", "");
    return in;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

std::string to_text(const Incident& in, bool colour) {
  const char* bold = colour ? "\x1b[1m" : "";
  const char* reset = colour ? "\x1b[0m" : "";
  const char* sev_colour = !colour ? ""
                           : in.severity == Severity::critical ? "\x1b[1;31m"
                           : in.severity == Severity::warning  ? "\x1b[1;33m"
                                                               : "\x1b[1;36m";
  std::string out;
  out += sev_colour;
  out += "[";
  for (char c : to_string(in.severity)) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out += "]";
  out += reset;
  out += " ";
  out += bold;
  out += in.title;
  out += reset;
  out += "\n";
  out += "  rule:      " + in.rule + "  (incident " + in.id + ", revision " + std::to_string(in.revision) + ", " +
         std::string(to_string(in.status)) + ")\n";
  out += "  where:     " + in.stream + "\n";
  out += "  when:      " + format_time(in.first_seen);
  if (in.last_seen != in.first_seen) out += " .. " + format_time(in.last_seen);
  if (in.count > 1) out += "  (" + std::to_string(in.count) + " times)";
  out += "\n";
  if (!in.fingerprint.empty()) out += "  fingerprint: " + in.fingerprint + "  " + sanitize_utf8(in.message_template) + "\n";
  if (in.caused_by) out += "  caused by: " + in.caused_by_rule + " (incident " + *in.caused_by + ")\n";
  if (!in.fields.empty()) {
    out += "  fields:   ";
    for (const auto& [k, v] : in.fields) out += " " + k + "=" + v;
    out += "\n";
  }
  if (!in.summary.empty()) out += "  summary:   " + in.summary + "\n";
  if (!in.evidence.empty()) {
    out += "  evidence:\n";
    for (const auto& e : in.evidence) {
      std::string text = e.text.size() > 300 ? e.text.substr(0, 300) + "…" : e.text;
      out += "    " + std::string(e.event.empty() ? "  " : "▶ ") + std::to_string(e.line) + ": " + sanitize_utf8(text) + "\n";
    }
  }
  if (!in.remediation.empty()) out += "  remediation: " + in.remediation + "\n";
  for (const auto& r : in.references) out += "  see: " + r + "\n";
  return out;
}

}  // namespace faultline
