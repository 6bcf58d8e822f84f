// The bounded revision history of one incident (incident_view.hpp) and its JSON form: what the store keeps on disk
// and the API shows in GET /api/v1/incidents/<id>.
#include <nlohmann/json.hpp>

#include "faultline/incident_view.hpp"
#include "faultline/json_integer.hpp"

namespace faultline {
namespace {

using nlohmann::json;

json entry_json(const RevisionEntry& e) {
  json j;
  j["revision"] = e.revision;
  j["change"] = std::string(to_string(e.change));
  j["status"] = std::string(to_string(e.status));
  j["severity"] = std::string(to_string(e.severity));
  j["count"] = e.count;
  j["last_seen"] = format_time(e.last_seen);
  return j;
}

std::optional<RevisionChange> parse_change(std::string_view s) {
  for (auto c : {RevisionChange::first, RevisionChange::severity, RevisionChange::status, RevisionChange::count})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(RevisionChange change) {
  switch (change) {
    case RevisionChange::first: return "first";
    case RevisionChange::severity: return "severity";
    case RevisionChange::status: return "status";
    case RevisionChange::count: return "count";
  }
  return "count";
}

bool RevisionHistory::record(const Incident& incident) {
  if (!entries_.empty() && incident.revision <= entries_.back().revision) return false;
  RevisionEntry e;
  e.revision = incident.revision;
  e.status = incident.status;
  e.severity = incident.severity;
  e.count = incident.count;
  e.last_seen = incident.last_seen;
  if (entries_.empty()) e.change = RevisionChange::first;
  else if (entries_.back().severity != e.severity) e.change = RevisionChange::severity;
  else if (entries_.back().status != e.status) e.change = RevisionChange::status;
  else e.change = RevisionChange::count;
  // Revisions before the first one held (the store saw the incident late) are counted as left out.
  if (entries_.empty() && e.revision > 1) omitted_ += e.revision - 1;
  add(e);
  return true;
}

void RevisionHistory::add(RevisionEntry e) {
  e.json_bytes = static_cast<std::uint32_t>(entry_json(e).dump().size()) + 1;  // and its comma
  bytes_ += e.json_bytes;
  entries_.push_back(e);
  std::size_t counts = 0;
  for (const auto& x : entries_) counts += x.change == RevisionChange::count;
  for (std::size_t i = 1; counts > kMaxCounts && i + 1 < entries_.size();) {
    if (entries_[i].change == RevisionChange::count) {
      drop(i);
      --counts;
    } else {
      ++i;
    }
  }
  // Still too many (a long run of escalations and resolutions): the oldest after the first go; never the newest.
  while ((entries_.size() > kMaxEntries || bytes_ > kMaxBytes) && entries_.size() > 2) drop(1);
}

void RevisionHistory::drop(std::size_t index) {
  bytes_ -= entries_[index].json_bytes;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
  ++omitted_;
}

std::string RevisionHistory::to_json() const {
  json list = json::array();
  for (const auto& e : entries_) list.push_back(entry_json(e));
  json j;
  j["revisions"] = std::move(list);
  j["omitted"] = omitted_;
  return j.dump();
}

std::optional<RevisionHistory> RevisionHistory::from_json(std::string_view text, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<RevisionHistory> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object");
  const auto revisions = j.find("revisions");
  if (revisions == j.end() || !revisions->is_array()) return fail("no \"revisions\" array");
  RevisionHistory out;
  for (const auto& r : *revisions) {
    const auto revision =
        r.is_object() && r.contains("revision") ? json_integer<std::uint32_t>(r["revision"]) : std::nullopt;
    if (!revision) return fail("a revision without a number");
    RevisionEntry e;
    e.revision = *revision;
    if (!out.entries_.empty() && e.revision <= out.entries_.back().revision) return fail("revisions out of order");
    auto text_of = [&](const char* key) {
      return r.contains(key) && r[key].is_string() ? r[key].get<std::string>() : std::string();
    };
    auto change = parse_change(text_of("change"));
    auto severity = parse_severity(text_of("severity"));
    auto status = text_of("status");
    if (!change || !severity || (status != "firing" && status != "resolved"))
      return fail("revision " + std::to_string(e.revision) + ": bad change, severity or status");
    e.change = *change;
    e.severity = *severity;
    e.status = status == "firing" ? IncidentStatus::firing : IncidentStatus::resolved;
    e.count = r.contains("count") ? json_integer<std::uint32_t>(r["count"]).value_or(1) : 1;
    e.last_seen = parse_rfc3339(text_of("last_seen")).value_or(Time{});
    e.json_bytes = static_cast<std::uint32_t>(entry_json(e).dump().size()) + 1;
    out.bytes_ += e.json_bytes;
    out.entries_.push_back(e);
  }
  if (auto omitted = j.contains("omitted") ? json_integer<std::uint32_t>(j["omitted"]) : std::nullopt) {
    out.omitted_ = *omitted;
  }
  // A file written with other bounds: trimmed to these (the oldest after the first go).
  while ((out.entries_.size() > kMaxEntries || out.bytes_ > kMaxBytes) && out.entries_.size() > 2) out.drop(1);
  return out;
}

}  // namespace faultline
