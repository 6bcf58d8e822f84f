// incident_view: what readers of recent incidents see — the HTTP API and page, and the Alertmanager sink's re-sends —
// without knowing who keeps them (the incident store in sinks.hpp implements it). Pointers returned stay valid until
// the view changes; a view is used on the thread that changes it (the io thread), so readers need no locks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/incident.hpp"

namespace faultline {

// What changed in one revision, against the revision before it that the history holds.
enum class RevisionChange : std::uint8_t { first, severity, status, count };
std::string_view to_string(RevisionChange change);

struct RevisionEntry {
  std::uint32_t revision = 1;
  RevisionChange change = RevisionChange::first;
  IncidentStatus status = IncidentStatus::firing;
  Severity severity = Severity::warning;
  std::uint32_t count = 1;
  Time last_seen{};
  std::uint32_t json_bytes = 0;  // the size of its JSON, for the byte bound
};

// The revisions of one incident worth showing afterwards, bounded: the first one kept, every change of severity or
// status (an escalation, a resolution, firing again), and only the last kMaxCounts count-only updates; the newest is
// always kept. At most kMaxEntries entries and kMaxBytes of JSON; dropped revisions are counted in omitted().
class RevisionHistory {
 public:
  static constexpr std::size_t kMaxEntries = 40;
  static constexpr std::size_t kMaxCounts = 8;
  static constexpr std::size_t kMaxBytes = 6144;

  // Adds a revision newer than the last one held; false (and nothing changes) for an older or the same one.
  bool record(const Incident& incident);
  const std::vector<RevisionEntry>& entries() const { return entries_; }
  std::uint32_t omitted() const { return omitted_; }
  std::size_t bytes() const { return bytes_; }
  std::uint32_t last_revision() const { return entries_.empty() ? 0 : entries_.back().revision; }

  // {"revisions":[{"revision","change","status","severity","count","last_seen"}...],"omitted":N}
  std::string to_json() const;
  // Reads what to_json wrote (an object with "revisions" and "omitted"; other keys are ignored). Entries out of
  // order or malformed: nullopt and `error` set.
  static std::optional<RevisionHistory> from_json(std::string_view json, std::string* error = nullptr);

 private:
  void add(RevisionEntry entry);
  void drop(std::size_t index);
  std::vector<RevisionEntry> entries_;  // oldest first
  std::uint32_t omitted_ = 0;
  std::size_t bytes_ = 0;
};

// What a stored incident keeps of its latest revision beside the JSON: what readers filter, group and count on.
struct IncidentSummary {
  std::string id;
  std::uint32_t revision = 1;
  IncidentStatus status = IncidentStatus::firing;
  std::string rule;
  Severity severity = Severity::warning;
  Time last_seen{};
  std::optional<std::string> caused_by;
  Fields stream_labels;

  static IncidentSummary of(const Incident& incident);
};

// The latest revision of one incident, held once: as its JSON (what the API serves and the log keeps) and a summary.
// The evidence and texts are read back from the JSON when a reader needs the whole incident.
struct StoredIncident {
  IncidentSummary summary;
  std::string json;     // to_json(incident)
  std::uint64_t order;  // grows with every update; newest first in queries
  RevisionHistory history{};

  // Parsed from `json` (no read_at); nullopt only if the JSON does not parse, which the store's own never fails to.
  std::optional<Incident> incident() const;
  std::size_t bytes() const;  // the memory it holds, heap included (an estimate), for the store's byte bound
};

struct IncidentQuery {
  std::vector<std::string> rules;        // any of these; empty: all
  std::vector<Severity> severities;      // any of these; empty: all
  std::optional<Time> since;             // last_seen at or after
  std::optional<IncidentStatus> status;  // firing | resolved
  std::size_t limit = 100;
};

class IncidentView {
 public:
  virtual ~IncidentView() = default;
  virtual const StoredIncident* find(std::string_view id) const = 0;
  virtual std::vector<const StoredIncident*> query(const IncidentQuery& query) const = 0;  // newest update first
  virtual std::vector<const StoredIncident*> firing() const = 0;                         // oldest update first
};

}  // namespace faultline
