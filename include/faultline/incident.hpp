// incident: the Incident value and its JSON form — the contract with users (see docs/incident-schema.md).
// Plain values; the functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/types.hpp"

namespace faultline {

enum class IncidentStatus : std::uint8_t { firing, resolved };
std::string_view to_string(IncidentStatus status);

// The labels a stream carries that other rooms read (attribution, node keys, metrics, Alertmanager labels). Their
// spelling — also their name in exported labels — lives in label_name() only.
enum class LabelKey : std::uint8_t { source, namespace_, pod, container, node, restart };
std::string_view label_name(LabelKey key);

// Who logged it. `logical` survives restarts of the server (pod + container, or the path); `instance` does not
// (the container's restart count, or the file's identity).
struct StreamIdentity {
  std::string name;      // shown to people: a path, "namespace/pod/container", "stdin", "kmsg"
  std::string logical;   // identity across restarts; incident ids and suppression follow it
  std::string instance;  // the current instance of the stream
  Fields labels;         // bounded: the LabelKey ones and a source's static labels; for display and export

  // The value of a well-known label; empty when the stream has none.
  std::string_view label(LabelKey key) const;
  void set_label(LabelKey key, std::string_view value);
};

struct EvidenceLine {
  std::string stream;
  std::uint64_t line = 0;
  std::uint64_t offset = 0;
  Time time{};
  std::string event;  // the event it matched; empty for a context line
  std::string text;   // capped; invalid UTF-8 replaced when written as JSON
  bool truncated = false;
};

struct Incident {
  std::string id;              // deterministic: rule, logical stream (or key), position of the first decisive line
  std::uint32_t revision = 1;  // grows with every change; sinks deduplicate on (id, revision)
  IncidentStatus status = IncidentStatus::firing;
  std::string rule;
  std::string title;
  Severity severity = Severity::warning;
  std::string stream;          // the logical stream's name
  Fields stream_labels;
  Time first_seen{};
  Time last_seen{};
  std::uint32_t count = 1;     // completions of the fingerprint within the incident's lifetime
  Fields fields;
  std::vector<EvidenceLine> evidence;
  std::string summary;
  std::string remediation;
  std::vector<std::string> references;
  Fields labels;               // the rule's static labels
  std::optional<std::string> caused_by;  // id of the root-cause incident that explains this one
  std::string caused_by_rule;            // and its rule
  // A failure story no rule claims (rule `unclassified-failure`): its stable fingerprint (16 hex digits) and the
  // terminal message as a template. Empty for typed incidents; omitted from the JSON then.
  std::string fingerprint;
  std::string message_template;
  // Not part of the JSON: when the line that caused this revision was read (for latency metrics).
  std::chrono::steady_clock::time_point read_at{};
};

constexpr std::size_t kMaxEvidenceLines = 24;
constexpr std::size_t kMaxEvidenceText = 2048;

// One JSON object per revision (compact, no trailing newline). Always valid UTF-8.
std::string to_json(const Incident& incident);
// Parses what to_json wrote. Returns nullopt and sets `error` on malformed input.
std::optional<Incident> incident_from_json(std::string_view json, std::string* error = nullptr);

// The heap memory an incident holds beyond its own object: its strings, fields, labels and evidence (buffers as
// allocated, not allocator overhead). For byte bounds on what keeps incidents.
std::size_t heap_bytes(const Incident& incident);

// Stable 16-hex-digit id from its inputs (FNV-1a 64 over the parts joined by NUL).
std::string make_incident_id(std::string_view rule, std::string_view logical_key, std::string_view first_line);

// Human-readable rendering for the terminal: title, severity, where, when, evidence, remediation.
std::string to_text(const Incident& incident, bool colour = false);

}  // namespace faultline
