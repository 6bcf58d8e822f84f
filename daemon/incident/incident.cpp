#include "faultline/incident.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "faultline/json_integer.hpp"

namespace faultline {

namespace {

using nlohmann::json;

// The compact JSON to_json writes, one value after another into one string.
struct JsonWriter {
  std::string out;

  // `"name":`, after a comma unless it is the object's first key. Names are plain ASCII: no escapes.
  void key(std::string_view name) {
    if (out.back() != '{') out += ',';
    out += '"';
    out += name;
    out += "\":";
  }
  void number(std::uint64_t n) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
    out.append(buf, end);
  }
  // `"name":` and the value.
  void member(std::string_view name, std::string_view text) {
    key(name);
    string(text);
  }
  void member(std::string_view name, std::uint64_t n) {
    key(name);
    number(n);
  }
  void member(std::string_view name, const Fields& f) {
    key(name);
    fields(f);
  }

  // A JSON string, invalid UTF-8 replaced (sanitize_utf8), escaped as nlohmann escapes with ensure_ascii off: `"`,
  // `\\`, the short forms of \b \f \n \r \t, other control characters as \u00xx; everything else as it is.
  void string(std::string_view s) {
    if (!is_valid_utf8(s)) {
      escaped(sanitize_utf8(s));
      return;
    }
    escaped(s);
  }

  // An object of the fields' sanitized names, in byte order; a name given twice keeps its last value (as assigning
  // into a JSON object does).
  void fields(const Fields& fields) {
    std::vector<std::pair<std::string, const std::string*>> sorted;
    sorted.reserve(fields.size());
    for (const auto& [k, v] : fields) sorted.emplace_back(sanitize_utf8(k), &v);
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out += '{';
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      if (i + 1 < sorted.size() && sorted[i + 1].first == sorted[i].first) continue;  // a later value wins
      if (out.back() != '{') out += ',';
      escaped(sorted[i].first);
      out += ':';
      string(*sorted[i].second);
    }
    out += '}';
  }

 private:
  void escaped(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    std::size_t run = 0;  // start of the bytes not yet copied
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c != '"' && c != '\\') continue;
      out.append(s.data() + run, i - run);
      run = i + 1;
      out += '\\';
      switch (c) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '\b': out += 'b'; break;
        case '\f': out += 'f'; break;
        case '\n': out += 'n'; break;
        case '\r': out += 'r'; break;
        case '\t': out += 't'; break;
        default:
          out += "u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
      }
    }
    out.append(s.data() + run, s.size() - run);
    out += '"';
  }
};

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

std::size_t heap_bytes(const Incident& in) {
  std::size_t n = heap_bytes(in.id) + heap_bytes(in.rule) + heap_bytes(in.title) + heap_bytes(in.stream) +
                  heap_bytes(in.summary) + heap_bytes(in.remediation) + heap_bytes(in.caused_by_rule) +
                  heap_bytes(in.fingerprint) + heap_bytes(in.message_template);
  if (in.caused_by) n += heap_bytes(*in.caused_by);
  n += heap_bytes(in.stream_labels) + heap_bytes(in.fields) + heap_bytes(in.labels);
  n += in.references.capacity() * sizeof(std::string);
  for (const auto& r : in.references) n += heap_bytes(r);
  n += in.evidence.capacity() * sizeof(EvidenceLine);
  for (const auto& e : in.evidence) n += heap_bytes(e.stream) + heap_bytes(e.event) + heap_bytes(e.text);
  return n;
}

std::string make_incident_id(std::string_view rule, std::string_view logical_key, std::string_view first_line) {
  // Each part closed by a NUL byte, so ("ab", "c") and ("a", "bc") differ.
  std::uint64_t h = kFnv1a64Offset;
  auto mix = [&h](std::string_view part) { h = fnv1a64(std::string_view("\0", 1), fnv1a64(part, h)); };
  mix(rule);
  mix(logical_key);
  mix(first_line);
  return hex16(h);
}

std::string to_json(const Incident& in) {
  // Written directly rather than built as a JSON tree and dumped: the tree cost about 80 instructions per byte of a
  // revision, most of it in copies of the evidence. Same bytes as before: keys in byte order (nlohmann's objects are
  // std::maps), its escapes, invalid UTF-8 replaced.
  JsonWriter w;
  w.out.reserve(1024 + in.evidence.size() * 256);
  w.out += '{';
  w.key("caused_by");
  if (in.caused_by) {
    w.out += '{';
    w.member("id", *in.caused_by);
    w.member("rule", in.caused_by_rule);
    w.out += '}';
  } else {
    w.out += "null";
  }
  w.member("count", in.count);
  w.key("evidence");
  w.out += '[';
  for (const auto& e : in.evidence) {
    if (w.out.back() != '[') w.out += ',';
    w.out += '{';
    w.member("event", e.event);
    w.member("line", e.line);
    w.member("offset", e.offset);
    w.member("stream", e.stream);
    w.member("text", std::string_view(e.text).substr(0, kMaxEvidenceText));
    w.member("time", format_time(e.time));
    if (e.truncated || e.text.size() > kMaxEvidenceText) {
      w.key("truncated");
      w.out += "true";
    }
    w.out += '}';
  }
  w.out += ']';
  w.member("fields", in.fields);
  if (!in.fingerprint.empty()) w.member("fingerprint", in.fingerprint);
  w.member("first_seen", format_time(in.first_seen));
  w.member("id", in.id);
  w.member("labels", in.labels);
  w.member("last_seen", format_time(in.last_seen));
  w.key("references");
  w.out += '[';
  for (const auto& r : in.references) {
    if (w.out.back() != '[') w.out += ',';
    w.string(r);
  }
  w.out += ']';
  w.member("remediation", in.remediation);
  w.member("revision", in.revision);
  w.member("rule", in.rule);
  w.member("severity", to_string(in.severity));
  w.member("status", to_string(in.status));
  w.member("stream", in.stream);
  w.member("stream_labels", in.stream_labels);
  w.member("summary", in.summary);
  if (!in.fingerprint.empty()) w.member("template", in.message_template);
  w.member("title", in.title);
  w.out += '}';
  return std::move(w.out);
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
