// Per (rule, key) stories: a cursor over the rule's required steps, optional evidence beside it, a short memory of
// recent hits for out-of-order tolerance, and the open incident of each (rule, logical key) that repeats, early
// warnings, escalations and resolutions revise. Incidents waiting for late evidence (tolerance) or for a root cause
// (cascade hold) are held and released by line count or event time. Everything runs on event time.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>

#include "faultline/correlate.hpp"

namespace faultline {

namespace {

constexpr std::size_t kRingLines = 20;
constexpr std::size_t kContextText = 512;
constexpr std::size_t kHitsPerStep = 3;        // evidence lines kept per step: the first ones and the latest
constexpr std::size_t kRecentHits = 32;        // remembered for out-of-order tolerance
constexpr Duration kRootCauseWindow = std::chrono::minutes(2);
constexpr std::size_t kRecentIncidents = 512;
// Context lines older than this are no use as the lines before a decisive one; an idle stream's are freed, so a node
// that sees thousands of short-lived pods does not keep their last lines forever.
constexpr Duration kRingIdle = std::chrono::minutes(5);
// The same failure printed again within this time of the last completion, with no restart in between, is the same
// occurrence (a crash prints its error in the worker, the engine and the API server), not a repeat.
constexpr Duration kRepeatGap = std::chrono::seconds(60);

struct ContextLine {
  std::uint64_t line = 0;
  std::uint64_t offset = 0;
  Time time{};
  std::string text;
};

struct StreamState {
  StreamIdentity id;
  std::uint64_t generation = 0;  // grows with every new instance
  std::deque<ContextLine> ring;  // last lines before the current batch
  std::uint64_t last_line = 0;
};

struct RecentHit {
  std::uint32_t event = 0;
  std::uint32_t stream = 0;
  std::uint64_t line = 0;
  std::uint64_t offset = 0;
  Time time{};
  std::string text;
  Fields fields;
};

struct StepState {
  std::uint32_t hits = 0;
  std::deque<Time> times;  // for count + within
  std::vector<EvidenceLine> lines;
};

struct Story {
  std::uint32_t rule = 0;
  std::string key;
  std::uint32_t stream = 0;
  std::uint64_t generation = 0;
  std::size_t cursor = 0;  // index of the next required step
  std::vector<StepState> steps;
  Time progress_time{};    // when the last required step completed
  bool started = false;
  std::uint64_t seen_events = 0;
  Fields fields;
  std::vector<EvidenceLine> context;  // context lines of decisive hits
  std::deque<RecentHit> recent;
  std::string first_decisive;         // "instance@offset" of the first hit that counted
  Time first_decisive_time{};
  std::optional<Severity> raised;     // severity this story raised its incident at
  Time last_activity{};
};

struct Held {
  bool held = false;
  Time until_time{};
  std::uint64_t until_line = 0;
  std::uint32_t stream = 0;
  bool cascade = false;
};

struct OpenIncident {
  Incident incident;
  std::uint32_t rule = 0;
  Held hold;
  bool emitted = false;   // at least one revision went out
  std::uint32_t stream = 0;
  Time last_completion{};
  bool boundary = false;  // a reset or a new instance happened since the last completion
};

struct RecentIncident {
  std::string id;
  std::string rule;
  int priority = 0;
  bool cascade = false;
  Time first_seen{};
  std::string logical;
  std::string pod;   // namespace/pod when known
  std::string node;
  bool node_keyed = false;  // the rule correlates a whole node (kernel log)
};

Severity max_severity(Severity a, Severity b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

std::string cap_text(std::string_view text, std::size_t limit, bool* truncated = nullptr) {
  if (text.size() <= limit) return std::string(text);
  if (truncated) *truncated = true;
  return std::string(text.substr(0, limit));
}

}  // namespace

struct Correlator::Impl {
  std::shared_ptr<const CompiledRules> rules;
  CorrelatorOptions options;
  CorrelatorStats stats;
  std::vector<StreamState> streams;
  std::unordered_map<std::string, Story> stories;           // rule \0 key
  std::map<std::string, OpenIncident> open;                 // rule \0 key (ordered: deterministic release)
  std::multimap<Time, std::string> expiry;                  // when an open incident may go quiet → its key
  std::size_t held = 0;                                     // open incidents currently held
  Time ring_due = Time::max();  // no ring goes idle before this (a lower bound): advance() skips the sweep till then
  bool has_absence = false;                                 // some rule has an absence step
  std::deque<RecentIncident> recent;
  std::function<void(const std::string&)> trace;
  Time now{};
  bool log_time_seen = false;      // once lines carry their own time, only those move the clock
  Time log_now{};                  // the latest time the lines themselves gave (advance() does not move it)
  std::uint64_t current_line = 0;  // line of the hit being processed
  std::vector<Incident>* out = nullptr;
  const RecordBatch* batch = nullptr;

  const Rule& rule(std::uint32_t r) const { return rules->rule(r); }

  StreamState& stream(std::uint32_t index) {
    if (index >= streams.size()) streams.resize(index + 1);
    return streams[index];
  }

  void say(const std::string& text) {
    if (trace) trace(text);
  }



  std::string logical_of(const StreamState& s) const {
    return s.id.logical.empty() ? s.id.name : s.id.logical;
  }

  std::string key_for(const Rule& r, std::uint32_t stream_index, const Fields& fields) {
    const StreamState& s = stream(stream_index);
    std::string key;
    if (r.key.node) {
      std::string node(s.id.label(LabelKey::node));
      key += "node=" + (node.empty() ? std::string("local") : node);
    }
    if (r.key.stream) {
      if (!key.empty()) key += '|';
      key += logical_of(s);
    }
    for (const auto& f : r.key.fields) {
      const auto* v = find_field(fields, f);
      key += '|' + f + '=' + (v ? *v : std::string());
    }
    return key;
  }

  Story& story_for(std::uint32_t r, const std::string& key, std::uint32_t stream_index) {
    std::string full = std::to_string(r) + '\0' + key;
    auto it = stories.find(full);
    if (it == stories.end()) {
      if (stories.size() >= options.max_stories) shed_story();
      Story s;
      s.rule = r;
      s.key = key;
      s.stream = stream_index;
      s.generation = stream(stream_index).generation;
      s.steps.resize(rule(r).sequence.size());
      s.cursor = first_required(rule(r), 0);
      it = stories.emplace(std::move(full), std::move(s)).first;
    }
    return it->second;
  }

  void shed_story() {
    auto oldest = stories.begin();
    for (auto it = stories.begin(); it != stories.end(); ++it) {
      if (it->second.last_activity < oldest->second.last_activity) oldest = it;
    }
    if (oldest != stories.end()) {
      stories.erase(oldest);
      ++stats.stories_dropped;
    }
  }

  static std::size_t first_required(const Rule& r, std::size_t from) {
    while (from < r.sequence.size() && r.sequence[from].optional) ++from;
    return from;
  }

  static bool step_has(const Step& st, std::string_view event) {
    return std::find(st.events.begin(), st.events.end(), event) != st.events.end();
  }

  void reset_story(Story& s, const char* why) {
    const Rule& r = rule(s.rule);
    if (s.started) say("  " + r.id + " [" + s.key + "]: story reset (" + why + ")");
    std::uint32_t rule_index = s.rule;
    std::string key = s.key;
    std::uint32_t stream_index = s.stream;
    s = Story{};
    s.rule = rule_index;
    s.key = std::move(key);
    s.stream = stream_index;
    s.generation = stream(stream_index).generation;
    s.steps.resize(r.sequence.size());
    s.cursor = first_required(r, 0);
  }

  // Context lines before record `rec` of the batch (same stream), then from the stream's ring.
  void collect_context(std::uint32_t rec, std::size_t want, std::vector<EvidenceLine>& into) {
    if (want == 0) return;
    const RecordMeta& meta = (*batch)[rec];
    std::vector<EvidenceLine> found;
    for (std::size_t i = rec; i-- > 0 && found.size() < want;) {
      if (batch->records()[i].stream != meta.stream) continue;
      const RecordMeta& m = (*batch)[i];
      EvidenceLine e;
      e.stream = stream(m.stream).id.name;
      e.line = m.line;
      e.offset = m.offset;
      e.time = m.time;
      e.text = cap_text(batch->text(i), kContextText, &e.truncated);
      found.push_back(std::move(e));
    }
    const auto& ring = stream(meta.stream).ring;
    for (auto it = ring.rbegin(); it != ring.rend() && found.size() < want; ++it) {
      if (it->line >= meta.line) continue;
      EvidenceLine e;
      e.stream = stream(meta.stream).id.name;
      e.line = it->line;
      e.offset = it->offset;
      e.time = it->time;
      e.text = it->text;
      found.push_back(std::move(e));
    }
    into.insert(into.end(), std::make_move_iterator(found.rbegin()), std::make_move_iterator(found.rend()));
  }

  EvidenceLine evidence_of(const RecentHit& h, const EventPattern& ev) {
    EvidenceLine e;
    e.stream = stream(h.stream).id.name;
    e.line = h.line;
    e.offset = h.offset;
    e.time = h.time;
    e.event = ev.name;
    e.text = cap_text(h.text, kMaxEvidenceText, &e.truncated);
    return e;
  }

  void add_step_evidence(StepState& st, EvidenceLine line) {
    if (st.lines.size() < kHitsPerStep) {
      st.lines.push_back(std::move(line));
    } else {
      st.lines.back() = std::move(line);  // keep the first ones and the latest
    }
  }

  // ---- incidents ----------------------------------------------------------------------------------------------

  std::string open_key(const Story& s) const { return std::to_string(s.rule) + '\0' + s.key; }

  std::vector<EvidenceLine> story_evidence(const Story& s) const {
    std::vector<EvidenceLine> all = s.context;
    for (const auto& st : s.steps) all.insert(all.end(), st.lines.begin(), st.lines.end());
    std::sort(all.begin(), all.end(), [](const EvidenceLine& a, const EvidenceLine& b) {
      return a.stream != b.stream ? a.stream < b.stream : a.offset != b.offset ? a.offset < b.offset : a.line < b.line;
    });
    // One entry per line; a line that matched an event wins over the same line as context.
    std::vector<EvidenceLine> unique;
    for (auto& e : all) {
      if (!unique.empty() && unique.back().stream == e.stream && unique.back().line == e.line &&
          unique.back().offset == e.offset) {
        if (unique.back().event.empty()) unique.back() = e;
        continue;
      }
      unique.push_back(e);
    }
    if (unique.size() > kMaxEvidenceLines) {
      // Drop context lines from the front first, then the oldest lines.
      std::vector<EvidenceLine> kept;
      std::size_t excess = unique.size() - kMaxEvidenceLines;
      for (auto& e : unique) {
        if (excess > 0 && e.event.empty()) {
          --excess;
          continue;
        }
        kept.push_back(std::move(e));
      }
      if (kept.size() > kMaxEvidenceLines) kept.erase(kept.begin(), kept.begin() + static_cast<long>(kept.size() - kMaxEvidenceLines));
      unique = std::move(kept);
    }
    return unique;
  }

  void fill_texts(Incident& inc, const Rule& r) {
    inc.title = expand_template(r.title, inc.fields);
    inc.summary = expand_template(r.summary, inc.fields);
    inc.remediation = expand_template(r.remediation, inc.fields);
  }

  // Derived indexes of `open` and of the rules, rebuilt after a reload or a restore.
  void rebuild_indexes() {
    expiry.clear();
    held = 0;
    for (const auto& [k, oi] : open) {
      schedule(k, oi);
      if (oi.hold.held) ++held;
    }
    has_absence = false;
    for (const auto& r : rules->rule_set().rules) {
      for (const auto& st : r.sequence) has_absence = has_absence || st.absent_for.has_value();
    }
  }

  void schedule(const std::string& key, const OpenIncident& oi) {
    expiry.emplace(oi.incident.last_seen + rule(oi.rule).lifetime.quiet, key);
  }

  void emit(OpenIncident& oi) {
    if (oi.hold.held) return;
    oi.emitted = true;
    out->push_back(oi.incident);
    ++stats.incidents;
    if (trace) say("  → " + oi.incident.rule + " incident " + oi.incident.id + " revision " + std::to_string(oi.incident.revision) +
        " " + std::string(to_string(oi.incident.status)) + " " + std::string(to_string(oi.incident.severity)));
  }

  // What attribution needs to know of an incident: who, when, and where (stream, pod, node).
  RecentIncident describe(const OpenIncident& oi) {
    const Rule& r = rule(oi.rule);
    RecentIncident ri;
    ri.id = oi.incident.id;
    ri.rule = r.id;
    ri.priority = r.priority;
    ri.cascade = r.cascade.enabled;
    ri.first_seen = oi.incident.first_seen;
    const StreamState& s = stream(oi.stream);
    ri.logical = logical_of(s);
    std::string ns(s.id.label(LabelKey::namespace_)), pod(s.id.label(LabelKey::pod));
    if (!pod.empty()) ri.pod = ns + "/" + pod;
    ri.node = s.id.label(LabelKey::node);
    ri.node_keyed = r.key.node;
    return ri;
  }

  void remember(const OpenIncident& oi) {
    recent.push_back(describe(oi));
    while (recent.size() > kRecentIncidents) recent.pop_front();
  }

  // Same stream, same pod, or — when either side correlates a whole node (an Xid in the kernel log) — same node.
  // Two unrelated pods on one node never explain each other.
  static bool related(const RecentIncident& a, const RecentIncident& b) {
    if (!a.logical.empty() && a.logical == b.logical) return true;
    if (!a.pod.empty() && a.pod == b.pod) return true;
    if ((a.node_keyed || b.node_keyed) && !a.node.empty() && a.node == b.node) return true;
    return false;
  }

  // Finds the incident that explains `oi`, if any.
  void attribute(OpenIncident& oi) {
    if (oi.incident.caused_by) return;
    const Rule& r = rule(oi.rule);
    const RecentIncident self = describe(oi);
    const RecentIncident* best = nullptr;
    Time first = oi.incident.first_seen;
    for (const auto& c : recent) {
      if (c.id == oi.incident.id || c.cascade) continue;
      if (!related(self, c)) continue;
      if (r.cascade.enabled) {
        if (c.first_seen < first - r.cascade.window || c.first_seen > first + r.cascade.hold) continue;
      } else {
        if (c.priority <= r.priority) continue;
        // A symptom is often printed just before the root cause it belongs to: accept one up to the rule's
        // tolerance after it (the incident was held that long).
        if (c.first_seen < first - kRootCauseWindow || c.first_seen > first + r.tolerance.time) continue;
      }
      if (!best || c.priority > best->priority || (c.priority == best->priority && c.first_seen < best->first_seen)) {
        best = &c;
      }
    }
    if (best) {
      oi.incident.caused_by = best->id;
      oi.incident.caused_by_rule = best->rule;
      if (trace) say("  " + r.id + ": caused by " + best->rule + " (" + best->id + ")");
    }
  }

  void release(OpenIncident& oi, const char* why) {
    if (!oi.hold.held) return;
    oi.hold.held = false;
    if (held > 0) --held;
    if (trace) say("  " + oi.incident.rule + ": released (" + why + ")");
    attribute(oi);
    emit(oi);
  }

  // Raise or revise the open incident of story `s` at `severity`; `completion` counts a full fingerprint.
  void raise(Story& s, Severity severity, bool completion, Time at, std::chrono::steady_clock::time_point read_at) {
    const Rule& r = rule(s.rule);
    std::string key = open_key(s);
    auto it = open.find(key);
    if (it != open.end() && it->second.incident.status == IncidentStatus::firing) {
      OpenIncident& oi = it->second;
      bool escalation = s.raised.has_value();  // this story already raised it: escalate, do not count twice
      if (completion && !escalation) {
        if (!oi.boundary && at - oi.last_completion < kRepeatGap && severity <= oi.incident.severity) {
          if (trace) say("  " + r.id + ": same occurrence printed again");
          oi.incident.last_seen = std::max(oi.incident.last_seen, at);
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
      if (escalation || oi.incident.evidence.empty()) oi.incident.evidence = story_evidence(s);
      fill_texts(oi.incident, r);
      oi.incident.read_at = read_at;
      if (oi.emitted) ++oi.incident.revision;
      s.raised = max_severity(s.raised.value_or(severity), severity);
      emit(oi);
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
    inc.evidence = story_evidence(s);
    const StreamState& st = stream(s.stream);
    inc.stream = r.key.stream || r.key.fields.size() ? st.id.name : s.key;
    if (r.key.node && !r.key.stream) inc.stream = s.key;
    inc.stream_labels = st.id.labels;
    inc.references = r.references;
    inc.labels = r.labels;
    inc.id = make_incident_id(r.id, s.key, s.first_decisive);
    fill_texts(inc, r);
    inc.read_at = read_at;
    s.raised = severity;
    // Hold for missing optional evidence (tolerance) or for a root cause printed later (cascade).
    bool missing_optional = false;
    std::size_t last_required = 0;
    for (std::size_t i = 0; i < r.sequence.size(); ++i) {
      if (!r.sequence[i].optional) last_required = i;
    }
    for (std::size_t i = 0; i < last_required; ++i) {
      if (r.sequence[i].optional && s.steps[i].hits == 0) missing_optional = true;
    }
    bool tolerant = r.tolerance.lines > 0 || r.tolerance.time.count() > 0;
    if (tolerant && missing_optional) {
      oi.hold.held = true;
      oi.hold.until_time = r.tolerance.time.count() > 0 ? at + r.tolerance.time : Time::max();
      oi.hold.until_line = r.tolerance.lines > 0 ? current_line + r.tolerance.lines
                                                 : std::numeric_limits<std::uint64_t>::max();
      oi.hold.stream = s.stream;
      if (trace) say("  " + r.id + ": holding for late evidence");
    }
    if (r.cascade.enabled) {
      oi.hold.held = true;
      oi.hold.cascade = true;
      oi.hold.until_time = std::max(oi.hold.until_time, at + r.cascade.hold);
      oi.hold.until_line = std::numeric_limits<std::uint64_t>::max();
      oi.hold.stream = s.stream;
    }
    if (oi.hold.held) ++held;
    auto [pos, inserted] = open.insert_or_assign(key, std::move(oi));
    OpenIncident& stored = pos->second;
    schedule(key, stored);
    remember(stored);
    if (!stored.hold.held) {
      attribute(stored);
      emit(stored);
    }
    // A root cause arriving now may explain cascade incidents held on related streams.
    if (!r.cascade.enabled) {
      for (auto& [k, other] : open) {
        if (other.hold.held && other.hold.cascade && !other.incident.caused_by) attribute(other);
      }
    }
  }

  void resolve(OpenIncident& oi, Time at, const char* why) {
    if (oi.incident.status == IncidentStatus::resolved) return;
    release(oi, "resolving");
    oi.incident.status = IncidentStatus::resolved;
    oi.incident.last_seen = std::max(oi.incident.last_seen, at);
    ++oi.incident.revision;
    if (trace) say("  " + oi.incident.rule + ": resolved (" + why + ")");
    emit(oi);
  }

  // ---- hits ---------------------------------------------------------------------------------------------------

  // Applies one hit to story `s`. Returns true when the hit counted for a required step.
  bool apply(Story& s, const RecentHit& h, std::uint32_t rec_or_max, std::chrono::steady_clock::time_point read_at) {
    const Rule& r = rule(s.rule);
    const EventPattern& ev = r.events[h.event];
    bool counted = false;
    // Optional steps: evidence at any point of the story.
    for (std::size_t i = 0; i < r.sequence.size(); ++i) {
      const Step& st = r.sequence[i];
      if (!st.optional || !step_has(st, ev.name)) continue;
      if (!after_ok(s, r, st)) continue;
      StepState& ss = s.steps[i];
      ++ss.hits;
      add_step_evidence(ss, evidence_of(h, ev));
      for (const auto& [k, v] : h.fields) set_field(s.fields, k, v);
      if (st.severity && s.first_decisive.empty()) {
        s.first_decisive = position_of(h);
        s.first_decisive_time = h.time;
      }
      if (trace) say("  " + r.id + " [" + s.key + "]: optional step " + std::to_string(i + 1) + " (" + ev.name + ") seen");
      if (st.severity && ss.hits >= st.count && s.cursor > i && !s.raised) {
        raise(s, *st.severity, false, h.time, read_at);
      }
      // A held incident gains its late evidence.
      auto it = open.find(open_key(s));
      if (it != open.end() && it->second.hold.held && !it->second.hold.cascade) {
        OpenIncident& oi = it->second;
        for (const auto& [k, v] : s.fields) set_field(oi.incident.fields, k, v);
        oi.incident.evidence = merge_evidence(oi.incident.evidence, ss.lines.back());
        fill_texts(oi.incident, r);
        if (all_optional_seen(s, r)) release(oi, "evidence complete");
      }
    }
    if (s.cursor >= r.sequence.size()) return counted;
    const Step& cur = r.sequence[s.cursor];
    if (cur.absent_for) {
      if (step_has(cur, ev.name)) {
        if (trace) say("  " + r.id + " [" + s.key + "]: awaited event " + ev.name + " arrived");
        reset_story(s, "absence broken");
      }
      return counted;
    }
    if (!step_has(cur, ev.name) || !after_ok(s, r, cur)) return counted;
    if (cur.within && s.cursor != first_required(r, 0) && h.time - s.progress_time > *cur.within) {
      reset_story(s, "window passed");
      return apply(s, h, rec_or_max, read_at);
    }
    StepState& ss = s.steps[s.cursor];
    ss.times.push_back(h.time);
    if (cur.within && cur.count > 1) {
      while (!ss.times.empty() && h.time - ss.times.front() > *cur.within) ss.times.pop_front();
    }
    while (ss.times.size() > cur.count) ss.times.pop_front();
    ++ss.hits;
    if (s.first_decisive.empty()) {
      s.first_decisive = position_of(h);
      s.first_decisive_time = h.time;
    }
    add_step_evidence(ss, evidence_of(h, ev));
    if (rec_or_max != UINT32_MAX && ss.lines.size() <= 1) collect_context(rec_or_max, r.context_lines, s.context);
    for (const auto& [k, v] : h.fields) set_field(s.fields, k, v);
    counted = true;
    if (ss.times.size() < cur.count) {
      if (trace) say("  " + r.id + " [" + s.key + "]: step " + std::to_string(s.cursor + 1) + " (" + ev.name + ") " +
          std::to_string(ss.times.size()) + "/" + std::to_string(cur.count));
      return counted;
    }
    complete_step(s, h.time, read_at);
    return counted;
  }

  std::string position_of(const RecentHit& h) {
    return stream(h.stream).id.instance + "@" + std::to_string(h.offset) + ":" + std::to_string(h.line);
  }

  static bool after_ok(const Story& s, const Rule& r, const Step& st) {
    for (const auto& name : st.after) {
      int idx = r.event_index(name);
      if (idx < 0 || !(s.seen_events & (1ull << (idx & 63)))) return false;
    }
    return true;
  }

  bool all_optional_seen(const Story& s, const Rule& r) const {
    std::size_t last_required = 0;
    for (std::size_t i = 0; i < r.sequence.size(); ++i) {
      if (!r.sequence[i].optional) last_required = i;
    }
    for (std::size_t i = 0; i < last_required; ++i) {
      if (r.sequence[i].optional && s.steps[i].hits == 0) return false;
    }
    return true;
  }

  static std::vector<EvidenceLine> merge_evidence(std::vector<EvidenceLine> ev, const EvidenceLine& add) {
    for (const auto& e : ev) {
      if (e.stream == add.stream && e.line == add.line && e.offset == add.offset) return ev;
    }
    ev.push_back(add);
    std::sort(ev.begin(), ev.end(), [](const EvidenceLine& a, const EvidenceLine& b) {
      return a.stream != b.stream ? a.stream < b.stream : a.offset != b.offset ? a.offset < b.offset : a.line < b.line;
    });
    if (ev.size() > kMaxEvidenceLines) ev.erase(ev.begin());
    return ev;
  }

  void complete_step(Story& s, Time at, std::chrono::steady_clock::time_point read_at) {
    const Rule& r = rule(s.rule);
    const Step& done = r.sequence[s.cursor];
    if (trace) say("  " + r.id + " [" + s.key + "]: step " + std::to_string(s.cursor + 1) + " complete");
    std::size_t done_index = s.cursor;
    s.progress_time = at;
    s.cursor = first_required(r, s.cursor + 1);
    if (s.cursor >= r.sequence.size()) {
      if (trace) say("  " + r.id + " [" + s.key + "]: sequence complete");
      raise(s, r.severity, true, at, read_at);
      reset_story(s, "fired");
      return;
    }
    if (done.severity) raise(s, *done.severity, false, at, read_at);
    // Severity of optional steps between the completed one and the new cursor, already seen.
    for (std::size_t i = done_index + 1; i < s.cursor; ++i) {
      const Step& st = r.sequence[i];
      if (st.severity && s.steps[i].hits >= st.count) raise(s, *st.severity, false, at, read_at);
    }
    const Step& next = r.sequence[s.cursor];
    if (next.absent_for) {
      if (trace) say("  " + r.id + " [" + s.key + "]: waiting " + format_duration(*next.absent_for) + " for absence");
      return;
    }
    // Out-of-order tolerance: a hit of the next step that arrived a little earlier counts now.
    if (r.tolerance.lines == 0 && r.tolerance.time.count() == 0) return;
    for (auto it = s.recent.begin(); it != s.recent.end(); ++it) {
      const EventPattern& ev = r.events[it->event];
      if (!step_has(next, ev.name)) continue;
      Duration dt = at >= it->time ? at - it->time : it->time - at;
      bool close_time = r.tolerance.time.count() == 0 || dt <= r.tolerance.time;
      bool close_lines = r.tolerance.lines == 0 || current_line - std::min(current_line, it->line) <= r.tolerance.lines;
      if (close_time && close_lines) {
        RecentHit h = *it;
        s.recent.erase(it);
        if (trace) say("  " + r.id + " [" + s.key + "]: earlier hit of " + ev.name + " at line " + std::to_string(h.line) +
            " taken as in order (tolerance)");
        apply(s, h, UINT32_MAX, read_at);
        return;
      }
    }
  }

  void on_hit(const Hit& hit, std::chrono::steady_clock::time_point read_at) {
    const RecordMeta& meta = (*batch)[hit.record];
    const Rule& r = rule(hit.event.rule);
    const EventPattern& ev = r.events[hit.event.event];
    ++stats.hits;
    std::string key = key_for(r, meta.stream, hit.fields);
    if (trace) say("line " + std::to_string(meta.line) + " @" + format_time(meta.time) + ": " + r.id + "/" + ev.name + " hit");

    // Deadlines that this line passes are settled first, so batching never changes the outcome.
    settle_before(meta.stream, meta.line, meta.time);

    Story& s = story_for(hit.event.rule, key, meta.stream);
    if (s.generation != stream(meta.stream).generation && r.key.stream) reset_story(s, "new instance");
    s.stream = meta.stream;
    s.last_activity = meta.time;

    std::string okey = open_key(s);
    if (auto it = open.find(okey); it != open.end() && it->second.incident.status == IncidentStatus::firing) {
      if (std::find(r.lifetime.resolve_on.begin(), r.lifetime.resolve_on.end(), ev.name) != r.lifetime.resolve_on.end()) {
        resolve(it->second, meta.time, ev.name.c_str());
      }
    }
    if (std::find(r.reset_on.begin(), r.reset_on.end(), ev.name) != r.reset_on.end()) {
      reset_story(s, ev.name.c_str());
      if (auto it = open.find(okey); it != open.end()) it->second.boundary = true;
    }

    s.started = true;
    s.seen_events |= 1ull << (hit.event.event & 63);
    RecentHit h;
    h.event = hit.event.event;
    h.stream = meta.stream;
    h.line = meta.line;
    h.offset = meta.offset;
    h.time = meta.time;
    h.text = std::string(batch->text(hit.record));
    h.fields = hit.fields;
    current_line = meta.line;
    RecentHit copy = h;
    bool counted = apply(s, copy, hit.record, read_at);
    if (!counted) {
      // Remember it: it may be the early half of an out-of-order pair.
      if (r.tolerance.lines > 0 || r.tolerance.time.count() > 0) {
        s.recent.push_back(std::move(h));
        while (s.recent.size() > kRecentHits) s.recent.pop_front();
      }
    }
  }

  // Releases held incidents whose line or time deadline this point passes; resolves quiet incidents.
  void settle_before(std::uint32_t stream_index, std::uint64_t line, Time t) {
    for (auto it = open.begin(); held > 0 && it != open.end(); ++it) {
      OpenIncident& oi = it->second;
      if (oi.hold.held && !oi.hold.cascade && oi.hold.stream == stream_index && line > oi.hold.until_line) {
        release(oi, "tolerance lines passed");
      }
      if (oi.hold.held && t > oi.hold.until_time) release(oi, "tolerance time passed");
    }
    expire(t);
  }

  void expire(Time t) {
    while (!expiry.empty() && expiry.begin()->first <= t) {
      std::string key = expiry.begin()->second;
      expiry.erase(expiry.begin());
      auto it = open.find(key);
      if (it == open.end()) continue;
      OpenIncident& oi = it->second;
      if (oi.incident.status == IncidentStatus::firing) {
        Time due = oi.incident.last_seen + rule(oi.rule).lifetime.quiet;
        if (due > t) continue;  // it was seen again; a later entry stands for it
        resolve(oi, due, "quiet");
      }
      if (oi.hold.held && held > 0) --held;
      open.erase(it);
    }
  }

  void check_absences(Time t, std::chrono::steady_clock::time_point read_at) {
    if (!has_absence) return;
    for (auto& [k, s] : stories) {
      const Rule& r = rule(s.rule);
      while (s.cursor < r.sequence.size() && r.sequence[s.cursor].absent_for &&
             t - s.progress_time >= *r.sequence[s.cursor].absent_for) {
        Time at = s.progress_time + *r.sequence[s.cursor].absent_for;
        if (trace) say("  " + r.id + " [" + s.key + "]: absence confirmed");
        complete_step(s, at, read_at);
      }
    }
  }

  // The last lines of each stream in this batch, kept for context in later batches; they move the clock too.
  template <typename MoveClock>
  void update_rings(MoveClock&& move_clock) {
    std::vector<std::vector<std::size_t>> newest;  // per stream: record indexes, newest first
    for (std::size_t i = batch->size(); i-- > 0;) {
      const RecordMeta& m = batch->records()[i];  // stream and line only: time and level may be deferred
      if (m.stream >= newest.size()) newest.resize(m.stream + 1);
      auto& v = newest[m.stream];
      if (v.empty()) stream(m.stream).last_line = std::max(stream(m.stream).last_line, m.line);
      if (v.size() < kRingLines) v.push_back(i);
    }
    for (std::size_t si = 0; si < newest.size(); ++si) {
      auto& ring = stream(static_cast<std::uint32_t>(si)).ring;
      for (auto it = newest[si].rbegin(); it != newest[si].rend(); ++it) {
        const RecordMeta& m = (*batch)[*it];
        move_clock(m);
        ring.push_back(ContextLine{m.line, m.offset, m.time, cap_text(batch->text(*it), kContextText)});
        ring_due = std::min(ring_due, ring.back().time + kRingIdle);
      }
      while (ring.size() > kRingLines) ring.pop_front();
    }
  }
};

Correlator::Correlator(std::shared_ptr<const CompiledRules> rules, CorrelatorOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->rules = std::move(rules);
  impl_->options = options;
  impl_->rebuild_indexes();
}
Correlator::~Correlator() = default;
Correlator::Correlator(Correlator&&) noexcept = default;
Correlator& Correlator::operator=(Correlator&&) noexcept = default;

void Correlator::set_stream(std::uint32_t index, StreamIdentity identity) { impl_->stream(index).id = std::move(identity); }

void Correlator::new_instance(std::uint32_t index, std::string instance) {
  StreamState& s = impl_->stream(index);
  s.id.instance = std::move(instance);
  ++s.generation;
  s.ring.clear();
  s.last_line = 0;
  for (auto& [k, story] : impl_->stories) {
    if (story.stream == index && impl_->rule(story.rule).key.stream) impl_->reset_story(story, "new instance");
  }
  for (auto& [k, oi] : impl_->open) {
    if (oi.stream == index) oi.boundary = true;
  }
}

void Correlator::process(const RecordBatch& batch, const std::vector<Hit>& hits, std::vector<Incident>& out) {
  Impl& m = *impl_;
  m.out = &out;
  m.batch = &batch;
  auto read_at = std::chrono::steady_clock::now();
  auto move_clock = [&m](const RecordMeta& rec) {
    if (rec.time_from_log) {
      // The first timed line replaces a clock that only knew the time of reading.
      m.now = m.log_time_seen ? std::max(m.now, rec.time) : rec.time;
      m.log_now = m.log_time_seen ? std::max(m.log_now, rec.time) : rec.time;
      m.log_time_seen = true;
    } else if (!m.log_time_seen) {
      m.now = std::max(m.now, rec.time);
      m.log_now = std::max(m.log_now, rec.time);
    }
  };
  // The clock moves with the lines that hit and with each stream's last lines in the batch (for a log whose times
  // only go forward, the latest of the batch). Lines between them are not read for their time.
  for (const auto& hit : hits) {
    move_clock(batch[hit.record]);
    m.on_hit(hit, read_at);
  }
  if (!batch.empty()) {
    m.update_rings(move_clock);
    // Held incidents whose line tolerance the batch has passed.
    for (auto it = m.open.begin(); m.held > 0 && it != m.open.end(); ++it) {
      OpenIncident& oi = it->second;
      if (oi.hold.held && !oi.hold.cascade && m.stream(oi.hold.stream).last_line > oi.hold.until_line) {
        m.release(oi, "tolerance lines passed");
      }
    }
  }
  m.batch = nullptr;
}

void Correlator::advance(Time now, std::vector<Incident>& out) {
  Impl& m = *impl_;
  m.out = &out;
  m.now = std::max(m.now, now);
  auto read_at = std::chrono::steady_clock::now();
  m.batch = nullptr;
  m.check_absences(m.now, read_at);
  if (m.now > m.ring_due) {  // else no ring can be idle yet: the sweep would touch every stream for nothing
    m.ring_due = Time::max();
    for (auto& st : m.streams) {
      if (st.ring.empty()) continue;
      if (st.ring.back().time + kRingIdle < m.now)
        std::deque<ContextLine>().swap(st.ring);
      else
        m.ring_due = std::min(m.ring_due, st.ring.back().time + kRingIdle);
    }
  }
  for (auto it = m.open.begin(); m.held > 0 && it != m.open.end(); ++it) {
    if (it->second.hold.held && m.now > it->second.hold.until_time) m.release(it->second, "hold time passed");
  }
  m.expire(m.now);
}

void Correlator::finish(std::vector<Incident>& out) {
  Impl& m = *impl_;
  m.out = &out;
  for (auto& [k, oi] : m.open) m.release(oi, "end of input");
}

void Correlator::replace_rules(std::shared_ptr<const CompiledRules> rules) {
  Impl& m = *impl_;
  // Map old rule indexes to new ones for rules whose definition did not change.
  std::map<std::string, std::uint32_t> new_index;
  for (std::uint32_t i = 0; i < rules->rule_set().rules.size(); ++i) new_index[rules->rule(i).id] = i;
  auto survives = [&](std::uint32_t old_rule) -> std::optional<std::uint32_t> {
    const Rule& r = m.rules->rule(old_rule);
    auto it = new_index.find(r.id);
    if (it == new_index.end()) return std::nullopt;
    if (rules->rule(it->second).content_hash != r.content_hash) return std::nullopt;
    return it->second;
  };
  std::unordered_map<std::string, Story> stories;
  for (auto& [k, s] : m.stories) {
    if (auto n = survives(s.rule)) {
      s.rule = *n;
      stories.emplace(std::to_string(*n) + '\0' + s.key, std::move(s));
    }
  }
  std::map<std::string, OpenIncident> open;
  for (auto& [k, oi] : m.open) {
    // Open incidents survive by rule id even if the rule changed (they are facts already reported).
    auto it = new_index.find(oi.incident.rule);
    if (it == new_index.end()) continue;
    std::string key = k.substr(k.find('\0'));
    oi.rule = it->second;
    open.emplace(std::to_string(it->second) + key, std::move(oi));
  }
  m.stories = std::move(stories);
  m.open = std::move(open);
  m.rules = std::move(rules);
  m.rebuild_indexes();
}

void Correlator::set_trace(std::function<void(const std::string&)> trace) { impl_->trace = std::move(trace); }

std::vector<Incident> Correlator::open_incidents() const {
  std::vector<Incident> out;
  for (const auto& [k, oi] : impl_->open) out.push_back(oi.incident);
  return out;
}

Time Correlator::now() const { return impl_->now; }
Time Correlator::log_now() const { return impl_->log_now; }
const CorrelatorStats& Correlator::stats() const { return impl_->stats; }

// ---- checkpoint state ------------------------------------------------------------------------------------------

namespace {
using nlohmann::json;
constexpr int kStateVersion = 1;

json evidence_json(const std::vector<EvidenceLine>& lines) {
  json a = json::array();
  for (const auto& e : lines) {
    a.push_back({{"s", e.stream}, {"l", e.line}, {"o", e.offset}, {"t", e.time.time_since_epoch().count()},
                 {"e", e.event}, {"x", sanitize_utf8(e.text)}, {"tr", e.truncated}});
  }
  return a;
}
std::vector<EvidenceLine> evidence_from(const json& a) {
  std::vector<EvidenceLine> out;
  for (const auto& j : a) {
    EvidenceLine e;
    e.stream = j.at("s").get<std::string>();
    e.line = j.at("l").get<std::uint64_t>();
    e.offset = j.at("o").get<std::uint64_t>();
    e.time = Time(Duration(j.at("t").get<std::int64_t>()));
    e.event = j.at("e").get<std::string>();
    e.text = j.at("x").get<std::string>();
    e.truncated = j.value("tr", false);
    out.push_back(std::move(e));
  }
  return out;
}
json fields_json(const Fields& f) {
  json a = json::array();
  for (const auto& [k, v] : f) a.push_back({sanitize_utf8(k), sanitize_utf8(v)});
  return a;
}
Fields fields_from(const json& a) {
  Fields f;
  for (const auto& p : a) f.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
  return f;
}
}  // namespace

std::string Correlator::save_state() const {
  const Impl& m = *impl_;
  json j;
  j["version"] = kStateVersion;
  j["now"] = m.now.time_since_epoch().count();
  json stories = json::array();
  for (const auto& [k, s] : m.stories) {
    if (!s.started) continue;
    const Rule& r = m.rule(s.rule);
    json steps = json::array();
    for (const auto& st : s.steps) {
      json times = json::array();
      for (auto t : st.times) times.push_back(t.time_since_epoch().count());
      steps.push_back({{"hits", st.hits}, {"times", times}, {"lines", evidence_json(st.lines)}});
    }
    stories.push_back({{"rule", r.id},
                       {"hash", r.content_hash},
                       {"key", s.key},
                       {"stream_name", m.streams.size() > s.stream ? m.streams[s.stream].id.name : ""},
                       {"cursor", s.cursor},
                       {"steps", steps},
                       {"progress", s.progress_time.time_since_epoch().count()},
                       {"seen", s.seen_events},
                       {"fields", fields_json(s.fields)},
                       {"context", evidence_json(s.context)},
                       {"first", s.first_decisive},
                       {"first_t", s.first_decisive_time.time_since_epoch().count()},
                       {"raised", s.raised ? static_cast<int>(*s.raised) : -1},
                       {"activity", s.last_activity.time_since_epoch().count()}});
  }
  j["stories"] = std::move(stories);
  json open = json::array();
  for (const auto& [k, oi] : m.open) {
    open.push_back({{"key", k.substr(k.find('\0') + 1)},
                    {"incident", json::parse(to_json(oi.incident))},
                    {"emitted", oi.emitted},
                    {"held", oi.hold.held},
                    {"until", oi.hold.until_time.time_since_epoch().count()},
                    {"stream_name", m.streams.size() > oi.stream ? m.streams[oi.stream].id.name : ""}});
  }
  j["open"] = std::move(open);
  return j.dump();
}

bool Correlator::load_state(std::string_view text, std::string* error) {
  Impl& m = *impl_;
  try {
    json j = json::parse(text);
    if (j.at("version").get<int>() > kStateVersion) {
      if (error) *error = "state version " + std::to_string(j.at("version").get<int>()) + " is newer than this build";
      return false;
    }
    auto stream_by_name = [&](const std::string& name) -> std::uint32_t {
      for (std::uint32_t i = 0; i < m.streams.size(); ++i) {
        if (m.streams[i].id.name == name) return i;
      }
      m.streams.emplace_back();
      m.streams.back().id.name = name;
      return static_cast<std::uint32_t>(m.streams.size() - 1);
    };
    m.now = Time(Duration(j.value("now", std::int64_t{0})));
    const auto& set = m.rules->rule_set();
    for (const auto& sj : j.value("stories", json::array())) {
      const Rule* r = set.find(sj.at("rule").get<std::string>());
      if (!r || r->content_hash != sj.at("hash").get<std::string>()) continue;  // the rule changed: start over
      auto rule_index = static_cast<std::uint32_t>(r - set.rules.data());
      Story s;
      s.rule = rule_index;
      s.key = sj.at("key").get<std::string>();
      s.stream = stream_by_name(sj.value("stream_name", ""));
      s.generation = m.streams[s.stream].generation;
      s.cursor = sj.at("cursor").get<std::size_t>();
      s.steps.resize(r->sequence.size());
      const auto& steps = sj.at("steps");
      for (std::size_t i = 0; i < s.steps.size() && i < steps.size(); ++i) {
        s.steps[i].hits = steps[i].at("hits").get<std::uint32_t>();
        for (const auto& t : steps[i].at("times")) s.steps[i].times.push_back(Time(Duration(t.get<std::int64_t>())));
        s.steps[i].lines = evidence_from(steps[i].at("lines"));
      }
      s.progress_time = Time(Duration(sj.at("progress").get<std::int64_t>()));
      s.seen_events = sj.at("seen").get<std::uint64_t>();
      s.fields = fields_from(sj.at("fields"));
      s.context = evidence_from(sj.at("context"));
      s.first_decisive = sj.at("first").get<std::string>();
      s.first_decisive_time = Time(Duration(sj.value("first_t", std::int64_t{0})));
      int raised = sj.at("raised").get<int>();
      if (raised >= 0) s.raised = static_cast<Severity>(raised);
      s.last_activity = Time(Duration(sj.at("activity").get<std::int64_t>()));
      s.started = true;
      m.stories[std::to_string(rule_index) + '\0' + s.key] = std::move(s);
    }
    for (const auto& oj : j.value("open", json::array())) {
      auto inc = incident_from_json(oj.at("incident").dump());
      if (!inc) continue;
      const Rule* r = set.find(inc->rule);
      if (!r) continue;
      auto rule_index = static_cast<std::uint32_t>(r - set.rules.data());
      OpenIncident oi;
      oi.incident = std::move(*inc);
      oi.rule = rule_index;
      oi.emitted = oj.value("emitted", true);
      oi.hold.held = oj.value("held", false);
      oi.hold.until_time = Time(Duration(oj.value("until", std::int64_t{0})));
      oi.stream = stream_by_name(oj.value("stream_name", ""));
      oi.hold.stream = oi.stream;
      m.open[std::to_string(rule_index) + '\0' + oj.at("key").get<std::string>()] = std::move(oi);
    }
    m.rebuild_indexes();
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

}  // namespace faultline
