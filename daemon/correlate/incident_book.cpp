// The open-incident book: raise and revise, hold and release, resolve and expire.
#include "incident_book.hpp"

#include <algorithm>
#include <limits>

namespace faultline::correlate {

namespace {

// The same failure printed again within this time of the last completion, with no restart in between, is the same
// occurrence (a crash prints its error in the worker, the engine and the API server), not a repeat.
constexpr Duration kRepeatGap = std::chrono::seconds(60);

Severity max_severity(Severity a, Severity b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

void fill_texts(Incident& inc, const Rule& r) {
  inc.title = expand_template(r.title, inc.fields);
  inc.summary = expand_template(r.summary, inc.fields);
  inc.remediation = expand_template(r.remediation, inc.fields);
}

}  // namespace

void IncidentBook::raise(Story& s, Severity severity, bool completion, Time at, Call& call) {
  const Rule& r = rules_[s.rule];
  StoryKey key{s.rule, s.key};
  auto it = open_.find(key);
  if (it != open_.end() && it->second.incident.status == IncidentStatus::firing) {
    OpenIncident& oi = it->second;
    bool escalation = s.raised.has_value();  // this story already raised it: escalate, do not count twice
    if (completion && !escalation) {
      if (!oi.boundary && at - oi.last_completion < kRepeatGap && severity <= oi.incident.severity) {
        if (trace_) trace_("  " + r.id + ": same occurrence printed again");
        if (at > oi.incident.last_seen) {
          oi.incident.last_seen = at;
          schedule(key, oi);  // its quiet period now ends later: the entry for the earlier time is stale
        }
        s.raised = severity;
        return;
      }
      ++oi.incident.count;
      oi.boundary = false;
    }
    if (completion) oi.last_completion = at;
    oi.incident.severity = max_severity(oi.incident.severity, severity);
    oi.incident.last_seen = at;
    schedule(key, oi);
    for (const auto& [k, v] : s.fields) set_field(oi.incident.fields, k, v);
    if (escalation || oi.incident.evidence.empty()) oi.incident.evidence = assemble_evidence(s.evidence());
    fill_texts(oi.incident, r);
    oi.incident.read_at = call.read_at;
    if (oi.emitted) ++oi.incident.revision;
    s.raised = max_severity(s.raised.value_or(severity), severity);
    recount(it->first, oi);
    emit(oi, call);
    keep_within_bound(key, call);
    return;
  }
  OpenIncident oi;
  oi.rule = s.rule;
  oi.stream = s.stream;
  oi.last_completion = at;
  Incident& inc = oi.incident;
  inc.rule = r.id;
  inc.severity = severity;
  // first_seen: the first decisive line (optional evidence may be hours older).
  inc.first_seen = s.first_decisive.empty() ? at : std::min(at, s.first_decisive_time);
  inc.last_seen = at;
  inc.fields = s.fields;
  inc.evidence = assemble_evidence(s.evidence());
  const StreamState& st = streams_[s.stream];
  inc.stream = r.key.stream || r.key.fields.size() ? st.id.name : s.key;
  if (r.key.node && !r.key.stream) inc.stream = s.key;
  inc.stream_labels = st.id.labels;
  inc.references = r.references;
  inc.labels = r.labels;
  inc.id = make_incident_id(r.id, s.key, s.first_decisive);
  fill_texts(inc, r);
  inc.read_at = call.read_at;
  s.raised = severity;
  hold_if_needed(oi, s, at, call);
  if (oi.hold.held) ++held_;
  if (it != open_.end()) bytes_ -= it->second.bytes;  // a resolved incident of the key gives way
  auto [pos, inserted] = open_.insert_or_assign(key, std::move(oi));
  OpenIncident& stored = pos->second;
  recount(pos->first, stored);
  schedule(key, stored);
  attribution_.remember(stored.incident, stored.rule, stored.stream);
  if (!stored.hold.held) {
    attribute(stored);
    emit(stored, call);
  }
  if (!r.cascade.enabled) root_cause_arrived();
  keep_within_bound(key, call);
}

// A root cause arriving now may explain cascade incidents held on related streams.
void IncidentBook::root_cause_arrived() {
  for (auto& [k, other] : open_) {
    if (other.hold.held && other.hold.cascade && !other.incident.caused_by) attribute(other);
  }
}

// Hold for missing optional evidence (tolerance) or for a root cause printed later (cascade).
void IncidentBook::hold_if_needed(OpenIncident& oi, const Story& s, Time at, const Call& call) {
  const Rule& r = rules_[s.rule];
  const bool steady = wall_bound_ && call.read_at != std::chrono::steady_clock::time_point{};
  const auto steady_after = [&](Duration d) {
    auto until = call.read_at + std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
    oi.hold.until_steady = oi.hold.until_steady ? std::max(*oi.hold.until_steady, until) : until;
  };
  bool tolerant = r.tolerance.lines > 0 || r.tolerance.time.count() > 0;
  if (tolerant && missing_optional(s, r)) {
    oi.hold.held = true;
    oi.hold.released_by_tolerance = false;
    oi.hold.until_time = r.tolerance.time.count() > 0 ? at + r.tolerance.time : Time::max();
    oi.hold.until_line = r.tolerance.lines > 0 ? call.line + r.tolerance.lines
                                               : std::numeric_limits<std::uint64_t>::max();
    oi.hold.stream = s.stream;
    if (steady && r.tolerance.time.count() > 0) steady_after(r.tolerance.time);
    if (trace_) trace_("  " + r.id + ": holding for late evidence");
  }
  if (r.cascade.enabled) {
    oi.hold.held = true;
    oi.hold.cascade = true;
    oi.hold.until_time = std::max(oi.hold.until_time, at + r.cascade.hold);
    oi.hold.until_line = std::numeric_limits<std::uint64_t>::max();
    oi.hold.stream = s.stream;
    if (steady) steady_after(r.cascade.hold);
  }
}

bool IncidentBook::hold_passed(const OpenIncident& oi, Time now, const Call& call) const {
  if (now > oi.hold.until_time) return true;
  return oi.hold.until_steady && call.read_at != std::chrono::steady_clock::time_point{} &&
         call.read_at > *oi.hold.until_steady;
}

bool IncidentBook::on_clock_of(const OpenIncident& oi, std::uint32_t stream) {
  if (oi.stream == stream) return true;
  return node_keyed(rules_[oi.rule]) && streams_.node_name(oi.stream) == streams_.node_name(stream);
}

void IncidentBook::late_evidence(const Story& s, const EvidenceLine& line, Call& call) {
  // Only a held incident takes it (or a trace says why one did not): while none is held, no lookup (a phase marker
  // is evidence of this kind on every line of a progress bar).
  if (held_ == 0 && !trace_) return;
  auto it = open_.find(StoryKeyView{s.rule, s.key});
  if (it == open_.end()) return;
  const Rule& r = rules_[s.rule];
  if (trace_ && !it->second.hold.held && it->second.hold.released_by_tolerance && it->second.emitted &&
      it->second.incident.status == IncidentStatus::firing) {
    trace_("line " + std::to_string(line.line) + ": " + r.id + "/" + line.event + " matched, not in incident " +
           it->second.incident.id + ": it came after the rule's tolerance (" +
           (r.tolerance.lines ? std::to_string(r.tolerance.lines) + " lines" : std::string()) +
           (r.tolerance.lines && r.tolerance.time.count() ? ", " : "") +
           (r.tolerance.time.count() ? format_duration(r.tolerance.time) : std::string()) +
           ") had passed, and the incident went out without it");
  }
  if (!it->second.hold.held || it->second.hold.cascade) return;
  OpenIncident& oi = it->second;
  for (const auto& [k, v] : s.fields) set_field(oi.incident.fields, k, v);
  oi.incident.evidence = merge_evidence(oi.incident.evidence, line);
  fill_texts(oi.incident, r);
  recount(it->first, oi);
  if (!missing_optional(s, r)) release(oi, "evidence complete", call);
  keep_within_bound(it->first, call);
}

void IncidentBook::release(OpenIncident& oi, const char* why, Call& call) {
  if (!oi.hold.held) return;
  oi.hold.held = false;
  if (held_ > 0) --held_;
  if (trace_) trace_("  " + oi.incident.rule + ": released (" + why + ")");
  attribute(oi);
  emit(oi, call);
}

void IncidentBook::emit(OpenIncident& oi, Call& call) {
  if (oi.hold.held) return;
  oi.emitted = true;
  call.out.push_back(oi.incident);
  ++stats_.incidents;
  if (trace_) {
    trace_("  → " + oi.incident.rule + " incident " + oi.incident.id + " revision " + std::to_string(oi.incident.revision) +
           " " + std::string(to_string(oi.incident.status)) + " " + std::string(to_string(oi.incident.severity)));
  }
}

void IncidentBook::resolve(OpenIncident& oi, Time at, const char* why, Call& call) {
  if (oi.incident.status == IncidentStatus::resolved) return;
  release(oi, "resolving", call);
  oi.incident.status = IncidentStatus::resolved;
  oi.incident.last_seen = std::max(oi.incident.last_seen, at);
  ++oi.incident.revision;
  if (trace_) trace_("  " + oi.incident.rule + ": resolved (" + why + ")");
  emit(oi, call);
}

void IncidentBook::settle_before(std::uint32_t stream, std::uint64_t line, Time t, Call& call) {
  for (auto it = open_.begin(); held_ > 0 && it != open_.end(); ++it) {
    OpenIncident& oi = it->second;
    if (oi.hold.held && !oi.hold.cascade && oi.hold.stream == stream && line > oi.hold.until_line) {
      oi.hold.released_by_tolerance = true;
      release(oi, "tolerance lines passed", call);
    }
    // Incidents on other clocks are not looked at by their time here (it depends on how the input was batched),
    // only by the steady clock.
    if (oi.hold.held && hold_passed(oi, on_clock_of(oi, stream) ? t : Time::min(), call)) {
      oi.hold.released_by_tolerance = !oi.hold.cascade;
      release(oi, "hold time passed", call);
    }
  }
  expire_by(
      t, [&](OpenIncident& oi) { return on_clock_of(oi, stream) ? std::optional<Time>(t) : std::nullopt; }, call);
}

void IncidentBook::release_lines_passed(Call& call) {
  for (auto it = open_.begin(); held_ > 0 && it != open_.end(); ++it) {
    OpenIncident& oi = it->second;
    if (oi.hold.held && !oi.hold.cascade && streams_[oi.hold.stream].last_line > oi.hold.until_line) {
      oi.hold.released_by_tolerance = true;
      release(oi, "tolerance lines passed", call);
    }
  }
}

void IncidentBook::release_time_passed(Call& call) {
  for (auto it = open_.begin(); held_ > 0 && it != open_.end(); ++it) {
    if (it->second.hold.held && hold_passed(it->second, now_of(it->second), call)) {
      it->second.hold.released_by_tolerance = !it->second.hold.cascade;
      release(it->second, "hold time passed", call);
    }
  }
}

void IncidentBook::expire(Call& call) {
  expire_by(streams_.latest_of_all(), [&](OpenIncident& oi) { return std::optional<Time>(now_of(oi)); }, call);
}

template <class ClockOf>
void IncidentBook::expire_by(Time bound, ClockOf&& clock_of, Call& call) {
  for (auto e = expiry_.begin(); e != expiry_.end() && e->first <= bound;) {
    auto it = open_.find(e->second);
    if (it == open_.end()) {
      e = expiry_.erase(e);
      continue;
    }
    OpenIncident& oi = it->second;
    const std::optional<Time> now = clock_of(oi);
    if (!now || e->first > *now) {  // not due on its own clock yet
      ++e;
      continue;
    }
    e = expiry_.erase(e);
    if (oi.incident.status == IncidentStatus::firing) {
      Time due = quiet_due(oi);
      if (due > *now) continue;  // it was seen again; a later entry stands for it
      resolve(oi, due, "quiet", call);
    }
    if (oi.hold.held && held_ > 0) --held_;
    forget(it);
  }
}

void IncidentBook::release_all(Call& call) {
  for (auto& [k, oi] : open_) release(oi, "end of input", call);
}

void IncidentBook::mark_boundary(std::uint32_t stream) {
  for (auto& [k, oi] : open_) {
    if (oi.stream == stream) oi.boundary = true;
  }
}

void IncidentBook::time_went_back(std::uint32_t stream, Call& call) {
  for (auto& [k, oi] : open_) {
    if (oi.stream != stream) continue;
    oi.boundary = true;
    release(oi, "time went back", call);
  }
}

OpenIncident* IncidentBook::find(StoryKeyView key) {
  auto it = open_.find(key);
  return it == open_.end() ? nullptr : &it->second;
}

void IncidentBook::rekey(const std::map<std::string, std::uint32_t>& new_index) {
  Map kept;
  for (auto& [k, oi] : open_) {
    auto it = new_index.find(oi.incident.rule);
    if (it == new_index.end()) continue;
    oi.rule = it->second;
    kept.emplace(StoryKey{it->second, k.key}, std::move(oi));
  }
  open_ = std::move(kept);
}

void IncidentBook::rebuild_index() {
  expiry_.clear();
  held_ = 0;
  bytes_ = 0;
  for (auto& [k, oi] : open_) {
    schedule(k, oi);
    if (oi.hold.held) ++held_;
    oi.bytes = 0;
    recount(k, oi);
  }
}

void IncidentBook::recount(const StoryKey& key, OpenIncident& oi) {
  // The map's node (key, value and its links) and the expiry entry that points at it, beside what both hold.
  constexpr std::size_t kNodes = sizeof(Map::value_type) + 4 * sizeof(void*) + sizeof(decltype(expiry_)::value_type) +
                                 4 * sizeof(void*);
  bytes_ -= oi.bytes;
  oi.bytes = kNodes + 2 * heap_bytes(key.key) + heap_bytes(oi.incident);
  bytes_ += oi.bytes;
}

IncidentBook::Map::iterator IncidentBook::forget(Map::iterator it) {
  bytes_ -= it->second.bytes;
  return open_.erase(it);
}

void IncidentBook::keep_within_bound(const StoryKey& keep, Call& call) {
  if (bytes_ <= max_bytes_) return;
  // Resolved incidents are kept only so that their quiet period ends in order: nothing reads them any more.
  for (auto it = open_.begin(); bytes_ > max_bytes_ && it != open_.end();) {
    const bool resolved = it->second.incident.status == IncidentStatus::resolved && !it->second.hold.held;
    it = resolved && !(it->first == keep) ? forget(it) : std::next(it);
  }
  // Then firing ones, in the order their quiet periods end (an entry for an incident seen since is stale: skipped).
  for (auto e = expiry_.begin(); bytes_ > max_bytes_ && e != expiry_.end();) {
    auto it = open_.find(e->second);
    if (it == open_.end()) {
      e = expiry_.erase(e);
      continue;
    }
    OpenIncident& oi = it->second;
    if (oi.hold.held || it->first == keep || e->first != quiet_due(oi)) {
      ++e;
      continue;
    }
    e = expiry_.erase(e);
    resolve(oi, oi.incident.last_seen, "the open incidents reached their bound", call);
    ++stats_.incidents_resolved_early;
    forget(it);
  }
}

void IncidentBook::schedule(const StoryKey& key, const OpenIncident& oi) {
  expiry_.emplace(quiet_due(oi), key);
}

}  // namespace faultline::correlate
